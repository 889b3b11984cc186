"""CDX `filter` and `collapse` parameters: parsed, checked, and applied to captures.

`filter=[!][=|~]field:expr`, repeatable, every filter must hold: `=` the field equals `expr`,
`~` it contains `expr`, neither: `expr` is a regular expression the field matches (the whole
value in the Internet Archive dialect, as its Java server does; from the start in pywb's, as
Python's `re.match`). `!` negates. Regular expressions are Python's; one that could backtrack
without bound on a long URL (a repetition or an alternation inside a repetition, or more than
two unbounded repetitions) is refused, as is one longer than 300 characters.

`collapse=field` or `collapse=field:N` (repeatable): of adjacent captures with the same value
(or the same first N characters), only the first is kept.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archive_pipelines.catalog import Capture
from archive_pipelines.replay.cdx_fields import ALIASES, Dialect, field_value

# The standard library's own parser of patterns (no stubs; `sre_parse` warns it is deprecated).
sre_parse: Any = importlib.import_module("re._parser")
MAX_PATTERN = 300
MAX_UNBOUNDED = 2  # `.*a.*b` on an 8 KB URL: 50 ms at worst; a third makes it minutes
_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, sre_parse.POSSESSIVE_REPEAT} \
    if hasattr(sre_parse, "POSSESSIVE_REPEAT") else {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}


class FilterError(ValueError):
    """A filter or collapse the caller must fix (the message says how)."""


def field_name(name: str, *, what: str) -> str:
    """The canonical field `name` stands for; FilterError if none."""
    try:
        return ALIASES[name]
    except KeyError:
        known = ", ".join(sorted(ALIASES))
        raise FilterError(f"{what}: unknown field {name[:50]!r} (fields: {known})") from None


@dataclass(frozen=True)
class CdxFilter:
    """One `filter` parameter."""

    field: str  # canonical (see cdx_fields.ALIASES)
    expr: str
    mode: str  # "=" exact, "~" contains, "" regular expression
    negated: bool
    pattern: re.Pattern[str] | None = None
    whole: bool = False  # the expression matches the whole value (else from its start)

    def holds(self, value: str) -> bool:
        if self.mode == "=":
            found = value == self.expr
        elif self.mode == "~":
            found = self.expr in value
        else:
            assert self.pattern is not None
            matched = self.pattern.fullmatch(value) if self.whole else self.pattern.match(value)
            found = matched is not None
        return found != self.negated


def parse_filter(text: str, *, dialect: Dialect) -> CdxFilter:
    """A `filter` parameter's value (`[!][=|~]field:expr`); FilterError if malformed."""
    rest = text
    negated = rest.startswith("!")
    rest = rest[1:] if negated else rest
    mode = rest[0] if rest[:1] in ("=", "~") else ""
    rest = rest[len(mode):]
    name, colon, expr = rest.partition(":")
    if not colon or not name:
        raise FilterError(f"filter {text[:100]!r} is not [!][=|~]field:expression")
    canonical = field_name(name, what=f"filter {text[:100]!r}")
    if mode:
        return CdxFilter(canonical, expr, mode, negated)
    return CdxFilter(canonical, expr, mode, negated, pattern=_compiled(expr),
                     whole=dialect == "ia")


def _compiled(expr: str) -> re.Pattern[str]:
    if len(expr) > MAX_PATTERN:
        raise FilterError(f"a filter's expression is at most {MAX_PATTERN} characters")
    try:
        parsed = sre_parse.parse(expr)
        pattern = re.compile(expr)
    except (re.error, RecursionError, OverflowError) as exc:
        raise FilterError(f"filter expression {expr[:100]!r} is not a regular expression: {exc}") \
            from None
    if _unbounded(list(parsed), inside=False) > MAX_UNBOUNDED:
        raise FilterError(f"filter expression {expr[:100]!r} has more than {MAX_UNBOUNDED} "
                          "unbounded repetitions (too slow to match)")
    return pattern


def _unbounded(items: list[Any], *, inside: bool) -> int:
    """How many unbounded repetitions `items` (a parsed pattern) holds; FilterError for one
    inside another repetition (or alternation inside a repetition)."""
    count = 0
    for op, arg in items:
        if op in _REPEATS:
            _low, high, sub = arg
            if inside and high > 1:
                raise FilterError("a filter expression may not repeat a repetition (too slow "
                                  "to match)")
            count += high == sre_parse.MAXREPEAT
            count += _unbounded(list(sub), inside=inside or high > 1)
        elif op is sre_parse.BRANCH:
            if inside:
                raise FilterError("a filter expression may not repeat an alternation (too slow "
                                  "to match): use a character class")
            for branch in arg[1]:
                count += _unbounded(list(branch), inside=inside)
        elif op is sre_parse.SUBPATTERN:
            count += _unbounded(list(arg[-1]), inside=inside)
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            count += _unbounded(list(arg[1]), inside=inside)
        elif op is sre_parse.GROUPREF_EXISTS:
            for branch in arg[1:]:
                if branch is not None:
                    count += _unbounded(list(branch), inside=inside)
        elif op is getattr(sre_parse, "ATOMIC_GROUP", None):
            count += _unbounded(list(arg), inside=inside)
    return count


class Collapse:
    """One `collapse` parameter: drops a capture whose value (or its first `length`
    characters) equals the last kept one's."""

    def __init__(self, field: str, length: int | None) -> None:
        self.field = field
        self.length = length
        self._last: str | None = None

    def keeps(self, capture: Capture, dialect: Dialect) -> bool:
        value = field_value(capture, self.field, dialect)
        if self.length is not None:
            value = value[:self.length]
        if value == self._last:
            return False
        self._last = value
        return True


def parse_collapse(text: str) -> tuple[str, int | None]:
    """(field, length) of a `collapse` parameter (`field` or `field:N`)."""
    name, colon, digits = text.partition(":")
    canonical = field_name(name, what=f"collapse {text[:100]!r}")
    if not colon:
        return canonical, None
    if not digits.isdigit() or not 0 < int(digits) <= 10_000:
        raise FilterError(f"collapse {text[:100]!r}: the length after ':' is a number from 1")
    return canonical, int(digits)


def all_hold(filters: tuple[CdxFilter, ...], dialect: Dialect) -> Callable[[Capture], bool]:
    """A test of every filter on a capture."""
    def test(capture: Capture) -> bool:
        return all(f.holds(field_value(capture, f.field, dialect)) for f in filters)
    return test
