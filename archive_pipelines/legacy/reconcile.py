"""Merge rules between a snapshot's index.json (or index.sqlite3 row) and its catalog record.

Pure functions: the caller applies `Reconciled` to the catalog and writes index.json back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from archive_pipelines.legacy.archive_result import LegacyResult, sort_key
from archive_pipelines.legacy.fields import unique_sorted


class SnapshotRecord(Protocol):
    """What reconcile reads from a legacy source (`LegacyIndex`, `ArchiveBoxSnapshot`)."""

    @property
    def url(self) -> str: ...
    @property
    def timestamp(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def results(self) -> Mapping[str, Sequence[LegacyResult]]: ...


@dataclass(frozen=True)
class CatalogSnapshotView:
    """The catalog's side of one snapshot, as far as reconcile needs it."""

    url: str
    timestamp: str
    title: str | None = None
    tags: Sequence[str] = ()
    results: Mapping[str, Sequence[LegacyResult]] = field(default_factory=dict)


@dataclass(frozen=True)
class SideChanges:
    """Which parts of one side differ from the reconciled values (and must be written)."""

    title: bool = False
    tags: bool = False
    results: bool = False

    @property
    def any(self) -> bool:
        return self.title or self.tags or self.results


@dataclass(frozen=True)
class Reconciled:
    """The merged snapshot, what the catalog lacks, and what changed on each side."""

    url: str
    timestamp: str
    title: str | None
    tags: tuple[str, ...]
    results: dict[str, tuple[LegacyResult, ...]]
    new_tags_for_catalog: tuple[str, ...]
    new_results_for_catalog: dict[str, tuple[LegacyResult, ...]]
    catalog: SideChanges
    index: SideChanges


def best_title(url: str, *titles: str | None) -> str | None:
    """The longest trimmed title that is not empty and not the URL; earlier wins a tie."""
    candidates = [t.strip() for t in titles if t and t.strip() and t.strip() != url.strip()]
    return max(candidates, key=len) if candidates else None


def same_run(a: LegacyResult, b: LegacyResult) -> bool:
    """Two results of one extractor describe the same run: same start time or same output."""
    if a.start_ts is not None and b.start_ts is not None and _utc(a.start_ts) == _utc(b.start_ts):
        return True
    return bool(a.output) and a.output == b.output


def merge_results(
    catalog: Mapping[str, Sequence[LegacyResult]], index: Mapping[str, Sequence[LegacyResult]]
) -> tuple[dict[str, tuple[LegacyResult, ...]], dict[str, tuple[LegacyResult, ...]]]:
    """`(merged, new_for_catalog)`: catalog results plus index results of runs it lacks."""
    merged: dict[str, list[LegacyResult]] = {name: list(items) for name, items in catalog.items()}
    added: dict[str, list[LegacyResult]] = {}
    for name, items in index.items():
        bucket = merged.setdefault(name, [])
        for result in items:
            if any(same_run(result, kept) for kept in bucket):
                continue  # the catalog (or an earlier index entry) already has this run
            bucket.append(result)
            added.setdefault(name, []).append(result)
    return _ordered(merged), _ordered(added)


def reconcile(index: SnapshotRecord, catalog: CatalogSnapshotView | None) -> Reconciled:
    """Merge a legacy record with the catalog's; the catalog wins every conflict.

    Title: the longest that is not the URL. Tags: the union. Results: merged by extractor;
    an index result describing a run the catalog already has (same start time or output)
    is dropped. `catalog` None means the snapshot is not in the catalog yet.
    """
    side = catalog or CatalogSnapshotView(url=index.url, timestamp="")
    url = side.url if catalog else index.url
    title = best_title(url, side.title, index.title)
    tags = unique_sorted([*side.tags, *index.tags])
    results, added = merge_results(side.results, index.results)
    known_tags = set(side.tags)
    new_tags = tuple(tag for tag in tags if tag not in known_tags)
    return Reconciled(
        url=url,
        timestamp=side.timestamp if catalog else index.timestamp,
        title=title,
        tags=tags,
        results=results,
        new_tags_for_catalog=new_tags,
        new_results_for_catalog=added,
        catalog=SideChanges(
            title=side.title != title,
            tags=tuple(sorted(set(side.tags))) != tags,
            results=bool(added),
        ),
        index=SideChanges(
            title=index.title != title,
            tags=tuple(sorted(set(index.tags))) != tags,
            results=_ordered({k: list(v) for k, v in index.results.items() if v}) != results,
        ),
    )


def _ordered(results: Mapping[str, list[LegacyResult]]) -> dict[str, tuple[LegacyResult, ...]]:
    return {
        name: tuple(sorted(items, key=lambda r: _utc(sort_key(r))))
        for name, items in sorted(results.items())
        if items
    }


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
