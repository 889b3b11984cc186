"""Read a WARC file back with warcio, digests checked, for tests of generated and imported WARCs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from types import SimpleNamespace

from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker


@dataclass(frozen=True)
class ReadRecord:
    """One record as a reader sees it: type, WARC headers in order, HTTP headers, payload."""

    kind: str
    headers: tuple[tuple[str, str], ...]
    http_statusline: str | None
    http_headers: tuple[tuple[str, str], ...]
    payload: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    @property
    def header_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.headers)


def read_warc(data: bytes) -> list[ReadRecord]:
    """Every record of a (gzipped) WARC; a block or payload digest mismatch raises ArchiveLoadFailed."""
    records = []
    for record in ArchiveIterator(BytesIO(data), check_digests="raise"):
        payload = record.content_stream().read()
        http = record.http_headers
        records.append(
            ReadRecord(
                kind=record.rec_type,
                headers=tuple(record.rec_headers.headers),
                http_statusline=(f"{http.protocol} {http.statusline}" if http else None),
                http_headers=tuple(http.headers) if http else (),
                payload=payload,
            )
        )
    return records


def warcio_check(paths: Sequence[Path]) -> int:
    """What `warcio check` exits with for `paths` (0: every digest present passed), in process."""
    return int(Checker(SimpleNamespace(inputs=[str(path) for path in paths], verbose=False)).process_all())
