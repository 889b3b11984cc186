"""Checks of command-line values (URLs, timestamps): one clear line for each bad one."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from urllib.parse import urlsplit

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.legacy.fields import looks_like_timestamp

URL_SCHEMES = ("http", "https")
# datetime.max as unix seconds: a later time has no calendar day to be filed under.
_MAX_UNIX = 253_402_300_799.0


class BadInput(ArchiveError):
    """A command-line value the command cannot use."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= 100 else value[:97] + "...")


def url_problem(url: str) -> str | None:
    """Why `url` is not an absolute http(s) URL with a host (the crawler's rule), or None."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in url) or url != url.strip():
        return "URL has control characters or spaces around it"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        return f"unparsable URL: {exc}"
    scheme = parts.scheme.lower()
    # `example.org:8080/x` parses with the "scheme" `example.org`: a host and port.
    if not scheme or (scheme not in URL_SCHEMES
                      and ("." in scheme or parts.path[:1].isdigit())):
        return "not an absolute URL (no scheme); give it with http:// or https://"
    if scheme not in URL_SCHEMES:
        return f"unsupported scheme {scheme!r} (only http and https)"
    if not parts.hostname:
        return "URL has no host"
    return None


def check_url(url: str, option: str = "--url") -> str:
    """`url` if it is an absolute http(s) URL with a host, else BadInput saying why."""
    problem = url_problem(url)
    if problem is not None:
        raise BadInput(f"bad {option} {_shown(url)}: {problem}")
    return url


def timestamp_time(timestamp: str, option: str = "--timestamp") -> datetime:
    """The UTC time a snapshot timestamp key names (`1700000000`, `1700000000.123`, with an
    optional `.N` de-duplication suffix), else BadInput saying why."""
    if not looks_like_timestamp(timestamp):
        raise BadInput(f"bad {option} {_shown(timestamp)}: expected unix seconds, e.g. "
                       "1700000000 or 1700000000.123")
    seconds = float(".".join(timestamp.split(".")[:2]))
    if not math.isfinite(seconds) or seconds > _MAX_UNIX:
        raise BadInput(f"bad {option} {_shown(timestamp)}: after the year 9999")
    return datetime.fromtimestamp(seconds, UTC)
