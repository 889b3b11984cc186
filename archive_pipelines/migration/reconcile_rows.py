"""The catalog's side of reconcile: its rows as legacy values, and legacy results as rows.

`catalog.adoption` speaks in its own rows (`RecordedSnapshot`, `ResultRow`); reconcile's
merge rules (`legacy.reconcile`) speak in `LegacyResult`s. The conversions live here, with
the migration that needs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from archive_pipelines.catalog import CatalogTransaction, ResultRow, SnapshotRow
from archive_pipelines.legacy.archive_result import LegacyResult
from archive_pipelines.legacy.reconcile import CatalogSnapshotView, same_run


def to_legacy(result: ResultRow) -> LegacyResult:
    return LegacyResult(cmd=result.cmd, cmd_version=result.cmd_version, pwd=result.pwd,
                        output=result.output, status=result.status, start_ts=result.start_ts,
                        end_ts=result.end_ts, archivebox_id=result.archivebox_id,
                        archivebox_uuid=result.archivebox_uuid)


def catalog_views(tx: CatalogTransaction, rows: Sequence[SnapshotRow]) -> dict[str, CatalogSnapshotView]:
    """Reconcile's view (title, tags, results) of each snapshot."""
    return {
        sid: CatalogSnapshotView(
            url=found.row.url, timestamp=found.row.timestamp, title=found.row.title,
            tags=found.tags,
            results={name: tuple(to_legacy(r) for r in items)
                     for name, items in found.results.items()})
        for sid, found in tx.adoption.recorded_snapshots(rows).items()
    }


def same_recorded_run(a: ResultRow, b: ResultRow) -> bool:
    """Two recorded results of one extractor describe the same run (`reconcile.same_run`)."""
    return same_run(to_legacy(a), to_legacy(b))


def result_row(snapshot_id: str, extractor: str, result: LegacyResult) -> dict[str, Any]:
    """An archive_result row for a legacy result (lengths cut to the columns)."""
    return {"snapshot_id": snapshot_id, "extractor": extractor[:64], "status": result.status[:16],
            "output": result.output, "cmd": list(result.cmd),
            "cmd_version": result.cmd_version[:128] if result.cmd_version else None,
            "pwd": result.pwd, "start_ts": result.start_ts, "end_ts": result.end_ts,
            "archivebox_id": result.archivebox_id, "archivebox_uuid": result.archivebox_uuid}
