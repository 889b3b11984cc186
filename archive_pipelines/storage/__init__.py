"""Storage operations over the catalog, the primary blob store and the views.

Ingest (dedup + exact ref counts + views), verify and repair, garbage collection,
view rebuilds and migration of legacy folders into the store.
"""

from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.ingest import IngestItem, IngestReport

__all__ = ["IngestItem", "IngestReport", "Storage"]
