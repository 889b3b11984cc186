"""What one fetch produced: the final response, the redirect hops on the way, or the error."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from archive_pipelines.content_coding import CutKind

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


class FetchErrorKind(StrEnum):
    CONNECT = "connect"  # DNS failure, connection refused or reset, server hung up
    TIMEOUT = "timeout"  # connect, read, per-request or whole-fetch deadline
    REDIRECT_LOOP = "redirect-loop"
    TOO_MANY_REDIRECTS = "too-many-redirects"
    BAD_REDIRECT = "bad-redirect"  # Location to a non-http(s) or unparsable URL
    INVALID_URL = "invalid-url"
    PROTOCOL = "protocol"  # malformed response, broken chunked encoding ...
    REFUSED = "refused"  # the host's address is outside the crawl's network scope
    OTHER = "other"


# Kinds that say "the host did not serve us", as opposed to "the page is odd".
HOST_FAILURES = frozenset({FetchErrorKind.CONNECT, FetchErrorKind.TIMEOUT})


class RedirectHop(NamedTuple):
    """One redirect response: the URL asked for, its status, and the absolute target."""

    url: str
    status: int
    location: str


@dataclass(frozen=True)
class FetchResult:
    """The outcome of fetching one URL, redirects followed.

    `status`, headers and `body` are those of the final response (None/empty when no
    response arrived). `body` is the decoded entity (Content-Encoding removed, unless
    `body_encoding` names one the fetcher cannot decode), cut short when `truncated`:
    `truncated_reason` says why in one line, `cut_kind` the same for code.
    """

    url: str
    final_url: str
    status: int | None
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None
    truncated: bool = False
    truncated_reason: str | None = None  # e.g. "body over the 20 MiB cap"
    cut_kind: CutKind | None = None  # size, decoded-size or decode-ratio
    body_encoding: str | None = None  # Content-Encoding still on `body` (not decoded)
    redirects: list[RedirectHop] = field(default_factory=list)
    elapsed_s: float = 0.0  # the whole fetch: every hop, retry and backoff
    response_time_s: float = 0.0  # the final request alone, for politeness
    error: str | None = None  # one line
    error_kind: FetchErrorKind | None = None
    content_type: str | None = None  # media type, lowercase, no parameters
    charset: str | None = None  # as declared by the Content-Type header
    attempts: int = 1  # requests made for the final hop (1 + retries)
    started_at: float = 0.0  # wall-clock epoch seconds when the fetch began

    @property
    def ok(self) -> bool:
        """A response arrived and it is 2xx."""
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def is_html(self) -> bool:
        """Whether the body should be parsed for links."""
        return self.body is not None and self.content_type in HTML_TYPES

    @property
    def host_failure(self) -> bool:
        """Connection failure or timeout, or a 503/429 still there after retries."""
        if self.error_kind in HOST_FAILURES:
            return True
        return self.error is None and self.status in (429, 503)
