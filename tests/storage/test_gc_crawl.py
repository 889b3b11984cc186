"""gc and verify beside a real crawl: bodies that segments not yet ingested (or the crawler's
journals) name are kept and reported as pending, never collected; once ingested they are
referenced blobs like any other."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog.models import Blob
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.gc import GcReport, collect_garbage
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.captures import capture_primary, parts_of
from tests.helpers.cli import run_cli
from tests.helpers.crawls import Crawled


def crawled_bodies(data_dir: Path) -> set[str]:
    """The body hashes the crawl's segments name."""
    found = set()
    for path in data_dir.glob("sessions/*/*/*.jsonl"):
        for line in path.read_bytes().splitlines():
            for request in json.loads(line)["requests"]:
                body = (request.get("response") or {}).get("body_hash")
                if body:
                    found.add(body.removeprefix("sha256:"))
    assert len(found) > 100
    return found


def gc(parts: StorageParts, *, untracked: bool) -> GcReport:
    return collect_garbage(parts.catalog, parts.primary, parts.views.farm, layout=parts.layout,
                           grace_hours=0, untracked=untracked)


def journal_only_body(parts: StorageParts, data_dir: Path, session_id: str) -> str:
    """A body in the store that only a crawler journal (a segment still open) names."""
    body = b"<html>fetched after the last segment closed</html>"
    put = parts.primary.store.put_bytes(body)
    record = json.loads(next(data_dir.glob("sessions/*/*/*.jsonl")).read_bytes().splitlines()[0])
    record["requests"][0]["response"]["body_hash"] = f"sha256:{put.sha256}"
    journals = data_dir / "sessions" / ".journals"
    journals.mkdir(exist_ok=True)
    (journals / f"{session_id}.7.journal").write_text(json.dumps(record) + "\n")
    return put.sha256


def test_gc_untracked_keeps_bodies_of_segments_not_ingested(crawled: Crawled,
                                                             crawl_data: Path) -> None:
    bodies = crawled_bodies(crawl_data)
    with parts_of(crawl_data) as parts:
        store = parts.primary.store
        assert all(store.exists(sha) for sha in bodies)
        journaled = journal_only_body(parts, crawl_data, crawled.report.session_id)
        stray = store.put_bytes(b"a stray file nobody names " + os.urandom(8)).sha256

        report = gc(parts, untracked=True)
        assert report.kept_for_crawl == len(bodies) + 1
        assert report.untracked.count == 1  # the stray file, and only it
        assert not store.exists(stray)
        assert all(store.exists(sha) for sha in bodies) and store.exists(journaled)

        # the journal was what kept its body: without it, that body is a stray file too
        for journal in (crawl_data / "sessions" / ".journals").iterdir():
            journal.unlink()
        again = gc(parts, untracked=True)
        assert (again.kept_for_crawl, again.untracked.count) == (len(bodies), 1)
        assert not store.exists(journaled)
        assert all(store.exists(sha) for sha in bodies)


def test_after_ingest_gc_removes_nothing_referenced(crawl_data: Path) -> None:
    bodies = crawled_bodies(crawl_data)
    with parts_of(crawl_data) as parts:
        ingest_crawl(parts.catalog, capture_primary(parts), crawl_data)
        plain = gc(parts, untracked=False)
        assert (plain.candidates, plain.blobs.count, plain.kept_for_crawl) == (0, 0, 0)
        every = gc(parts, untracked=True)
        assert (every.untracked.count, every.kept_for_crawl) == (0, 0)
        with parts.catalog.reading() as tx:
            blobs = list(tx.session.scalars(select(Blob.sha256)))
        assert bodies < set(blobs)  # and the segment files
        assert all(parts.primary.store.exists(sha) for sha in blobs)
        report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                                data_dir=crawl_data)
        assert report.problems == 0 and report.found["crawl_pending"] == 0, report.examples


def test_verify_before_ingest_reports_pending_bodies_not_health(crawled: Crawled,
                                                                crawl_data: Path) -> None:
    bodies = crawled_bodies(crawl_data)
    with parts_of(crawl_data) as parts:
        journaled = journal_only_body(parts, crawl_data, crawled.report.session_id)
        report = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert report.found["crawl_pending"] == len(bodies) + 1
        assert report.found["untracked_blob_files"] == 0 and report.problems == 0
        # without the data dir nothing tells a crawled body from a stray file
        blind = verify_storage(parts.catalog, parts.primary, parts.views)
        assert blind.found["untracked_blob_files"] == len(bodies) + 1 == blind.problems

    pending = run_cli("--data-dir", str(crawl_data), "verify")
    assert pending.returncode == 0, pending.stderr
    assert "healthy" not in pending.stdout
    assert f"{len(bodies) + 1:,} crawled bodies are not in the catalog yet" in pending.stdout

    # the journal was what made its body pending: without it, the body is a stray file
    (crawl_data / "sessions" / ".journals" / f"{crawled.report.session_id}.7.journal").unlink()
    found = run_cli("--data-dir", str(crawl_data), "verify")
    assert found.returncode == 1 and "healthy" not in found.stdout
    assert "untracked_blob_files" in found.stdout and "1 problem(s) left" in found.stdout
    with parts_of(crawl_data) as parts:
        unnamed = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
    assert unnamed.examples["untracked_blob_files"] == [journaled]
    assert unnamed.found["crawl_pending"] == len(bodies)


def test_a_segment_stored_before_its_ingest_committed_is_pending_not_untracked(
        crawl_data: Path) -> None:
    """ingest-crawl stores a segment's bytes as a blob before its transaction records them:
    killed in between (or a catalog restored from a dump older than the ingest), the blob has
    no row until ingest-crawl runs again. It is pending, like the bodies the segment names."""
    bodies = crawled_bodies(crawl_data)
    segment = sorted(crawl_data.glob("sessions/*/*/*.jsonl"))[0]
    with parts_of(crawl_data) as parts:
        stored = parts.primary.store.put_bytes(segment.read_bytes()).sha256
        report = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert report.found["crawl_pending"] == len(bodies) + 1, report.examples
        assert report.found["untracked_blob_files"] == 0 and report.problems == 0
        assert gc(parts, untracked=True).untracked.count == 0
        assert parts.primary.store.exists(stored)

        ingest_crawl(parts.catalog, capture_primary(parts), crawl_data)
        with parts.catalog.reading() as tx:
            assert tx.blobs.known_hashes([stored]) == {stored}
        after = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert after.problems == 0 and after.found["crawl_pending"] == 0, after.examples
