"""Adopt a batch of legacy records into the catalog: find or create, reconcile, apply.

A record is one folder (with its index.json and/or ArchiveBox's index.sqlite3 row) or an
index.sqlite3 row without a folder. The folder name is the snapshot's timestamp: it is where
the files are. A folder is matched to the snapshot with its url and timestamp. A folder whose
index.json names a snapshot that lives elsewhere (same url and crawl id, or same url and the
index.json's timestamp) becomes its own snapshot, counted as a duplicate: exact duplicates
are merged later by `merge_duplicates`, which unions their files.
A `0.x` record (index.sqlite3 only) whose folder turns up is relabelled with that folder's
version.

ArchiveBox's identity is kept: a new snapshot's id is ArchiveBox's (index.sqlite3 first,
then index.json), `created_at` its `added`, `archived_updated_at` its `updated`, results
keep their ids and timings. A folder without any id (0.4-0.5) gets a stable one derived
from its timestamp and url. An id the catalog already gives another snapshot (a second
collection whose ids overlap) is reported and the folder left alone, never merged.
Nothing is ever written into the folder: reconciled values live in the catalog.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archive_pipelines.catalog import CatalogTransaction, SnapshotRow, utcnow
from archive_pipelines.legacy.archive_result import LegacyResult
from archive_pipelines.legacy.index_json import LegacyIndex
from archive_pipelines.legacy.reconcile import CatalogSnapshotView, reconcile
from archive_pipelines.legacy.sqlite_index import ArchiveBoxSnapshot
from archive_pipelines.migration.fs_versions import NO_FOLDER
from archive_pipelines.migration.reconcile_rows import catalog_views, result_row

IMPORTED, RECONCILED, DUPLICATE, ID_TAKEN = "imported", "reconciled", "duplicate", "id_taken"
# Ids derived for folders that carry none: uuid5 of this namespace and "<timestamp> <url>".
FOLDER_ID_NAMESPACE = uuid.UUID("6f1c2b7e-3d4a-5e8f-9a0b-1c2d3e4f5a6b")
MAX_TAG_CHARS = 255
MAX_CRAWL_ID_CHARS = 64


@dataclass(frozen=True)
class LegacyRecord:
    """What one legacy source says about a snapshot, cleaned for the catalog."""

    url: str
    timestamp: str
    title: str | None
    tags: tuple[str, ...]
    results: Mapping[str, tuple[LegacyResult, ...]]
    crawl_id: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    snapshot_id: str | None = None  # ArchiveBox's, dashed, when it is a UUID


@dataclass(frozen=True)
class FolderRecord:
    """One thing to adopt: the folder (its name is the timestamp) and its sources.

    `index` is a valid index.json (None when missing or unusable). `fs_version` labels a
    new snapshot.
    """

    folder: Path
    fs_version: str
    index: LegacyIndex | None = None
    sqlite: ArchiveBoxSnapshot | None = None

    @property
    def timestamp(self) -> str:
        return self.folder.name


@dataclass
class Adopted:
    """The outcome for one record (`ID_TAKEN`: not adopted, `problem` says why)."""

    record: FolderRecord
    snapshot_id: str
    outcome: str
    problem: str | None = None
    warnings: list[str] = field(default_factory=list)


def clean_text(value: str | None, limit: int | None = None) -> str | None:
    """No NUL, no lone surrogates (neither database stores them), at most `limit` chars."""
    if value is None:
        return None
    if "\x00" in value:
        value = value.replace("\x00", "")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
    return value[:limit] if limit else value


def _clean_result(result: LegacyResult) -> LegacyResult:
    cmd = tuple(clean_text(part) or "" for part in result.cmd)
    fields = (clean_text(result.cmd_version), clean_text(result.pwd), clean_text(result.output),
              clean_text(result.status) or "unknown")
    if cmd == result.cmd and fields == (result.cmd_version, result.pwd, result.output, result.status):
        return result  # the common case: nothing to clean
    return replace(result, cmd=cmd, cmd_version=fields[0], pwd=fields[1], output=fields[2],
                   status=fields[3])


def _clean_tags(tags: Sequence[str]) -> tuple[str, ...]:
    cleaned = {(clean_text(tag) or "").strip() for tag in tags}
    return tuple(sorted(tag for tag in cleaned if tag and len(tag) <= MAX_TAG_CHARS))


def legacy_record(source: LegacyIndex | ArchiveBoxSnapshot, timestamp: str) -> LegacyRecord:
    crawl = source.crawl_id if isinstance(source, LegacyIndex) else None
    crawl = clean_text(crawl)
    return LegacyRecord(
        url=source.url, timestamp=timestamp, title=clean_text(source.title),
        tags=_clean_tags(source.tags),
        results={name: tuple(_clean_result(r) for r in items) for name, items in source.results.items()},
        crawl_id=crawl if crawl and len(crawl) <= MAX_CRAWL_ID_CHARS else None,
        created=source.created or source.bookmarked, updated=source.updated,
        snapshot_id=_uuid_text(source.snapshot_id))


def _uuid_text(value: str | None) -> str | None:
    """A UUID in its dashed form, or None for anything else (integer ids of old releases)."""
    if not value:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def folder_id(timestamp: str, url: str) -> str:
    """The stable id of a folder that carries none (ArchiveBox 0.4-0.5)."""
    return str(uuid.uuid5(FOLDER_ID_NAMESPACE, f"{timestamp} {url}"))


def _sources(record: FolderRecord) -> list[LegacyRecord]:
    """What the record's sources say, ArchiveBox's database first: it holds the ids, `added`
    and the results' ids (index.json of 0.7 has none); index.json adds what it lacks."""
    found = []
    if record.sqlite is not None:
        found.append(legacy_record(record.sqlite, record.timestamp))
    if record.index is not None:
        index = legacy_record(record.index, record.timestamp)
        if record.index.timestamp != record.timestamp:
            index = replace(index, snapshot_id=None)  # a copy of another folder: not its id
        found.append(index)
    return found


def _folder_time(name: str) -> datetime | None:
    try:
        seconds = float(".".join(name.split(".")[:2]))
        return datetime.fromtimestamp(seconds, UTC) if math.isfinite(seconds) else None
    except (ValueError, OverflowError, OSError):
        return None


def adopt_batch(tx: CatalogTransaction, records: Sequence[FolderRecord], *, created_by: str) -> list[Adopted]:
    """Find or create a snapshot per record and reconcile it; one flush of bulk writes."""
    sources = {id(r): _sources(r) for r in records}
    stamps = {r.timestamp for r in records}
    stamps |= {r.index.timestamp for r in records if r.index is not None}
    by_stamp = _index_rows(tx.adoption.snapshots_by_timestamp(stamps), "timestamp")
    crawls = {s[0].crawl_id for s in sources.values() if s and s[0].crawl_id}
    by_crawl = _index_rows(tx.adoption.snapshots_by_crawl_id(crawls), "crawl_id")
    views = catalog_views(tx, [row for rows in by_stamp.values() for row in rows]
                          + [row for rows in by_crawl.values() for row in rows])
    wanted_ids = {s.snapshot_id for found in sources.values() for s in found if s.snapshot_id}
    wanted_ids |= {folder_id(r.timestamp, found[0].url) for r in records
                   if (found := sources[id(r)])}
    taken = {row.id: row for row in tx.adoption.snapshots_by_id(wanted_ids)}
    writer = _BatchWriter(created_by)
    adopted: list[Adopted] = []
    for record in records:
        first = sources[id(record)][0]
        row, outcome = _match(record, first, by_stamp, by_crawl=by_crawl)
        new_id = None
        if row is None:
            new_id, problem = _new_id(record, sources[id(record)], taken)
            if problem is not None:
                adopted.append(Adopted(record, new_id or "", ID_TAKEN, problem=problem))
                continue
        view = views.get(row.id) if row is not None else None
        item = writer.apply(record, sources[id(record)], row, view=view, outcome=outcome, new_id=new_id)
        adopted.append(item)
        if row is None:  # later records of this batch can be duplicates of it
            new = SnapshotRow(item.snapshot_id, first.url, record.timestamp, None, first.crawl_id,
                              record.fs_version, utcnow())
            taken[new.id] = new
            by_stamp.setdefault((new.url, new.timestamp), []).append(new)
            if new.crawl_id:
                by_crawl.setdefault((new.url, new.crawl_id), []).append(new)
    writer.flush(tx)
    return adopted


def _new_id(record: FolderRecord, sources: Sequence[LegacyRecord],
            taken: Mapping[str, SnapshotRow]) -> tuple[str | None, str | None]:
    """(id, None) for a new snapshot of `record`, or (id, why not) when ArchiveBox's id
    belongs to another snapshot already."""
    given = next((s.snapshot_id for s in sources if s.snapshot_id), None)
    chosen = given or folder_id(record.timestamp, sources[0].url)
    holder = taken.get(chosen)
    if holder is None:
        return chosen, None
    return chosen, (f"snapshot id {chosen} is already the catalog's snapshot of {holder.url} at "
                    f"{holder.timestamp} (a second collection whose ids overlap?); not adopted, "
                    "left in place")


def _index_rows(rows: list[SnapshotRow], key: str) -> dict[tuple[str, str], list[SnapshotRow]]:
    found: dict[tuple[str, str], list[SnapshotRow]] = {}
    for row in rows:  # oldest first
        found.setdefault((row.url, getattr(row, key)), []).append(row)
    return found


def _match(record: FolderRecord, first: LegacyRecord,
           by_stamp: Mapping[tuple[str, str], list[SnapshotRow]],
           *, by_crawl: Mapping[tuple[str, str], list[SnapshotRow]]) -> tuple[SnapshotRow | None, str]:
    rows = by_stamp.get((first.url, record.timestamp))
    if rows:
        return rows[0], RECONCILED
    if first.crawl_id and by_crawl.get((first.url, first.crawl_id)):
        return None, DUPLICATE  # the same capture in another folder: merge_duplicates' work
    if record.index is not None and record.index.timestamp != record.timestamp \
            and by_stamp.get((first.url, record.index.timestamp)):
        return None, DUPLICATE  # a copy of another snapshot's folder
    return None, IMPORTED


class _BatchWriter:
    """Collects the batch's inserts and updates, then writes them in a few bulk statements."""

    def __init__(self, created_by: str) -> None:
        self.created_by = created_by
        self.snapshots: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.tags: list[tuple[str, str]] = []
        self.updates: list[tuple[str, dict[str, Any]]] = []

    def apply(self, record: FolderRecord, sources: list[LegacyRecord], row: SnapshotRow | None,
              *, view: CatalogSnapshotView | None, outcome: str, new_id: str | None) -> Adopted:
        current = view
        new_tags: list[str] = []
        new_results: dict[str, list[LegacyResult]] = {}
        for source in sources:
            merged = reconcile(source, current)
            new_tags.extend(merged.new_tags_for_catalog)
            for name, items in merged.new_results_for_catalog.items():
                new_results.setdefault(name, []).extend(items)
            current = CatalogSnapshotView(url=merged.url, timestamp=record.timestamp,
                                          title=merged.title, tags=merged.tags, results=merged.results)
        assert current is not None
        if row is None:
            assert new_id is not None
            snapshot_id = new_id
            first = sources[0]
            added = next((s.created for s in sources if s.created), None)
            updated = next((s.updated for s in sources if s.updated), None)
            self.snapshots.append({
                "id": snapshot_id, "url": first.url, "timestamp": record.timestamp,
                "title": current.title, "created_by": self.created_by, "crawl_id": first.crawl_id,
                "fs_version": record.fs_version, "updated_at": utcnow(),
                "archived_updated_at": updated,
                "created_at": added or _folder_time(record.timestamp) or utcnow()})
        else:
            snapshot_id = row.id
            changes: dict[str, Any] = {}
            if view is not None and current.title != view.title:
                changes["title"] = current.title
            if row.fs_version == NO_FOLDER and record.fs_version != NO_FOLDER:
                changes["fs_version"] = record.fs_version  # its folder turned up
            if changes:
                self.updates.append((snapshot_id, changes))
        self.tags.extend((snapshot_id, tag) for tag in new_tags)
        for name, runs in new_results.items():
            self.results.extend(result_row(snapshot_id, name, r) for r in runs)
        return Adopted(record, snapshot_id, outcome)

    def flush(self, tx: CatalogTransaction) -> None:
        tx.adoption.insert_snapshots(self.snapshots)
        for snapshot_id, changes in self.updates:
            tx.adoption.update_snapshot(snapshot_id, **changes)
        ids = tx.snapshots.tag_ids({name for _sid, name in self.tags})
        tx.snapshots.add_tags([(sid, ids[name]) for sid, name in self.tags])
        tx.adoption.add_results(self.results)
