"""A small handbook KB for the curation tests: a near-duplicate pair, a pair that only looks alike, an article that
leans on its section ("This policy..."), one with two topics, and one whose title and text are hostile HTML."""

from __future__ import annotations

import json
from pathlib import Path

EVIL_TITLE = '<img src=x onerror="window.__xss=1">Expense <b>claims</b>'
EVIL_TEXT = ("<script>window.__xss=2</script> As mentioned above, expense claims <img src=x onerror=window.__xss=3> "
             "are paid back within thirty days of approval by your manager, through the finance portal, together "
             "with the receipts you upload and the cost centre your team charges travel and equipment to.")
LAPTOP = ("Your laptop is shipped to your home address one week before your first day. IT support configures it "
          "in advance with your accounts, the VPN client and the standard tools, so you can sign in on day one. "
          "If it has not arrived three days before you start, write to the IT service desk.")

ARTICLES = [
    ("1", "Leave", ["Leave"], "The carry-over policy lets you keep unused leave from one year to the next.\n\n"
     "Employees earn annual leave every pay period, and your manager approves every request for leave in the HR "
     "system before the leave starts, so plan your holidays early and keep your team informed."),
    ("2", "Leave > Carry over", ["Leave", "Carry over"], "This policy allows you to carry over up to 240 hours of "
     "annual leave into the next leave year. Hours above the limit are forfeited at the end of the year, unless "
     "your manager asked you to postpone leave for operational reasons, in which case HR restores them."),
    ("3", "Equipment > Laptop shipping", ["Equipment", "Laptop shipping"], LAPTOP),
    ("4", "Equipment > Laptop delivery", ["Equipment", "Laptop delivery"],
     LAPTOP.replace("one week", "a week") + "\n\nReturn the laptop to IT when you leave the company."),
    ("5", "Travel > Conference travel approval", ["Travel", "Conference travel approval"],
     "Your supervisor approves conference travel in the travel system before you book anything. Conference "
     "travel requests need the event agenda, the estimated cost of the trip, and the budget line it is charged to, "
     "and they are reviewed within five working days."),
    ("6", "Travel > Local travel approval", ["Travel", "Local travel approval"],
     "Your supervisor approves local travel in the travel system before you book anything. Local travel "
     "requests need the destination, the estimated cost of the trip, and the budget line it is charged to, and "
     "they are reviewed within two working days."),
    ("7", "Working here > Slack and security", ["Working here", "Slack and security"],
     "Use threads in Slack channels and set your status when you are away from your desk for long. Public "
     "channels are preferred to direct messages so that colleagues can find answers later.\n\n"
     "Announcements go to the general channel; team chatter stays in team channels and off the general channel.\n\n"
     "As noted above, lock your screen whenever you leave your computer. Report lost badges, phishing emails and stolen devices "
     "to the security team at once, day or night, through the security hotline."),
    ("8", EVIL_TITLE, ["Finance"], EVIL_TEXT),
]


def write_kb(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "articles.jsonl").write_text("".join(
        json.dumps({"id": i, "title": t, "text": x, "source": "handbook.md", "heading_path": h}) + "\n"
        for i, t, h, x in ARTICLES), encoding="utf-8")
    return folder
