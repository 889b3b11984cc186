"""Archiving fetched pages: bodies into the blob store, page-fetch index segments, summaries.

Plain Python; `frontier_service.archiving.events` (import it explicitly) is the one module
that talks to Dagster.
"""

from frontier_service.archiving.archiver import ArchivedPage, Archiver, SegmentSummary
from frontier_service.archiving.page_index import (
    PageIndexWriter,
    SegmentFile,
    iter_records,
    list_segments,
    validate_session_id,
)
from frontier_service.archiving.page_record import page_record, request_entry

__all__ = [
    "ArchivedPage",
    "Archiver",
    "PageIndexWriter",
    "SegmentFile",
    "SegmentSummary",
    "iter_records",
    "list_segments",
    "page_record",
    "request_entry",
    "validate_session_id",
]
