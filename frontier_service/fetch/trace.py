"""The state of one fetch in progress (hops so far), and how it becomes a FetchResult."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

from archive_pipelines.content_coding import Cut
from frontier_service.fetch.result import FetchErrorKind, FetchResult, RedirectHop


class HopResponse(NamedTuple):
    """One request's answer, body already read (up to the cap)."""

    status: int
    request_headers: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    body: bytes
    cut: Cut | None  # why the body stops short, if it does
    body_encoding: str | None  # Content-Encoding left on `body` (one that was not decoded)
    content_type: str | None
    charset: str | None
    location: str | None
    retry_after_s: float | None
    response_time_s: float


@dataclass
class FetchTrace:
    """What one fetch has seen so far, turned into a FetchResult at the end."""

    url: str
    request_headers: list[tuple[str, str]]
    current: str = ""
    redirects: list[RedirectHop] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    began: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.current = self.current or self.url

    def finished(
        self,
        response: HopResponse,
        attempts: int,
        error_kind: FetchErrorKind | None = None,
        *, error: str | None = None,
    ) -> FetchResult:
        """The final response; with an error (bad redirect, loop) its body is not kept."""
        cut = response.cut if error is None else None
        return FetchResult(
            url=self.url,
            final_url=self.current,
            status=response.status,
            request_headers=response.request_headers,
            response_headers=response.headers,
            body=response.body if error is None else None,
            truncated=cut is not None,
            truncated_reason=None if cut is None else cut.reason,
            cut_kind=None if cut is None else cut.kind,
            body_encoding=response.body_encoding if error is None else None,
            redirects=self.redirects,
            elapsed_s=time.monotonic() - self.began,
            response_time_s=response.response_time_s,
            error=error,
            error_kind=error_kind,
            content_type=response.content_type,
            charset=response.charset,
            attempts=attempts,
            started_at=self.started_at,
        )

    def failed(self, kind: FetchErrorKind, message: str, *, attempts: int = 1) -> FetchResult:
        """No usable response for the current hop."""
        return FetchResult(
            url=self.url,
            final_url=self.current,
            status=None,
            request_headers=self.request_headers,
            redirects=self.redirects,
            elapsed_s=time.monotonic() - self.began,
            error=message,
            error_kind=kind,
            attempts=attempts,
            started_at=self.started_at,
        )
