"""The original response headers of a capture, from the record it came from (a crawl
segment, a compacted session or an imported WARC), through a cache.

The catalog holds a capture's status, content type and body, not its headers: those live in
the record, which takes a file read (and, for a compacted session, a zstd frame) to reach.
A page's record holds its sub-requests too, so the cache keeps every response of a record
together: replaying a page and then its images, stylesheets and scripts reads the record
once. The cache is bounded by entries (`capacity`); a header list is cut at 200 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.replay.lru import SizedLru
from archive_pipelines.warc.capture_records import read_capture_record

_MAX_HEADERS = 200


@dataclass(frozen=True)
class RecordedResponse:
    """One fetch of a record: its URL, its response's headers as the server sent them, and
    whether the stored body kept its Content-Encoding (the crawler could not decode it)."""

    url: str
    headers: tuple[tuple[str, str], ...]
    still_encoded: bool


class CaptureHeaders:
    """Recorded responses by (index path, record offset), read once and kept (LRU)."""

    def __init__(self, data_dir: Path, store: BlobStore, *, capacity: int) -> None:
        self.data_dir = data_dir
        self.store = store
        self._cache: SizedLru[tuple[str, int], tuple[RecordedResponse, ...]] = SizedLru(
            max(capacity, 1), size_of=lambda _value: 1)

    @property
    def cache(self) -> SizedLru[tuple[str, int], tuple[RecordedResponse, ...]]:
        return self._cache

    def response(self, *, index_path: str, record_offset: int, url: str,
                 request_index: int | None = None) -> RecordedResponse | None:
        """The recorded response of the fetch of `url` (or at `request_index`) in the record
        at (`index_path`, `record_offset`); None when the record has no headers for it.
        OSError / ValueError when the record cannot be read. Blocking: call from a thread."""
        key = (index_path, record_offset)
        responses = self._cache.get(key)
        if responses is None:
            record = read_capture_record(self.data_dir, self.store, index_path,
                                         record_offset=record_offset)
            responses = _responses(record)
            self._cache.put(key, responses)
        if request_index is not None and 0 <= request_index < len(responses) \
                and responses[request_index].url == url:
            return responses[request_index]
        for found in responses:
            if found.url == url:
                return found
        return responses[0] if len(responses) == 1 else None


def _responses(record: dict[str, Any]) -> tuple[RecordedResponse, ...]:
    requests = record.get("requests")
    if not isinstance(requests, list):
        return ()
    out = []
    for request in requests:
        if not isinstance(request, dict):
            out.append(RecordedResponse("", (), still_encoded=False))
            continue
        response = request.get("response")
        url = request.get("url") if isinstance(request.get("url"), str) else ""
        if not isinstance(response, dict):
            out.append(RecordedResponse(str(url), (), still_encoded=False))
            continue
        out.append(RecordedResponse(str(url), _pairs(response.get("headers"))
                                    + _revisited_type(response),
                                    still_encoded=bool(response.get("body_encoding"))))
    return tuple(out)


def _revisited_type(response: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """An unchanged capture (a 304, which sends no Content-Type): the Content-Type of the
    earlier response whose body it keeps, as the crawler recorded it in `revisit_of`."""
    earlier = response.get("revisit_of")
    if not isinstance(earlier, dict) or not isinstance(earlier.get("content_type"), str):
        return ()
    headers = response.get("headers")
    if isinstance(headers, list) and any(
            isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[0], str)
            and pair[0].lower() == "content-type" for pair in headers):
        return ()
    return (("Content-Type", earlier["content_type"]),)


def _pairs(headers: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(headers, list):
        return ()
    pairs = []
    for pair in headers[:_MAX_HEADERS]:
        if isinstance(pair, list | tuple) and len(pair) == 2 and \
                isinstance(pair[0], str) and isinstance(pair[1], str):
            pairs.append((pair[0], pair[1]))
    return tuple(pairs)
