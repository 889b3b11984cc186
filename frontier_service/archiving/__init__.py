"""Archiving fetched pages: bodies into the blob store, page records into page-fetch index
segments, the page journal that keeps records not yet in a segment, and when segments close.

`Archiver` (archiver.py) stores a fetch's body and makes its record (page_record.py);
`JournaledIndexWriter` (page_journal.py) appends each record to the session's journal
before a domain's read offset may move, and writes segments (page_index.py);
`SegmentCloser` (segment_closer.py) closes a segment when full, old or idle (idle_close.py).

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
