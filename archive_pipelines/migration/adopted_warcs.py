"""An adopted snapshot's own WARCs indexed once its files are in the store, so `captures URL`
finds what its wget run fetched. A WARC that cannot be read is reported beside the migration,
never a reason for it to fail: the snapshot's files are stored and verified either way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.catalog import Catalog
from archive_pipelines.datadir import DataDir
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet
from archive_pipelines.warc.importer import ImportReport, ImportTarget
from archive_pipelines.warc.snapshot_warcs import index_snapshot_warcs


@dataclass
class AdoptedWarcs:
    """What indexing the migrated snapshots' WARCs did."""

    indexed: int = 0  # WARC files whose records became captures now
    captures: int = 0
    with_problems: int = 0  # WARC files with unreadable records (the lines say where)
    problems: list[str] = field(default_factory=list)


def warc_target(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                layout: DataDir) -> ImportTarget:
    """Where the snapshots' WARC captures go: this catalog and primary store."""
    return ImportTarget(catalog, CapturePrimary(primary.store, primary.store_id, views.farm,
                                                views.crawl), layout.root)


def index_adopted_warcs(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                        layout: DataDir, snapshot_ids: Sequence[str]) -> AdoptedWarcs:
    """Index the WARCs of these (migrated) snapshots; never raises for a WARC's content."""
    report = ImportReport()
    done = index_snapshot_warcs(warc_target(catalog, primary, views, layout=layout),
                                snapshot_ids=snapshot_ids, report=report)
    return AdoptedWarcs(done.indexed, report.captures, len(done.with_problems), report.problems)
