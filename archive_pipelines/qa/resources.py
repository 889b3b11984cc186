"""Which of a page's resources its replay was answered from the archive, and what it tried to
fetch anywhere else.

Expected: every URL the page asked for at capture time and was answered (its page and request
captures with a status), browser-internal requests such as `/favicon.ico` aside. Replayed: the
replay server answered the page's request for that URL with a memento (a capture of it, marked
by `Memento-Datetime`), after whatever redirects the replay made (to the capture's own second,
or a recorded redirect followed). A request chain is attributed to the first archived URL in
it (`/web/<timestamp>[modifier]/<url>`, or a path on the replay server that it redirects into
the archive). A leak is any request the replayed page sent anywhere but the replay server
(the check refuses it): a replay must have none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from archive_pipelines.replay.wayback_paths import BadReplayPath, parse_wayback_path

BROWSER_INTERNAL_PATHS = frozenset({"/favicon.ico"})  # asked by the browser, not the page
MAX_LISTED = 50  # missing resources and leaks listed; the rest are counted
_LOCAL_SCHEMES = ("data:", "blob:", "about:")


@dataclass(frozen=True)
class ExpectedResource:
    """A URL the page was answered for at capture time, and the status it got."""

    url: str
    status: int


@dataclass(frozen=True)
class ReplayAnswer:
    """One request chain of the replayed page: the URLs it went through, in order, and the
    last answer's status (None: no answer) and whether it was a memento."""

    chain: tuple[str, ...]
    status: int | None
    memento: bool


@dataclass(frozen=True)
class ResourceScore:
    """`expected` URLs, `replayed` of them; the rest `missing` (at most MAX_LISTED listed);
    `leaks`: requests that left the replay server (at most MAX_LISTED listed, `leak_count`
    all of them)."""

    expected: int
    replayed: int
    missing: tuple[str, ...]
    leaks: tuple[str, ...]
    leak_count: int

    @property
    def fraction(self) -> float:
        """Replayed / expected (1.0 for a page that expected nothing)."""
        return 1.0 if self.expected == 0 else self.replayed / self.expected


def is_browser_internal(url: str) -> bool:
    return urlsplit(url).path in BROWSER_INTERNAL_PATHS


def is_local(url: str) -> bool:
    """A URL that reaches no network (inline data, blobs, about:blank)."""
    return url.startswith(_LOCAL_SCHEMES)


def stays_on(url: str, origin: str) -> bool:
    """Whether `url` is on the replay server at `origin` (`http://host[:port]`; its WebSocket
    URLs `ws://host[:port]/...` too) or local."""
    if url.startswith(("ws:", "wss:")):
        url = "http" + url[2:]
    return is_local(url) or url == origin or url.startswith(origin + "/")


def archived_url(url: str, origin: str) -> str | None:
    """The original URL a replay-server URL asks for (`/web/<timestamp>/<url>`), or None."""
    if not url.startswith(origin + "/web/"):
        return None
    try:
        wayback = parse_wayback_path(url[len(origin) + len("/web/"):])
    except BadReplayPath:
        return None
    return wayback.url


def resource_score(expected: Iterable[ExpectedResource], answers: Iterable[ReplayAnswer], *,
                   origin: str, leaks: Sequence[str] = ()) -> ResourceScore:
    """How many of `expected` the replay (`answers`, made through the server at `origin`)
    answered from the archive; `leaks` are the requests that left the server."""
    wanted: dict[str, str] = {}  # canonical -> URL as captured, first seen first
    for resource in expected:
        if not is_browser_internal(resource.url):
            wanted.setdefault(_key(resource.url), resource.url)
    answered: set[str] = set()
    for answer in answers:
        if not answer.memento:
            continue
        first = next(filter(None, (archived_url(url, origin) for url in answer.chain)), None)
        if first is not None:
            answered.add(_key(first))
    missing = [url for key, url in wanted.items() if key not in answered]
    distinct_leaks = list(dict.fromkeys(leaks))
    return ResourceScore(expected=len(wanted), replayed=len(wanted) - len(missing),
                         missing=tuple(missing[:MAX_LISTED]),
                         leaks=tuple(distinct_leaks[:MAX_LISTED]), leak_count=len(distinct_leaks))


def _key(url: str) -> str:
    parsed = try_canonical_url_and_domain(url)
    return url if parsed is None else parsed[0]
