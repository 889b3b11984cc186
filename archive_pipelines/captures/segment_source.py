"""Where the crawl segments are: the data dir's sessions/ folder (a local primary), or the
`sessions/` prefix of an S3 primary's bucket, where any machine's crawler uploads them.

A SegmentSource finds, reads, sizes and removes segments by their data-dir relative path
(`sessions/{day}/{session}/{name}.jsonl`, the ledger's key), whichever holds them; ingest,
the captures sensor and compaction read through it, so a segment crawled on one machine is
ingested and compacted on another. The crawler's journals are always local (its own
recovery state); compacted session files live beside the segments (`sessions/compacted/`).
"""

from __future__ import annotations

import abc
import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from archive_pipelines.blobstore import BlobStore, open_store
from archive_pipelines.captures.segment_files import (
    COMPACTED,
    JOURNALS,
    SEGMENT_NAME,
    SegmentBytes,
    SegmentPath,
    canonical_session_id,
    find_segments,
    is_date,
    read_segment,
)
from archive_pipelines.settings import Settings

if TYPE_CHECKING:
    from archive_pipelines.blobstore.named_objects import NamedObjects


class SegmentSource(abc.ABC):
    """The crawl segments (and compacted session files) of one deployment."""

    data_dir: Path
    is_local: bool

    @abc.abstractmethod
    def find(self, session_id: str | None = None) -> tuple[list[SegmentPath], list[str]]:
        """Every segment (of one session if given) in the order the crawler wrote them, and
        the entries skipped (odd names) as lines for the report."""

    @abc.abstractmethod
    def read(self, relative: str) -> SegmentBytes:
        """A segment's bytes; FileNotFoundError if it is gone."""

    @abc.abstractmethod
    def read_range(self, relative: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes of a file from `offset`; FileNotFoundError if it is gone."""

    @abc.abstractmethod
    def size(self, relative: str) -> int | None:
        """A file's size; None if it is gone."""

    @abc.abstractmethod
    def modified(self, relative: str) -> datetime | None:
        """When a file was last written (UTC); None if it is gone."""

    @abc.abstractmethod
    def remove(self, relative: str) -> bool:
        """Delete a file we wrote (its bytes are held elsewhere now); True if it was there."""

    @abc.abstractmethod
    def store_file(self, relative: str, path: Path) -> None:
        """Make a local file (written by us) the source's `relative` file."""

    def days(self) -> list[str]:
        """The days (YYYY-MM-DD) with segments, oldest first."""
        return sorted({segment.day for segment in self.find()[0]})


class LocalSegments(SegmentSource):
    """Segments under `data_dir/sessions` (segment_files.py): the local primary's profile."""

    is_local = True

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def find(self, session_id: str | None = None) -> tuple[list[SegmentPath], list[str]]:
        return find_segments(self.data_dir, session_id)

    def read(self, relative: str) -> SegmentBytes:
        return read_segment(self.data_dir / relative)

    def read_range(self, relative: str, offset: int, length: int) -> bytes:
        fd = os.open(self.data_dir / relative, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    def size(self, relative: str) -> int | None:
        try:
            return os.stat(self.data_dir / relative, follow_symlinks=False).st_size
        except FileNotFoundError:
            return None

    def modified(self, relative: str) -> datetime | None:
        try:
            mtime = os.stat(self.data_dir / relative, follow_symlinks=False).st_mtime
        except FileNotFoundError:
            return None
        return datetime.fromtimestamp(mtime, UTC)

    def remove(self, relative: str) -> bool:
        try:
            (self.data_dir / relative).unlink()
        except FileNotFoundError:
            return False
        return True

    def store_file(self, relative: str, path: Path) -> None:
        if path != self.data_dir / relative:
            os.replace(path, self.data_dir / relative)


class BucketSegments(SegmentSource):
    """Segments as objects `<store prefix>/sessions/...` in an S3 primary's bucket. One
    listing answers `find`, `size` and `modified` until the next `find`."""

    is_local = False

    def __init__(self, objects: NamedObjects, data_dir: Path) -> None:
        self.objects = objects
        self.data_dir = data_dir
        self._listed: dict[str, tuple[int, datetime]] = {}

    def find(self, session_id: str | None = None) -> tuple[list[SegmentPath], list[str]]:
        found: list[SegmentPath] = []
        skipped: list[str] = []
        self._listed = {}
        for item in self.objects.list("sessions/"):
            self._listed[item.relative] = (item.size, item.modified)
            parts = item.relative.split("/")
            if len(parts) > 1 and (parts[1] in (JOURNALS, COMPACTED) or parts[1].startswith(".")):
                continue
            if len(parts) != 4:
                skipped.append(f"{item.relative}: not sessions/<day>/<session>/<segment>")
                continue
            _, day, session, name = parts
            if name.startswith("."):
                continue
            if not is_date(day) or canonical_session_id(session) is None \
                    or SEGMENT_NAME.fullmatch(name) is None:
                skipped.append(f"{item.relative}: not a segment file")
                continue
            if session_id is None or session == session_id:
                found.append(SegmentPath(self.data_dir, item.relative, session, day))
        found.sort(key=lambda s: (s.session_id, s.relative.rsplit("/", 1)[1], s.day))
        return found, skipped

    def read(self, relative: str) -> SegmentBytes:
        data = self.objects.read(relative)
        return SegmentBytes(data, hashlib.sha256(data).hexdigest(), data.rfind(b"\n") + 1)

    def read_range(self, relative: str, offset: int, length: int) -> bytes:
        return self.objects.read_range(relative, offset, length)

    def size(self, relative: str) -> int | None:
        if relative in self._listed:
            return self._listed[relative][0]
        return self.objects.size(relative)

    def modified(self, relative: str) -> datetime | None:
        if relative not in self._listed:
            self.find()
        listed = self._listed.get(relative)
        return None if listed is None else listed[1]

    def remove(self, relative: str) -> bool:
        there = self.size(relative) is not None
        self.objects.delete(relative)
        self._listed.pop(relative, None)
        return there

    def store_file(self, relative: str, path: Path) -> None:
        self.objects.put_file(relative, path)


def segment_source(store: BlobStore, data_dir: Path) -> SegmentSource:
    """The segments of a deployment whose primary is `store`: its bucket's sessions/ for
    an S3 primary, else the data dir's sessions/ folder."""
    if store.is_local_folder:
        return LocalSegments(data_dir)
    from archive_pipelines.blobstore.named_objects import named_objects  # imports botocore

    objects = named_objects(store)
    assert objects is not None  # not a local store
    return BucketSegments(objects, data_dir)


def settings_segment_source(settings: Settings) -> SegmentSource:
    """The segments of the deployment `settings` describe (opens no catalog)."""
    if settings.primary_is_local:
        return LocalSegments(settings.data_dir)
    return segment_source(open_store(settings.primary_store, settings.data_dir),
                          settings.data_dir)
