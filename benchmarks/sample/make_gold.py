"""Write gold.csv for the sample benchmark from the question list below.

Why a script: gold labels are article IDs, and IDs are assigned by ``grace kb build``.
Each question names the heading(s) of the article(s) that answer it, so when the
builder changes how it numbers articles the labels can be re-resolved instead of
re-annotated by hand:

    grace kb build benchmarks/sample/handbook --out /tmp/sample-kb
    python benchmarks/sample/make_gold.py /tmp/sample-kb

It fails loudly if a heading is missing or matches more than one article.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

R = "REFUSE"
# (question, expected answer, answering heading(s) joined by " | " or R, category, notes)
Q = [
("how many vacation days do I get? I'm in the Toronto office and started two years ago",
 "20 working days a year (Toronto staff get 20 days in years 1-4, rising to 25 from the fifth work anniversary).", "Annual paid time off (PTO)", "leave", "direct; Toronto vs Lisbon entitlement differ"),
("I still have 8 days of holiday left and it's already December. Do I lose them?",
 "Up to 5 unused days carry over and must be used by 31 March; the other 3 are forfeited on 31 December (unless an exception such as long sick/parental leave applies).", "Carrying over unused annual leave", "leave", "direct"),
("My little boy has a fever and daycare won't take him tomorrow. Do I have to use one of my sick days to stay home with him?",
 "No. Use family-care leave: 5 paid days a year, separate from your 10 sick days; log it in Petal as \"Family care\".", "Family-care leave (looking after a sick child or dependant)", "leave", "near-duplicate: sick leave 'Sick leave (your own illness)' is only for your own illness"),
("I've had the flu since Monday and it's Thursday now. do I need a doctor's note?",
 "Yes. You can self-certify up to 3 consecutive calendar days; from the fourth consecutive day you need a medical certificate.", "Sick leave (your own illness)", "leave", "direct; requires counting days"),
("is carnival a day off for us in lisbon?",
 "Yes. Carnival Tuesday is a Larkspur company day off for Lisbon staff (not a legal holiday in Portugal).", "Public holidays: Lisbon office", "holidays", "near-duplicate: Toronto holidays 'Public holidays: Toronto office'"),
("Do we get Remembrance Day off in the Toronto office?",
 "No. The Toronto office does not close on 11 November and it is not a paid holiday.", "Public holidays: Toronto office", "holidays", "near-duplicate: Lisbon holidays 'Public holidays: Lisbon office'"),
("I'm fully remote and live in Vancouver. Which public holidays do I get, the Toronto ones?",
 "Not the Toronto list: you get British Columbia's statutory holidays plus any of the three Toronto company days (Easter Monday, Civic Holiday, 30 September) that are not already holidays in BC.", "Public holidays for remote employees, and working on a holiday", "holidays", "near-duplicate: Toronto holidays 'Public holidays: Toronto office'"),
("My grandmother passed away last week. How much paid time off can I take for it?",
 "3 paid working days for a grandparent (plus up to 2 extra days if the funeral is abroad), usable within 3 months of the death.", "Bereavement leave", "leave", "near-duplicate: compassionate leave 'Compassionate leave'"),
("My dad was just diagnosed with terminal cancer and I want to spend some time with him. What kind of leave can I get?",
 "Compassionate leave: up to 10 paid working days in a rolling 12 months, approved by your HR business partner; in Canada statutory compassionate care leave of up to 28 weeks (unpaid by Larkspur) may also apply.", "Compassionate leave", "leave", "near-duplicate: 'Bereavement leave' is for a death; 'Family-care leave (looking after a sick child or dependant)' for short illness"),
("Does my manager need to approve compassionate leave? I'd rather not share all the details with her",
 "No, your HR business partner approves compassionate leave so details stay confidential; your manager is only told the dates.", "Compassionate leave", "leave", "direct"),
("My partner is due in March. How much paid leave do I get as the non-birthing parent?",
 "8 weeks at 100% of base salary, in up to two blocks within 12 months of the birth, if you have 6 months of service by the due date; submit form PL-1 at least 8 weeks before.", "Parental leave", "leave", "direct"),
("got a jury summons in the mail today, will I still get paid while I'm at court?",
 "Yes, full salary for up to 15 working days a year. Forward the summons to people@larkspur.example within 5 working days and log the days as \"Civic duty\".", "Jury duty and court witness leave", "leave", "direct"),
("I've been at Larkspur for 6 years and want to take three months off to travel South America. Is any of that paid?",
 "Yes, a sabbatical (after 5 years' service) can last up to 12 weeks; the first 4 weeks are paid, the rest unpaid. Apply with form SB-2 at least 4 months ahead.", "Sabbatical", "leave", "near-duplicate: unpaid leave 'Unpaid leave'"),
("I need about 6 weeks off without pay to sort out a family situation abroad. Who has to approve that?",
 "Unpaid leave longer than 30 days needs approval from the VP People (manager and HR can approve up to 30 days).", "Unpaid leave", "leave", "near-duplicate: 'Sabbatical'"),
("how long do I have to submit expenses?",
 "Within 60 days of paying; claims older than 90 days are rejected unless the CFO approves an exception.", "Submitting an expense claim", "expenses", "direct, short"),
("I submitted my hotel expenses weeks ago and they weren't on my payslip. When do I get the money back?",
 "Expenses are not paid with salary: approved claims are paid by bank transfer in the weekly Thursday expense run.", "Submitting an expense claim", "expenses", "near-duplicate: pay dates 'When you get paid' / 'Payslips, tax forms and pay corrections'"),
("I lost the receipt for a taxi, it was 40 euros. Can I still claim it?",
 "Yes, with a Missing Receipt Declaration in Ledgerly approved by your manager (max 3 per year, never for expenses over EUR 200).", "Receipts and missing receipts", "expenses", "direct"),
("Going to Madrid for three nights for a client project. How much do I get for food per day?",
 "EUR 65 per day (rest of EU rate), 75% of that on the departure and return days, minus 15% on days when breakfast is included in the hotel.", "Meal allowance (per diem) on business trips", "expenses", "near-duplicate: client entertainment 'Client entertainment meals'"),
("I'm taking a client out to dinner in Toronto next week, what's the spending limit per person?",
 "CAD 130 per person including tax, tips and drinks; get director pre-approval if the total bill may exceed CAD 750.", "Client entertainment meals", "expenses", "near-duplicate: per diem 'Meal allowance (per diem) on business trips'; gifts and hospitality 'Gifts and hospitality'"),
("On a trip to Porto I took a client to dinner and I'm expensing it as client entertainment. Can I still claim the full per diem for that day?",
 "No. Deduct 30% from that day's per diem for the dinner claimed as client entertainment.", "Client entertainment meals | Meal allowance (per diem) on business trips", "expenses", "both per diem and client entertainment articles state the 30% deduction"),
("What's the rate per km if I drive my own car to a client in Coimbra?",
 "EUR 0.36 per km for employees in Portugal (tolls and parking claimed separately with receipts).", "Mileage for using your own car", "expenses", "direct"),
("Can I claim mileage for driving to the Toronto office every day? Traffic is brutal and gas isn't cheap",
 "No. Driving between home and your usual office is commuting and cannot be claimed as mileage.", "Mileage for using your own car | Parking, bikes and commuting", "expenses", "both mileage and parking/commuting articles say commuting is not claimable"),
("Is it ok to fly business class to Toronto? It's a 7 hour flight and I can't sleep in economy",
 "No; for flights of 6 hours or more (like Lisbon-Toronto) premium economy is allowed. Business class needs written CFO approval, e.g. for a documented medical need.", "Booking business travel", "travel", "direct"),
("Who has to sign off on a work trip to our client in Berlin? It'll cost around 2,500 euros all in. I'm based in Lisbon",
 "It is international, so your line manager and your department head approve the TR-1 Travel Request in Petal (the CFO is only needed above EUR 4,000).", "Getting travel approved", "travel", "direct; requires applying the threshold"),
("Do I need to buy travel insurance for my business trip to Brazil?",
 "No. Approved business trips are automatically covered by Meridian Assist; private travel insurance is not reimbursed.", "Travel insurance and emergencies abroad", "travel", "near-duplicate: temporary work abroad 'Working temporarily from another country'"),
("I'm going to work from my parents' place in Brazil for three weeks. Does the company travel insurance cover me while I'm there?",
 "No. Working temporarily from abroad is a personal trip, not business travel, so Larkspur's travel insurance does not cover you; buy your own.", "Working temporarily from another country | Travel insurance and emergencies abroad", "remote-work", "near-duplicate: both articles state it; travel insurance 'Travel insurance and emergencies abroad' alone would suggest coverage if misread"),
("I need a visa letter for a client workshop in India. How long does HR take to send it?",
 "Request it in Petal (Letter request > Visa letter) and allow 5 working days.", "International travel, passports and visas", "travel", "direct"),
("I want to spend a month working from Italy this summer, is that allowed?",
 "Partly: temporary work abroad is allowed for up to 30 working days per rolling 12 months but no more than 20 working days in a row, so a full month is too long in one stretch. Submit a TWA request at least 3 weeks ahead.", "Working temporarily from another country", "remote-work", "near-duplicate: permanent relocation 'Moving permanently to another country'"),
("My husband got a job in Dublin and we're moving there for good next year. Can I keep my job at Larkspur?",
 "Possibly: Ireland is one of the countries where Larkspur can employ you through Globalhire. Submit a Relocation Request (RR-1) at least 3 months before; manager, department head and VP People approve; your salary is reset to the local pay band.", "Moving permanently to another country", "remote-work", "near-duplicate: temporary work abroad 'Working temporarily from another country'"),
("If I relocate to Spain for personal reasons, will Larkspur pay for the movers?",
 "No. Larkspur does not pay moving costs, visas or tax advice for employee-initiated relocations.", "Moving permanently to another country", "remote-work", "direct"),
("Can I use the home office money to buy a second monitor?",
 "No. The home-office stipend is for furniture and accessories, not IT equipment; monitors are lent by Larkspur through the equipment loan scheme.", "Home-office stipend", "remote-work", "near-duplicate: equipment loan 'Equipment loan and returning equipment' explains how to borrow a monitor"),
("How much do we get for setting up a home office, and how do I claim it?",
 "A one-time EUR 500 (Portugal) or CAD 700 (Canada), claimed in Ledgerly under \"Home office\" with itemised receipts within 6 months of becoming eligible.", "Home-office stipend", "remote-work", "direct"),
("I'm leaving Larkspur next month and I work from home in Porto. How do I give back my laptop and screens?",
 "IT sends a prepaid courier box; ship all equipment within 10 working days after your last working day (unreturned items after 30 days are invoiced).", "Equipment loan and returning equipment", "remote-work", "near-duplicate: 'Offboarding and your last day' only points to this policy"),
("When I leave do I have to give back the desk chair I bought with the stipend?",
 "No, anything bought with the home-office stipend belongs to you and is not returned.", "Home-office stipend | Equipment loan and returning equipment", "remote-work", "both articles state it"),
("Is there any allowance for internet if I work fully remote?",
 "Yes, EUR 25 / CAD 40 per month, paid automatically with salary (hybrid employees don't get it).", "Home-office stipend", "remote-work", "direct"),
("I joined two months ago. Can I ask to go fully remote now?",
 "Not yet: you can only request a switch to fully remote after passing probation, and only if your role is marked remote-eligible.", "Who can work remotely | Probation", "remote-work", "both remote eligibility and probation articles state it"),
("How long is probation in Toronto, and can they extend it?",
 "3 months; it can be extended once, by up to 3 months, if both sides agree in writing before it ends.", "Probation", "career", "direct"),
("What's my notice period if I quit? I'm in Lisbon and have been here 3 years",
 "60 days (Portugal, 2 or more years of service), unless your contract says longer.", "Resigning and notice periods", "offboarding", "direct"),
("If I hand in my resignation in February, will I still get my bonus in March?",
 "Not if you are still serving notice (or have left) on the March payout date: employees who have given notice are not eligible.", "Annual performance bonus | Resigning and notice periods", "payroll", "both bonus and resignation articles state it"),
("what's the bonus target for an L4?",
 "10% of base salary, multiplied by a payout factor of 0-150%.", "Annual performance bonus", "payroll", "direct, short"),
("Why was my June salary almost double? I'm in Lisbon, not complaining",
 "In Portugal salary is paid in 14 payments; the holiday subsidy is paid with the June salary.", "When you get paid", "payroll", "direct; answer needs inference"),
("I think my last payslip is missing some hours I worked. What do I do?",
 "Raise a \"Payroll query\" in Petal within 30 days of the pay date; underpayments over EUR 200 / CAD 300 are paid within 5 working days, smaller ones in the next pay.", "Payslips, tax forms and pay corrections", "payroll", "near-duplicate: 'Overtime pay'"),
("I'm a data analyst in Toronto and worked 50 hours last week to hit a deadline. Do I get overtime?",
 "Probably not: most analyst roles are not overtime-eligible (check your contract); you can agree flexible time off with your manager. Overtime-eligible staff get 1.5x for hours over 44 a week, if pre-approved.", "Overtime pay", "payroll", "direct"),
("When do I find out my performance rating this year?",
 "By 28 February, in a one-to-one with your manager.", "Performance reviews", "career", "near-duplicate: salary review 'Annual salary review'"),
("When do raises happen around here?",
 "Salaries are reviewed in April; you get a letter in Petal by 15 April with the new salary effective 1 April.", "Annual salary review", "career", "near-duplicate: 'Promotions', performance reviews 'Performance reviews'"),
("How long do I need to be at my current level before I can get promoted?",
 "At least 12 months at your current level, plus at least 6 months working consistently at the level above.", "Promotions", "career", "direct"),
("A vendor sent me a bottle of wine for Christmas, maybe 40 euros. Can I keep it?",
 "Yes, gifts up to EUR 50 in total per giver per year can be accepted without approval (unless the vendor is bidding for work).", "Gifts and hospitality", "conduct", "direct"),
("One of our suppliers invited me to a Raptors game with dinner before. Am I allowed to go?",
 "Hospitality up to CAD 220 per occasion is fine if there is a business purpose and the host attends; above that, get manager approval in advance and record it in the Gifts Register.", "Gifts and hospitality", "conduct", "near-duplicate: client entertainment 'Client entertainment meals' is for meals you pay for"),
("My brother-in-law just started working at one of our suppliers. Do I need to tell anyone?",
 "Yes, declare it with a Conflict of Interest declaration (COI-1) in Petal within 30 days; your manager and Legal review it.", "Conflicts of interest", "conduct", "direct"),
("Can I post about the cool project I'm doing for a client on LinkedIn?",
 "Only with the client's written permission; never name a client or describe client work publicly without it, and don't speak for Larkspur unless Marketing authorised you.", "Code of conduct", "conduct", "direct"),
("My manager keeps making comments about how I look and it makes me really uncomfortable. Who can I talk to about it?",
 "Report it to another manager you trust, any HR business partner, or anonymously through the Speak Up form in Petal; HR acknowledges within 2 working days.", "Reporting harassment and discrimination", "conduct", "near-duplicate: grievance 'Raising a grievance', 'Whistleblowing'"),
("I think someone in finance is faking supplier invoices. How can I report it without giving my name?",
 "Through the Integrity Line run by Halden Compliance (online or phone, anonymous), or to the Chair of the Audit Committee.", "Whistleblowing", "conduct", "near-duplicate: harassment reporting 'Reporting harassment and discrimination'"),
("My workload doubled after a colleague left and talking to my manager hasn't helped. Is there a formal way to complain?",
 "Yes, a formal grievance: submit form GR-1 to your HR business partner within 20 working days; a meeting follows within 10 working days and a written decision within 5 working days after.", "Raising a grievance", "conduct", "near-duplicate: harassment 'Reporting harassment and discrimination', 'Whistleblowing'"),
("how long does a written warning stay on my record?",
 "A first written warning stays on file for 6 months; a final written warning for 12 months.", "Part 5: Disciplinary procedure", "conduct", "direct, short"),
("Left my work laptop in a taxi like 20 minutes ago!! what do I do",
 "Report it now (within one hour): call the 24/7 Security hotline and open a Priority 1 ticket in Fixit.", "Lost or stolen laptop or phone", "security", "near-duplicate: IT helpdesk 'Getting help from the IT helpdesk'"),
("Got a new phone, how do I move my authenticator to it?",
 "Open a Fixit ticket or call the IT helpdesk; IT checks your identity on a video call and issues a one-time bypass code valid for 24 hours so you can enrol the new phone.", "Passwords, password manager and multi-factor authentication", "security", "direct"),
("Can I copy the client's dataset to a USB stick so I can present it at their office?",
 "No. Client data is Restricted: never on USB drives or your laptop's local disk (USB storage is blocked); use the Larkspur Secure Workspace or the client's environment.", "Data classification and handling", "security", "direct"),
("I clicked a link in a weird email and typed in my password before I realised. oh no",
 "Call the Security hotline straight away; no one is disciplined for reporting an honest mistake.", "Reporting phishing and suspicious messages", "security", "near-duplicate: 'Passwords, password manager and multi-factor authentication'"),
("What time does the IT helpdesk open in Toronto?",
 "08:00 Toronto time (the Toronto team works 08:00-18:00, Monday to Friday).", "Getting help from the IT helpdesk", "it", "direct"),
("Can I install a grammar checker browser extension?",
 "Only if it is on the approved extensions list; otherwise request it through a Fixit software request and Security reviews it within 5 working days.", "Requesting software and AI tools", "it", "direct"),
("I lost my office badge. Will I have to pay for a new one?",
 "The first replacement is free; after that it costs EUR 15 (Lisbon) or CAD 20 (Toronto). Tell Facilities the same day.", "Office access and badges", "workplace", "near-duplicate: lost laptop 'Lost or stolen laptop or phone'"),
("Is there parking at the Lisbon office?",
 "No car parking; Larkspur reimburses 50% of a monthly Navegante transport pass, and there is bike storage.", "Parking, bikes and commuting", "workplace", "near-duplicate: 'Mileage for using your own car'"),
("Does the company put money into my RRSP?",
 "Yes, Larkspur matches 100% of your Group RRSP contributions up to 5% of base salary, from after your first 3 months; the match vests after 2 years.", "Retirement savings and employer matching", "benefits", "direct"),
("What does our dental cover pay for braces? My daughter is 12 and we're in Toronto",
 "Orthodontics for dependent children under 19 are covered at 50%, up to a lifetime maximum of CAD 3,000 per child.", "Dental cover", "benefits", "near-duplicate: health insurance 'Health insurance'"),
("Can I use my wellness money for new running shoes?",
 "No, sports clothing and shoes are excluded from the wellness allowance.", "Wellness allowance", "benefits", "direct"),
("I want to go to a data conference in Amsterdam in the autumn. What's the process to get it approved?",
 "Submit a Conference Request (form CR-1) in Petal at least 6 weeks before; your department head approves it, and you also need a travel request because it is abroad. It is paid from the department's events budget.", "Attending conferences", "learning", "near-duplicate: learning budget 'Personal learning budget'"),
("Can my learning budget pay for an AWS certification exam?",
 "Yes, certification exams are covered; get manager approval through a Learning request in Petal before paying, then claim in Ledgerly.", "Personal learning budget", "learning", "near-duplicate: conference attendance 'Attending conferences'"),
("I've been really stressed lately. Is there any free counselling?",
 "Yes, the Employee Assistance Programme (ClearPath) is free and confidential: up to 8 counselling sessions per issue per year, 24/7.", "Employee Assistance Programme (EAP)", "benefits", "direct"),
("We just had a baby! How do I add her to my health insurance?",
 "Add her in Petal within 31 days of the birth (a life event); otherwise wait for open enrolment in November.", "Health insurance", "benefits", "near-duplicate: parental leave 'Parental leave'"),
("Do I have to do any training when I join?",
 "Yes: information security awareness, code of conduct and harassment prevention, in Petal, within 30 days of starting.", "Onboarding", "onboarding", "direct"),
("Can my manager write me a personal reference when I leave Larkspur?",
 "No. Larkspur's official reference only confirms job title and dates; managers may not give personal references on Larkspur's behalf.", "Offboarding and your last day", "offboarding", "direct"),
("A client deadline means I have to work on Canada Day. Do I get anything for it?",
 "With written manager agreement in advance, you get a day in lieu to take within 60 days; overtime-eligible Toronto staff may choose premium pay instead.", "Public holidays for remote employees, and working on a holiday", "holidays", "near-duplicate: Toronto holidays 'Public holidays: Toronto office', 'Overtime pay'"),
("I need to fly to Toronto next week for a client meeting, bit last minute. Can I just book it myself on the airline's website?",
 "Normally book through Atlas Travel Desk (late bookings need a reason). Booking outside Atlas is only allowed if it's clearly cheaper and your manager agrees before you book; you need an approved Travel Request either way.", "Booking business travel", "travel", "near-duplicate: travel approval 'Getting travel approved'"),
# must_refuse: off-domain
("What's the weather going to be like in Lisbon this weekend?", "", R, "off-domain", "refuse: off-domain"),
("Can you help me write a Python script that merges two CSV files?", "", R, "off-domain", "refuse: off-domain"),
("What's the euro to Canadian dollar exchange rate today?", "", R, "off-domain", "refuse: off-domain; expenses 'Submitting an expense claim' mentions conversion but gives no rate"),
("who won the Stanley Cup last year?", "", R, "off-domain", "refuse: off-domain"),
# must_refuse: plausible HR, not covered
("How many stock options do new hires get, and what's the vesting schedule?", "", R, "benefits", "refuse: not covered; 'Retirement savings and employer matching' mentions vesting of RRSP match only"),
("Is there a bonus if I refer a friend and they get hired?", "", R, "career", "refuse: not covered; annual bonus 'Annual performance bonus' is unrelated"),
("Do managers get a company car?", "", R, "benefits", "refuse: not covered; 'Mileage for using your own car' is about personal cars"),
("Can I bring my dog to the Toronto office on Fridays?", "", R, "workplace", "refuse: not covered"),
("Does Larkspur provide life insurance?", "", R, "benefits", "refuse: not covered; health insurance 'Health insurance' does not mention it"),
("Is there a canteen or free lunch at the Lisbon office?", "", R, "workplace", "refuse: not covered"),
("What's the salary range for a senior data engineer at L5 in Toronto?", "", R, "payroll", "refuse: not covered; pay bands are mentioned but no figures"),
("Do we get the day off on our birthday?", "", R, "leave", "refuse: not covered"),
("Does the company help pay for daycare? It's so expensive in Toronto", "", R, "benefits", "refuse: not covered; family-care leave 'Family-care leave (looking after a sick child or dependant)' is leave, not money"),
("Can I get an advance on my salary? I'm a bit short this month", "", R, "payroll", "refuse: not covered"),
("I'm getting married in June! How many days of paid leave do I get for the wedding?", "", R, "leave", "refuse: not covered; health insurance 'Health insurance' mentions marriage only as a life event"),
("What's the dress code when we visit clients?", "", R, "conduct", "refuse: not covered; code of conduct 'Code of conduct' has no dress code"),
("What's the guest wifi password at the Lisbon office?", "", R, "workplace", "refuse: not covered"),
]

COLUMNS = ["question_id", "question", "expected_answer", "expected_citations", "must_refuse",
           "notes", "category", "expected_titles"]


def main(kb_dir: str) -> None:
    rows = [json.loads(line) for line in open(Path(kb_dir) / "articles.jsonl", encoding="utf-8")]
    title = {r["id"]: r["title"] for r in rows}
    by_heading: dict[str, list[str]] = {}
    for r in rows:
        by_heading.setdefault(r["heading_path"][-1] if r["heading_path"] else r["title"], []).append(r["id"])
    questions = list(Q)
    random.Random(7).shuffle(questions)  # mix topics; fixed seed keeps question IDs stable
    rows_out = []
    for i, (question, answer, cites, category, notes) in enumerate(questions, 1):
        ids = []
        if cites != R:
            for heading in cites.split(" | "):
                found = by_heading.get(heading, [])
                if len(found) != 1:
                    sys.exit(f"heading {heading!r} matches {len(found)} articles in {kb_dir}; "
                             "fix the question list or the build (gold.csv left unchanged)")
                ids.append(found[0])
        rows_out.append([f"q{i:03d}", question, answer, ";".join(ids), "true" if cites == R else "false",
                         notes, category, ";".join(title[x] for x in ids)])
    out = Path(__file__).with_name("gold.csv")
    tmp = out.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([COLUMNS, *rows_out])
    tmp.replace(out)
    refuse = sum(1 for q in questions if q[2] == R)
    print(f"{out}: {len(questions)} questions, {refuse} must_refuse ({refuse / len(questions):.0%})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/sample-kb")
