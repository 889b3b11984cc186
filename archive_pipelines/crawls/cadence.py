"""A crawl definition's cadence: a five-field cron string or @hourly/@daily/@weekly/@monthly.

Checked here without Dagster (the domain never imports it), for the subset that Dagster's
schedules accept: numbers, names of months and weekdays, `*`, ranges, steps and lists.
"""

from __future__ import annotations

import re

SHORTHANDS = ("@hourly", "@daily", "@weekly", "@monthly")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (field name, lowest, highest, names from `lowest` on)
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),  # 0 and 7: Sunday
)
_ITEM = re.compile(r"(?P<range>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[0-9]+))?", re.ASCII)
_EXAMPLE = 'e.g. "0 3 * * 1" (Mondays at 03:00 UTC) or one of ' + ", ".join(SHORTHANDS)


def cadence_problem(cadence: str) -> str | None:
    """What is wrong with a cadence, or None when a Dagster schedule can run on it."""
    text = cadence.strip().lower()
    if text.startswith("@"):
        return None if text in SHORTHANDS else f"{cadence!r} is not a known shorthand ({_EXAMPLE})"
    fields = text.split()
    if len(fields) != 5:
        return (f"{cadence!r} has {len(fields)} field(s), a cron string has 5: minute hour "
                f"day-of-month month day-of-week ({_EXAMPLE})")
    values: list[set[int]] = []
    for field, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        try:
            values.append(_field_values(field, low=low, high=high, names=names))
        except ValueError as exc:
            return f"{cadence!r}: {name} {field!r}: {exc}"
    days, months = values[2], values[3]
    if months <= {2} and days <= {30, 31}:
        return f"{cadence!r} never runs: February has no day {'/'.join(map(str, sorted(days)))}"
    return None


def _field_values(field: str, *, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    found: set[int] = set()
    for item in field.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise ValueError(f"{item!r} is not *, N, N-M or one of them /STEP")
        span, step_text = match.group("range"), match.group("step")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first_text, last_text = span.split("-")
            first, last = (_value(first_text, low=low, high=high, names=names),
                           _value(last_text, low=low, high=high, names=names))
            if first > last:
                raise ValueError(f"the range {span!r} ends before it starts")
        else:
            first = _value(span, low=low, high=high, names=names)
            last = high if step_text is not None else first  # "5/15": from 5 on, every 15
        step = 1 if step_text is None else int(step_text)
        if step < 1:
            raise ValueError("a step is at least 1")
        found.update(range(first, last + 1, step))
    return found


def _value(text: str, *, low: int, high: int, names: tuple[str, ...]) -> int:
    if text in names:
        return low + names.index(text)
    if not text.isdigit():
        allowed = f" or a name ({', '.join(names)})" if names else ""
        raise ValueError(f"{text!r} is not a number{allowed}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{value} is outside {low}-{high}")
    return value
