"""Click types for the numeric options: finite floats in a range, and counts that fit the
catalog's integers. click's own FloatRange lets `nan` and `inf` through, and an IntRange
without a maximum lets through numbers SQLite and PostgreSQL cannot bind."""

from __future__ import annotations

import math
from typing import Any

import click

MAX_COUNT = 2**31 - 1  # a batch count, a limit: what an SQL integer parameter holds
MAX_HOURS = 1_000_000.0  # ~114 years: any longer grace overflows date arithmetic
MAX_DAYS = MAX_HOURS / 24


class FiniteFloatRange(click.FloatRange):
    """A float within the range that is a number: `nan` and `inf` are refused."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def non_negative(maximum: float) -> FiniteFloatRange:
    """A finite number from 0 to `maximum` (hours, days)."""
    return FiniteFloatRange(0, maximum)


HOURS = non_negative(MAX_HOURS)
DAYS = non_negative(MAX_DAYS)
FRACTION = FiniteFloatRange(0, 1, min_open=True)  # a share of something: above 0, at most 1
COUNT = click.IntRange(1, MAX_COUNT)  # a positive count: batches, a limit, a batch size
