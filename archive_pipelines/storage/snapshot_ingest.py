"""`ingest` of a folder into a snapshot: all, or resumable.

The snapshot is incomplete in the catalog from the start of the ingest until its last file
is committed. An interrupted ingest leaves it so (never a partial snapshot that looks
whole), and so does one that could not store every regular file of the folder (a file that
changed while it was read, vanished, or could not be read) or stored none at all; resuming
it (`resume_ingest` by id, or `open_ingest` with the same URL and folder, which finds it)
skips the files already committed, by their path, checks their view links, ingests the
rest and marks the snapshot complete once nothing failed. Symlinks and special files are
never stored: they are listed as left out, and do not keep the snapshot incomplete.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.catalog import Catalog, IngestState, utcnow
from archive_pipelines.storage.file_ingest import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_HARDLINK,
    IngestItem,
    IngestReport,
    ingest_files,
    walk_directory,
)
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.linking import ensure_links
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import ViewSet, view_dir


class IngestRefused(ArchiveError):
    """An ingest that would leave or make a partial snapshot."""


# A plain name: it is the first folder of every path the ingest stores (`<extractor>/...`).
_EXTRACTOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")


def check_extractor(extractor: str) -> str:
    """The extractor name, or IngestRefused when it is not a plain name (letters, digits and
    `._@+-`, starting with a letter or digit, at most 64 characters: no path, no `..`)."""
    if _EXTRACTOR.fullmatch(extractor) is None or ".." in extractor:
        shown = extractor if len(extractor) <= 80 else extractor[:77] + "..."
        raise IngestRefused(f"extractor {shown!r} is not a plain name: use letters, digits "
                            "and ._@+- (at most 64, starting with a letter or digit), e.g. "
                            "wget or singlefile")
    return extractor


def resume_command(snapshot_id: str) -> str:
    """The command that finishes the snapshot's interrupted ingest."""
    return f"archive-pipelines ingest --resume {snapshot_id}"


@dataclass(frozen=True)
class SnapshotIngest:
    """An ingest of `source` as `extractor` into a snapshot, started at `started_at`;
    `resumed`: an interrupted one, continued."""

    snapshot_id: str
    url: str
    timestamp: str
    created_at: datetime
    source: Path
    extractor: str
    started_at: datetime
    resumed: bool


@dataclass
class SnapshotIngestReport:
    """`files.errors`: the files not stored (the snapshot then stays incomplete)."""

    ingest: SnapshotIngest
    files: IngestReport
    skipped: int = 0  # committed by the interrupted ingest: not read again
    complete: bool = False  # every regular file is stored, and there is at least one
    left_out: list[str] = field(default_factory=list)  # symlinks and special files

    @property
    def not_stored(self) -> int:
        """Entries of the folder that are not in the snapshot: failed, or left out."""
        return len(self.files.errors) + len(self.left_out)


def _continued(state: IngestState) -> SnapshotIngest:
    assert state.ingest_source and state.ingest_extractor and state.ingest_started_at
    return SnapshotIngest(state.snapshot_id, state.url, state.timestamp, state.created_at,
                          Path(state.ingest_source), state.ingest_extractor,
                          state.ingest_started_at, resumed=True)


def _unfinished(state: IngestState) -> IngestRefused:
    return IngestRefused(
        f"snapshot {state.snapshot_id} ({state.url} @ {state.timestamp}) is incomplete: an "
        f"ingest of {state.ingest_source} as {state.ingest_extractor} was interrupted; finish "
        f"it first with `{resume_command(state.snapshot_id)}`")


def open_ingest(catalog: Catalog, *, url: str, extractor: str, source: Path,
                timestamp: str | None, created_at: datetime, title: str | None = None,
                created_by: str = "system") -> SnapshotIngest:
    """The ingest of `source` (a folder) as `extractor` into the snapshot of `url`.

    With a `timestamp`: the snapshot with that url and timestamp, made if missing (filed at
    `created_at`). Without one: the incomplete snapshot an interrupted ingest of the same
    url and folder left, resumed; else a new snapshot at `created_at`, as for a folder
    ingested before (its complete snapshot stays as it is).

    A snapshot that another interrupted ingest left incomplete is refused (IngestRefused
    naming its resume command): it is finished first, never mixed with another source. So
    are an extractor that is not a plain name and a folder without a regular file, before
    anything is created.
    """
    check_extractor(extractor)
    if next(walk_directory("", extractor, source), None) is None:
        raise IngestRefused(f"{source} holds no regular file: nothing to ingest")
    folder = str(source.resolve())
    now = utcnow()
    with catalog.transaction() as tx:
        if timestamp is None:
            found = tx.snapshots.find_incomplete(url=url, source=folder)
            if found is not None:
                if found.ingest_extractor != extractor:
                    raise _unfinished(found)
                return _continued(found)
            timestamp = f"{created_at.timestamp():.3f}"
        else:
            found = tx.snapshots.snapshot_at(url=url, timestamp=timestamp)
            if found is not None and not found.complete:
                if (found.ingest_source, found.ingest_extractor) != (folder, extractor):
                    raise _unfinished(found)
                return _continued(found)
            if found is not None:  # a complete snapshot takes more files, as before
                tx.snapshots.start_ingest(found.snapshot_id, source=folder,
                                        extractor=extractor, started_at=now)
                return SnapshotIngest(found.snapshot_id, url, timestamp, found.created_at,
                                      Path(folder), extractor, now, resumed=False)
        # by_timestamp/<ts> belongs to the oldest snapshot with that timestamp: a new one
        # sharing it with another url comes after it, so the owner (and its links) stay.
        latest = tx.snapshots.latest_created_at(timestamp)
        if latest is not None and created_at <= latest:
            created_at = latest + timedelta(microseconds=1)
        snapshot_id = tx.snapshots.add_incomplete_snapshot(
            url=url, timestamp=timestamp, title=title, created_at=created_at,
            created_by=created_by, source=folder, extractor=extractor, started_at=now)
    return SnapshotIngest(snapshot_id, url, timestamp, created_at, Path(folder), extractor, now,
                          resumed=False)


def resume_ingest(catalog: Catalog, snapshot_id: str) -> SnapshotIngest:
    """The interrupted ingest of this snapshot, to continue; IngestRefused when there is none."""
    with catalog.reading() as tx:
        state = tx.snapshots.ingest_state(snapshot_id)
    if state is None:
        raise IngestRefused(f"no snapshot {snapshot_id!r} in the catalog")
    if state.complete:
        raise IngestRefused(f"snapshot {snapshot_id} ({state.url} @ {state.timestamp}) is "
                            "complete: nothing to resume")
    if not (state.ingest_source and state.ingest_extractor and state.ingest_started_at):
        raise IngestRefused(f"snapshot {snapshot_id} is incomplete but no ingest into it is "
                            "recorded: nothing to resume")
    if not Path(state.ingest_source).is_dir():
        raise IngestRefused(f"cannot resume snapshot {snapshot_id}: its source folder "
                            f"{state.ingest_source} is gone")
    return _continued(state)


def run_ingest(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
               ingest: SnapshotIngest, batch_size: int = DEFAULT_BATCH_SIZE,
               hardlink: bool = DEFAULT_HARDLINK,
               progress: Callable[[int], object] | None = None) -> SnapshotIngestReport:
    """Store every regular file of the ingest's folder (`ingest_files`), then mark the
    snapshot complete, unless a file was not stored or the snapshot holds none (see the
    report's `complete`: then it stays incomplete, to resume). A resumed ingest skips the
    files already committed (by their path: a file changed since keeps the bytes recorded)
    and checks their links."""
    committed: dict[str, str] = {}
    if ingest.resumed:
        with catalog.reading() as tx:
            committed = tx.snapshots.files_recorded_since(ingest.snapshot_id,
                                                        ingest.started_at)
    errors: list[str] = []
    left_out: list[str] = []
    skipped: dict[str, str] = {}

    def items() -> Iterator[IngestItem]:
        for item in walk_directory(ingest.snapshot_id, ingest.extractor, ingest.source, errors=errors,
                                   special=left_out):
            sha256 = committed.get(item.relative_path)
            if sha256 is None:
                yield item
            else:
                skipped[item.relative_path] = sha256

    report = ingest_files(catalog, primary, views, work=work, items=items(), batch_size=batch_size,
                          hardlink=hardlink, progress=progress)
    report.errors[:0] = errors
    if ingest.resumed:  # the interrupted ingest may have stopped between a commit and its links
        outcomes = _relink(catalog, primary, views, work=work, snapshot_id=ingest.snapshot_id, files=skipped)
        report.links_created += outcomes["created"]
        report.links_fixed += outcomes["fixed"]
        report.link_conflicts += outcomes["conflict"]
        if progress and skipped:
            progress(len(skipped))
    with catalog.transaction() as tx:
        complete = not report.errors and tx.snapshots.has_files(ingest.snapshot_id)
        if complete:
            tx.snapshots.mark_complete(ingest.snapshot_id, utcnow())
    return SnapshotIngestReport(ingest, report, len(skipped), complete=complete,
                                left_out=left_out)


@dataclass(frozen=True)
class Incomplete:
    """How many snapshots are incomplete, and the oldest of them."""

    count: int
    oldest: list[IngestState]


def find_incomplete(catalog: Catalog, *, created_between: tuple[datetime, datetime] | None = None,
                    limit: int = 20) -> Incomplete:
    """The snapshots an ingest is filling or an interrupted one left partial (optionally of
    those created in [start, end)): their count and the `limit` oldest."""
    with catalog.reading() as tx:
        return Incomplete(tx.snapshots.count_incomplete(created_between),
                          tx.snapshots.incomplete_snapshots(limit=limit,
                                                          created_between=created_between))


def _relink(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
            snapshot_id: str, files: dict[str, str]) -> Counter[str]:
    """The view links of these recorded files (relative path -> sha256) and the snapshot's
    folder links, made where missing or wrong."""
    home = views.file_view
    if home is None or not views.enabled:
        return Counter()
    with catalog.reading() as tx:
        place = places_for(tx, [snapshot_id])[snapshot_id]
    folder = view_dir(home, place)
    links = [(f"{folder}/{rel}", sha256) for rel, sha256 in sorted(files.items())]
    return ensure_links(primary, views, work, links=links, aliases=(), folder_links=views.folder_links(place))


__all__ = ["Incomplete", "IngestRefused", "SnapshotIngest", "SnapshotIngestReport", "check_extractor",
           "find_incomplete", "open_ingest",
           "resume_command", "resume_ingest", "run_ingest"]
