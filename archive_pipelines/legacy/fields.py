"""Coercion of single index fields (url, timestamp, tags, dates) from untrusted values."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlsplit

ALLOWED_URL_SCHEMES = frozenset({"http", "https", "ftp"})
MAX_URL_LENGTH = 32_768

# ArchiveBox timestamps: unix seconds, an optional fraction, and a `.N` de-duplication suffix.
_TIMESTAMP_RE = re.compile(r"\d{1,20}(?:\.\d{1,20}){0,2}")
_NUMBER_RE = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")
# datetime.max as a unix time: anything larger cannot be represented.
_MAX_UNIX = 253_402_300_799.0


def check_url(value: object) -> tuple[str | None, str | None]:
    """`(url, None)` for an absolute http(s)/ftp URL, else `(None, reason)`."""
    if not isinstance(value, str):
        return None, f"url is {type(value).__name__}, not a string"
    url = value.strip()
    if not url:
        return None, "url is empty"
    if len(url) > MAX_URL_LENGTH:
        return None, f"url is longer than {MAX_URL_LENGTH} characters"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in url):
        return None, "url contains control characters"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return None, f"url does not parse: {exc}"
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_URL_SCHEMES:
        shown = f"{scheme}:" if scheme else "a relative url"
        return None, f"url scheme is {shown}, not one of {', '.join(sorted(ALLOWED_URL_SCHEMES))}"
    if not parts.netloc:
        return None, "url has no host"
    return url, None


def looks_like_timestamp(value: str) -> bool:
    """True for `1593690397`, `1593690397.123`, `1593690397.0` (safe as one folder name)."""
    return _TIMESTAMP_RE.fullmatch(value) is not None


def coerce_timestamp(value: object) -> str | None:
    """A snapshot timestamp string from a str or a number, None if it does not look like one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        text = str(int(value)) if value.is_integer() else repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        return None
    return text if looks_like_timestamp(text) else None


def split_tags(value: object) -> list[str] | None:
    """Tags from `"a,b"` or `["a", "b"]`: trimmed, empties dropped; None if the type is wrong."""
    if value is None:
        return []
    raw: Iterable[object]
    if isinstance(value, str):
        raw = value.split(",")
    elif isinstance(value, list):
        raw = value
    else:
        return None
    tags = [item.strip() for item in raw if isinstance(item, str)]
    return [tag for tag in tags if tag]


def unique_sorted(tags: Iterable[str]) -> tuple[str, ...]:
    """Trimmed, non-empty, de-duplicated (case-sensitive) and sorted."""
    return tuple(sorted({tag.strip() for tag in tags if tag.strip()}))


def parse_datetime(value: object) -> datetime | None:
    """A UTC-aware datetime from ISO 8601 text, `YYYY-MM-DD HH:MM`, or unix seconds.

    Naive values are taken as UTC. Anything unparseable or out of range is None.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _from_unix(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if _NUMBER_RE.fullmatch(text):
        return _from_unix(float(text))
    try:
        parsed = datetime.fromisoformat(text)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _from_unix(seconds: float) -> datetime | None:
    if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_UNIX:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def format_datetime(value: datetime | None) -> str | None:
    """ISO 8601 text for index.json (None stays None)."""
    return None if value is None else value.isoformat()


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters, for warnings about hostile values."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def optional_str(value: object) -> str | None:
    """`value` if it is a string (ints become text, e.g. integer ids), else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def id_text(value: object) -> str | None:
    """An id as text: integers as digits, UUIDs dashed (Django keeps them as 32 hex
    characters in SQLite, or 16 bytes); anything else as it is."""
    if isinstance(value, bytes) and len(value) == 16:
        return str(uuid.UUID(bytes=value))
    text = optional_str(value)
    if text is not None and len(text) == 32:
        try:
            return str(uuid.UUID(hex=text))
        except ValueError:
            return text
    return text
