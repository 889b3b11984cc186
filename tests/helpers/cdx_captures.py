"""`Capture` values for unit tests of the CDX domain (no catalog)."""

from __future__ import annotations

from archive_pipelines.catalog import Capture
from archive_pipelines.replay.timestamps import start_ms
from archive_pipelines.surt import urlkey


def capture(*, url: str = "http://example.com/", timestamp: str = "20261127000000",
            status: int | None = 200, sha256: str | None = "ab" * 32, size: int | None = 10,
            content_type: str | None = "text/html; charset=utf-8", capture_id: int = 1,
            final_url: str | None = None) -> Capture:
    return Capture(
        id=capture_id, kind="page", url=url, fetched_ms=start_ms(timestamp), status_code=status,
        body_sha256=sha256, body_size=size, stored=sha256 is not None, truncated=False,
        error=None, session_id="s", final_url=final_url or url, content_type=content_type,
        index_path="sessions/x", record_offset=0, title=None, urlkey=urlkey(url), request_index=0)
