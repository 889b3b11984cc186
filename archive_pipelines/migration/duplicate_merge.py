"""Merge exact duplicates: snapshots with the same url and timestamp, or url and crawl id.

Only exact duplicates: the same url captured at different times or in different crawls is
not one. Per group the oldest (created_at, id) is kept; the others' files are re-pointed to
it (ref counts unchanged; where both have a path, the keeper's file stays and the other's
reference is released), their tags and results are added to it, then they are deleted with
`storage.removal.delete_snapshot` (references and view links released).

Members must be in the CAS layout first (their files are catalog rows): a member with a
real legacy folder is migrated, and if that fails the group waits for a later run.
Streaming: groups come from a GROUP BY ... HAVING count(*) > 1 query, one keyset page of
`batch_size` groups at a time, and one group's members are loaded at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.catalog import Catalog, DuplicateKey, MergedRows, SnapshotRow
from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.datadir import DataDir
from archive_pipelines.legacy.reconcile import best_title
from archive_pipelines.legacy.versions import CAS
from archive_pipelines.migration.reconcile_rows import same_recorded_run
from archive_pipelines.migration.steps import migrate_snapshot
from archive_pipelines.storage.file_ingest import DEFAULT_BATCH_SIZE
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.removal import delete_snapshot
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import SnapshotPlace, ViewSet, compat_link_target, view_dir, view_path

KEYS: tuple[DuplicateKey, ...] = ("timestamp", "crawl_id")


@dataclass
class MergeReport(Counts):
    """Duplicate groups found, snapshots merged, file rows moved, groups left for later."""

    groups: int = 0  # duplicate groups found
    merged: int = 0  # duplicate snapshots merged into their keeper and deleted
    files_moved: int = 0  # file rows re-pointed to a keeper
    skipped: int = 0  # groups left for a later run (a member could not be migrated)
    errors: list[str] = field(default_factory=list)

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {**self.counts(), "errors": len(self.errors)}

    def log_lines(self) -> list[str]:
        """What a run log says: groups found and snapshots merged."""
        line = (f"{self.groups:,} group(s) of exact duplicates found: {self.merged:,} "
                f"snapshot(s) merged into the oldest of their group, {self.files_moved:,} "
                "file rows moved")
        if self.skipped:
            line += f"; {self.skipped:,} group(s) left for a later run"
        return [line]


def merge_duplicates(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                     layout: DataDir, batch_size: int = 100,
                     ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> MergeReport:
    """Find and merge every exact-duplicate group, `batch_size` groups per page (a member
    still in a legacy folder is migrated first, `ingest_batch_size` files per transaction)."""
    report = MergeReport()
    for key in KEYS:
        after: tuple[str, str] | None = None
        while True:
            with catalog.reading() as tx:
                page = tx.adoption.duplicate_groups(key, after, batch_size)
            for value, url in page:
                _merge_group(catalog, primary, views, work=work, layout=layout, key=key, value=value, url=url,
                             report=report, ingest_batch_size=ingest_batch_size)
            if len(page) < batch_size:
                break
            after = page[-1]
    return report


def _merge_group(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                 layout: DataDir, key: DuplicateKey, value: str, url: str, report: MergeReport,
                 ingest_batch_size: int) -> None:
    with catalog.reading() as tx:
        members = tx.adoption.group_members(key, value, url)
    if len(members) < 2:
        return  # merged meanwhile
    report.groups += 1
    for member in members:
        problem = _not_ready(catalog, primary, views, work=work, layout=layout, member=member,
                             ingest_batch_size=ingest_batch_size)
        if problem is not None:
            report.skipped += 1
            report.errors.append(f"{key}={value} {url}: {member.id} {problem}; group left for later")
            return
    keeper = members[0]
    for duplicate in members[1:]:
        merged = _merge_pair(catalog, primary, views, layout=layout, keeper=keeper, duplicate=duplicate)
        if merged.differing:
            report.skipped += 1
            report.errors.append(
                f"{key}={value} {url}: {duplicate.id} has other bytes than {keeper.id} at "
                f"{len(merged.differing)} path(s) (e.g. {merged.differing[0]}); both kept")
            continue
        report.merged += 1
        report.files_moved += len(merged.moved_files)


def _not_ready(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
               layout: DataDir, member: SnapshotRow, ingest_batch_size: int) -> str | None:
    """None when the member's files are all catalog rows (migrating it first if needed)."""
    if member.fs_version == CAS:
        return None
    folder = layout.archive / member.timestamp
    if folder.is_symlink() or not folder.exists():
        return None  # no folder of its own: whatever files it has are catalog rows
    step = migrate_snapshot(catalog, primary, views, work=work, layout=layout, snapshot_id=member.id,
                            ingest_batch_size=ingest_batch_size)
    if step.to_version == CAS:
        return None
    return f"could not be migrated ({'; '.join(step.errors[:2]) or step.skipped})"


def _merge_pair(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, layout: DataDir,
                keeper: SnapshotRow, duplicate: SnapshotRow) -> MergedRows:
    with catalog.transaction() as tx:
        merged = tx.adoption.merge_snapshot_rows(keeper.id, duplicate.id,
                                     same_run=same_recorded_run)
        if merged.differing:
            return merged
        title = best_title(keeper.url, keeper.title, duplicate.title)
        if title != keeper.title:
            tx.adoption.update_snapshot(keeper.id, title=title)
        places = places_for(tx, [keeper.id, duplicate.id])
    keeper_place, dup_place = places[keeper.id], places[duplicate.id]
    farm, home, store = views.farm, views.file_view, primary.store
    # Views exist only on a local primary (an S3 one has none to move links in).
    if home is not None and merged.moved_files and isinstance(store, LocalBlobStore):
        for record in merged.moved_files:
            farm.aliases.ensure(record.sha256, store.local_path(record.sha256))
            farm.remove_link(view_path(home, dup_place, record.relative_path))
            farm.ensure_file_link(view_path(home, keeper_place, record.relative_path),
                                  record.sha256, store.object_path(record.sha256))
        for link, target in views.folder_links(keeper_place):
            farm.ensure_folder_link(link, target)
    delete_snapshot(catalog, views, duplicate.id)
    _repoint_compat_link(catalog, layout, duplicate, dup_place=dup_place, keeper_place=keeper_place)
    return merged


def _repoint_compat_link(catalog: Catalog, layout: DataDir, duplicate: SnapshotRow, *,
                         dup_place: SnapshotPlace,
                         keeper_place: SnapshotPlace) -> None:
    """`archive/<dup timestamp>`, if it links to the deleted snapshot's by_timestamp folder,
    now links to the timestamp's owner (`compat_link_target`) or, when no snapshot has that
    timestamp any more, to the keeper's by_timestamp folder."""
    link = layout.archive / duplicate.timestamp
    if not link.is_symlink() or os.readlink(link) != view_dir("by_timestamp", dup_place):
        return
    with catalog.reading() as tx:
        still_used = bool(tx.adoption.snapshots_by_timestamp([duplicate.timestamp]))
    target = (compat_link_target(duplicate.timestamp) if still_used
              else view_dir("by_timestamp", keeper_place))
    if os.readlink(link) == target:
        return
    temp = Path(f"{link}.~ap-link")
    if temp.is_symlink():
        temp.unlink()
    os.symlink(target, temp)
    os.replace(temp, link)
