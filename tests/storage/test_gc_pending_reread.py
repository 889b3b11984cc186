"""gc beside a crawl that closes segments while it runs: a body that a segment closed between
two of gc's batches names, or a journal closed into a segment while gc reads what is
pending, is kept, never collected."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

import archive_pipelines.captures.pending as pending_module
from archive_pipelines.captures.pending import pending_body_hashes
from archive_pipelines.catalog.models import Blob
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.gc import GcItem, collect_garbage
from archive_pipelines.storage.removal import delete_snapshot
from tests.helpers.storage import add_snapshot, sha, write_tree

SESSION = str(uuid.UUID(int=7))
DAY = "2026-01-02"


def record(body_sha: str, url: str = "https://example.com/reused") -> bytes:
    """One crawl record (a line of a journal or segment) whose response body is `body_sha`."""
    return json.dumps({"requests": [{"url": url, "response": {
        "status": 200, "body_hash": f"sha256:{body_sha}"}}]}).encode() + b"\n"


def open_journal(data_dir: Path, line: bytes, generation: int = 1) -> Path:
    """A running crawler's journal holding `line` (a segment not written yet)."""
    journals = data_dir / "sessions" / ".journals"
    journals.mkdir(parents=True, exist_ok=True)
    journal = journals / f"{SESSION}.{generation:06d}.journal"
    journal.write_bytes(line)
    return journal


def close_segment(data_dir: Path, line: bytes, number: int = 1,
                  journal: Path | None = None) -> Path:
    """Write a segment as the crawler closes one: a hidden temp file, linked to its name
    once whole, then the journal that held its records removed."""
    folder = data_dir / "sessions" / DAY / SESSION
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"20260102T120000000000Z_{number:06d}.jsonl"
    temp = folder / f".{final.name}.tmp"
    temp.write_bytes(line)
    os.link(temp, final)
    temp.unlink()
    if journal is not None:
        journal.unlink()
    return final


def unreferenced_blobs(storage: StorageParts, count: int) -> list[str]:
    """`count` blobs ingested and then released (ref count 0), in the order gc pages them."""
    files = {f"page{i}.html": f"<p>page {i} of a deleted snapshot</p>".encode()
             for i in range(count)}
    sid = add_snapshot(storage)
    folder = write_tree(storage.layout.root / "incoming", files)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="wget", directory=folder)
    assert report.errors == [] and report.new_blobs == count
    delete_snapshot(storage.catalog, storage.views, sid)
    with storage.catalog.reading() as tx:
        ordered = list(tx.session.scalars(select(Blob.sha256).order_by(Blob.id)))
    assert sorted(ordered) == sorted(sha(data) for data in files.values())
    return ordered  # in the order gc pages them


def test_a_segment_closed_between_gc_batches_keeps_its_body(sqlite_storage: StorageParts) -> None:
    """gc pages unreferenced blobs two at a time; after it removed the first one, a crawler
    reuses the last (still stored) as a body and closes a segment naming it. The re-read of
    the pending bodies before each batch must see that segment."""
    storage = sqlite_storage
    blobs = unreferenced_blobs(storage, 6)
    reused = blobs[-1]
    removed: list[str] = []

    def crawler_closes_a_segment(item: GcItem) -> None:
        if not removed:  # once, in the first batch
            close_segment(storage.layout.root, record(reused))
        removed.append(item.name)

    report = collect_garbage(storage.catalog, storage.primary, storage.views.farm,
                             layout=storage.layout, grace_hours=0, batch=2,
                             on_item=crawler_closes_a_segment)

    assert report.candidates == len(blobs)
    assert reused not in removed, "gc removed a body a segment closed during its run names"
    assert storage.primary.store.exists(reused)
    assert report.kept_for_crawl == 1 and sorted(removed) == sorted(blobs[:-1])


def _closing_after(real: Callable[..., object], close: Callable[[], None]
                   ) -> Callable[..., object]:
    """`real`, with the crawler closing its segment right after it returned."""
    def listed_then_closed(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)
        close()
        return found
    return listed_then_closed


@pytest.mark.unit
@pytest.mark.parametrize("after", ["find_segments", "find_journals"])
def test_a_journal_closed_into_a_segment_while_pending_is_read_is_seen(
        sqlite_storage: StorageParts, monkeypatch: pytest.MonkeyPatch, after: str) -> None:
    """The crawler writes the segment, then removes the journal: whichever listing the
    closing follows, the body is in one of the files read."""
    storage = sqlite_storage
    data_dir = storage.layout.root
    body = storage.primary.store.put_bytes(b"<html>a body fetched by a running crawl</html>")
    line = record(body.sha256)
    journal = open_journal(data_dir, line)
    closed: list[Path] = []

    def close() -> None:
        if not closed:
            closed.append(close_segment(data_dir, line, journal=journal))
    monkeypatch.setattr(pending_module, after, _closing_after(getattr(pending_module, after), close))

    found = pending_body_hashes(storage.catalog, data_dir)

    assert closed and not journal.exists(), "the crawler closed its segment during the read"
    assert body.sha256 in found, f"a journal closed into a segment right after {after} was missed"
