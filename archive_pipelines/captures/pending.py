"""Bodies that crawl records not yet in the catalog reference: gc must keep them, and verify
reports them apart from untracked files (they are tracked once their segment is ingested).

They are the bodies named in segment files the ledger does not hold and in the crawler's
journals (records of segments still open), and each such segment's own blob: ingest-crawl
stores the segment's bytes before its transaction records them (an ingest killed in between,
or a catalog restored from a dump older than the ingest, leaves that blob without a row until
ingest-crawl runs again). The files are scanned for `"body_hash"` fields
with a regex, without parsing the records: gc and verify need only the hashes, and a record
too damaged to ingest still protects its bodies.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path

from archive_pipelines.captures.segment_files import find_journals, find_segments
from archive_pipelines.captures.segment_source import SegmentSource
from archive_pipelines.catalog import Catalog

_BODY_HASH = re.compile(rb'"body_hash"\s*:\s*"sha256:([0-9a-f]{64})"')


def pending_body_hashes(catalog: Catalog, data_dir: Path, *,
                        source: SegmentSource | None = None) -> set[str]:
    """sha256 of every body a not-yet-ingested segment (in the data dir, or in `source`:
    an S3 primary's bucket, besides the segments this machine has not uploaded yet) or a
    crawler journal names, and of each such segment itself.

    Journals are read before segments are listed: the crawler links a segment into place
    before it removes the journal that held its records, so a segment closed while this
    runs is in a journal read here or in the listing after (segments first would miss one
    closed between the two listings, or between a journal's listing and its read).
    """
    found: set[str] = set()
    _read_hashes(find_journals(data_dir), found)
    segments, _skipped = find_segments(data_dir)
    with catalog.reading() as tx:
        done = tx.captures.ingested_paths()
    _read_hashes([s.path for s in segments if s.relative not in done], found, segments=True)
    if source is not None and not source.is_local:
        remote, _skipped = source.find()
        for segment in remote:
            if segment.relative not in done:
                with contextlib.suppress(FileNotFoundError):  # ingested and compacted meanwhile
                    _add_segment(source.read(segment.relative).data, found)
    return found


def _add_hashes(data: bytes, found: set[str]) -> None:
    found.update(match.decode() for match in _BODY_HASH.findall(data))


def _add_segment(data: bytes, found: set[str]) -> None:
    """The bodies a closed segment names, and the segment's own blob (`ingest_segment`)."""
    _add_hashes(data, found)
    found.add(hashlib.sha256(data).hexdigest())


def _read_hashes(paths: list[Path], found: set[str], *, segments: bool = False) -> None:
    """The bodies named in `paths`: journals, or closed `segments` (their own blobs too)."""
    add = _add_segment if segments else _add_hashes
    for path in paths:
        with contextlib.suppress(FileNotFoundError):  # ingested and compacted, or rotated
            add(path.read_bytes(), found)
