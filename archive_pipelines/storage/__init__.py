"""Storage operations over the catalog, the primary blob store and the views.

Ingest (dedup + exact ref counts + views), verify and repair, garbage collection,
view rebuilds and migration of legacy folders into the store.

Domain functions take the parts they use (`Catalog`, `PrimaryStore`, `ViewSet`, `FileWork`,
`DataDir`), which `storage.assembly.open_storage` builds from settings for the CLI, the
Dagster resources and the tests.

`IngestItem` and `IngestReport` (from `storage.file_ingest`) load on first use: ingest's worker
processes import `storage.file_workers`, which must not pull in the catalog (SQLAlchemy,
Alembic) with it; `storage.primary` and `storage.file_work` import no catalog either.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archive_pipelines.storage.file_ingest import IngestItem, IngestReport

_HOMES = {"IngestItem": "file_ingest", "IngestReport": "file_ingest"}
__all__ = ["IngestItem", "IngestReport"]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
