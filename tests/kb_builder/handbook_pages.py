"""A small Markdown handbook page for the tests of where articles come from (issue 46): front matter, a template tag,
an explicit anchor, short sections grace folds into the one before, a section long enough to be cut into parts, a
heading two sections share, and its words arranged so each article's text is its own."""

from __future__ import annotations

from pathlib import Path

JURY = ("When you are summoned for jury duty you receive court leave for the days you serve, and you give your "
        "supervisor a copy of the summons. ")
LEAVE = f"""---
title: Leave types
---

{{% alert %}}
Current employees can use the leave comparison chart.
{{% endalert %}}

Before you take leave, check the out of office expectations with your team and your supervisor, and plan cover for \
your work while you are away from the office for more than a day.

## Annual leave {{#annual}}

You earn annual leave every pay period, four to eight hours depending on your years of service. Your supervisor \
approves each request in the HR system before the leave starts, so plan your holidays early and keep your team \
informed about when you are away.

### Carry over

Up to 240 hours carry over into the next leave year.

## Sick leave

You earn four hours of sick leave every pay period, whatever your years of service. Use it when you are ill, for \
medical appointments, or to care for a family member who is ill, and tell your supervisor as early as you can on the \
first day.

### Paid Parental Leave

You are entitled to 12 weeks of paid parental leave after a birth or placement.

## Court leave

{chr(10).join(JURY * 4 + f"Paragraph {i} ends here." + chr(10) for i in range(12))}
## Disabled veteran leave (DVL)

Veterans with a service-connected disability rated at 30 percent or more receive up to 104 hours of disabled veteran \
leave in the twelve months after they join, for medical treatment of that disability, on top of their sick leave.
"""
RULES = """# Travel and equipment

## Travel

Book every trip through the travel system at least two weeks ahead, keep your receipts, and file your voucher \
within five days of returning, with the approval of your supervisor attached to it. Hotels are booked through the \
same system, at or below the nightly rate for the city, and a rental car needs a reason written in the request: \
public transport or a taxi is cheaper for most trips.

### Rules

Economy class only, unless the flight is longer than fourteen hours.

## Equipment

Laptops are shipped a week before you start, phones are issued on your first day, and every device goes back to \
the IT desk on your last day, with its charger and its case. A broken screen or a lost phone is reported to the \
service desk the same day, and a replacement is sent within three working days; monitors and headsets are \
ordered through the equipment form.

### Rules

Never lend a laptop to anyone, not even to a colleague for an afternoon.
"""


def write_pages(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "leave.md").write_text(LEAVE, encoding="utf-8")
    (folder / "travel.md").write_text(RULES, encoding="utf-8")
    return folder
