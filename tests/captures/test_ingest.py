"""Segment ingest on a real crawl: every fetched URL becomes a capture holding the web's bytes;
reruns change nothing; cut and hostile segments are reported and ingested only as far as
they are whole and sound; nothing outside the data dir is read or written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, select

from archive_pipelines.captures.lookup import find_url
from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.captures.segment_files import find_segments
from archive_pipelines.captures.segment_ingest import CrawlIngestReport, ingest_crawl, ingest_segment
from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob, BlobCopy, CrawlSegment, CrawlSession, PageFetch
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.captures import capture_primary, parts_of
from tests.helpers.cli import run_cli
from tests.helpers.crawls import Crawled, refetch


def ingest(parts: StorageParts) -> CrawlIngestReport:
    return ingest_crawl(parts.catalog, capture_primary(parts), parts.layout.root)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def exact_rows(catalog: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the capture tables and of blob / blob_copy, ids and times included."""
    rows = {}
    with catalog.reading() as tx:
        for model in (PageFetch, CrawlSegment, CrawlSession, Blob, BlobCopy):
            table = cast(Table, model.__table__)
            rows[table.name] = [tuple(r) for r in tx.session.execute(
                select(table).order_by(*table.primary_key.columns))]
    return rows


def answered(crawled: Crawled) -> list[tuple[str, str, int]]:
    """(host, path and query, status) of every page or asset request the web answered."""
    found = [(r.host, r.path_qs, r.status) for r in crawled.requests
             if r.status != 0 and r.path_qs != "/robots.txt"]
    assert len(found) > 300
    return found


def canonical(url: str) -> str:
    key = url_key(url)
    assert key is not None, url
    return key[0]


def test_every_url_the_web_answered_is_a_capture_of_its_bytes(
        crawled: Crawled, crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        report = ingest(parts)
        assert (report.total("rejected"), report.total("missing_bodies"),
                report.total("cut_bytes"), report.failed) == (0, 0, 0, [])
        assert len(report.ingested) == crawled.report.segments
        lines = sum(len(p.read_bytes().splitlines()) for p in crawl_data.glob("sessions/*/*/*.jsonl"))
        assert report.total("pages") == report.total("records") == lines
        requests = answered(crawled)

        def check(request: tuple[str, str, int]) -> str:
            host, path_qs, status = request
            url = f"http://{host}{path_qs}"
            _canonical, found = find_url(parts.catalog, url)
            fetched = [c for c in found if c.kind in ("page", "request")]
            assert fetched, f"{url}: no capture"
            capture = fetched[0]
            assert capture.status_code == status, url
            web_status, body = refetch(crawled.web.port, host, path_qs)
            assert web_status == status, url
            assert capture.body_sha256 is not None and capture.stored, url
            with parts.primary.store.open(capture.body_sha256) as handle:
                stored = handle.read()
            assert sha(stored) == capture.body_sha256 == sha(body), url
            assert capture.body_size == len(body)
            return canonical(url)

        with ThreadPoolExecutor(8) as pool:
            asked = Counter(pool.map(check, requests))
        # ... and every fetch the catalog holds is one the web answered, once.
        with parts.catalog.reading() as tx:
            held = Counter(tx.session.scalars(
                select(PageFetch.canonical_url).where(PageFetch.kind != "redirect",
                                                      PageFetch.status_code.is_not(None))))
        assert held == asked


def test_ingest_twice_changes_nothing_and_counts_every_reference(
        crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        first = ingest(parts)
        assert len(first.ingested) >= 2
        rows = exact_rows(parts.catalog)
        again = ingest(parts)
        assert again.segments == [] and again.skipped == []
        segments, _ = find_segments(crawl_data)
        for segment in segments:  # past the ledger's filter: the ledger itself says no
            assert ingest_segment(parts.catalog, capture_primary(parts), segment).outcome == "already"
        assert exact_rows(parts.catalog) == rows

        report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                                data_dir=crawl_data)
        assert report.problems == 0, report.examples
        assert report.found["crawl_pending"] == report.found["untracked_blob_files"] == 0
        with parts.catalog.reading() as tx:
            assert list(tx.blobs.count_references()) == []
            blobs = {b.sha256: b for b in tx.session.scalars(select(Blob))}
            ledger = list(tx.session.scalars(select(CrawlSegment)))
            bodies = Counter(tx.session.scalars(select(PageFetch.body_sha256)
                                             .where(PageFetch.body_blob_id.is_not(None))))
            unstored = tx.session.scalar(select(PageFetch.id).where(
                PageFetch.body_sha256.is_not(None), PageFetch.body_blob_id.is_(None)))
        assert unstored is None
        # one reference per capture holding the body, one per segment file
        assert {s.path for s in ledger} == {s.relative for s in segments}
        for entry in ledger:
            data = (crawl_data / entry.path).read_bytes()
            assert entry.sha256 == sha(data)
            segment_blob = next(b for b in blobs.values() if b.id == entry.blob_id)
            assert segment_blob.sha256 == entry.sha256 and segment_blob.ref_count == 1
            with parts.primary.store.open(entry.sha256) as handle:
                assert handle.read() == data
        assert len(blobs) == len(bodies) + len(ledger)
        for body_sha, captures in bodies.items():
            assert body_sha is not None
            assert blobs[body_sha].ref_count == captures, body_sha
        assert sum(captures > 1 for captures in bodies.values()) > 0  # shared bodies exist


def test_a_segment_cut_mid_record_is_ingested_up_to_its_last_whole_record(
        crawled: Crawled, crawl_data: Path) -> None:
    segments, _ = find_segments(crawl_data)
    cut = segments[-1]
    data = cut.path.read_bytes()
    lines = data.splitlines(keepends=True)
    last_start = len(data) - len(lines[-1])
    cut_at = last_start + len(lines[-1]) // 2
    cut.path.write_bytes(data[:cut_at])
    lost_url = json.loads(lines[-1])["page_url"]

    done = run_cli("--data-dir", str(crawl_data), "ingest-crawl", "--all")
    assert done.returncode == 1, done.stderr
    assert f"{cut.relative}: the last {cut_at - last_start} bytes (from byte {last_start}) " \
           "are not a whole record" in done.stderr
    assert f"segments ingested {len(segments)} " in done.stdout

    with parts_of(crawl_data) as parts, parts.catalog.read_session() as session:
        offsets = set(session.scalars(select(PageFetch.record_offset)
                                      .where(PageFetch.index_path == cut.relative)))
        entry = session.scalar(select(CrawlSegment).where(CrawlSegment.path == cut.relative))
        assert entry is not None
        assert (entry.records, entry.rejected, entry.cut_bytes) == (
            len(lines) - 1, 0, cut_at - last_start)
        assert entry.sha256 == sha(data[:cut_at])
        whole = [sum(len(line) for line in lines[:n]) for n in range(len(lines) - 1)]
        assert offsets == set(whole)
        assert find_url(parts.catalog, lost_url)[1] == []
        pages = session.scalar(select(CrawlSession.pages))
        assert pages == crawled.report.pages + _unfetched(crawled) - 1


def test_a_segment_whose_bytes_changed_after_ingest_is_reported_not_skipped(
        crawl_data: Path) -> None:
    """A cut segment ingested, then put back whole (a copy restored by hand): the rerun says
    the file changed and exits 1, instead of passing over the records it now holds."""
    segments, _ = find_segments(crawl_data)
    target = segments[0]
    whole = target.path.read_bytes()
    cut_at = len(whole) - len(whole.splitlines(keepends=True)[-1]) // 2
    target.path.write_bytes(whole[:cut_at])
    first = run_cli("--data-dir", str(crawl_data), "ingest-crawl", "--all")
    assert first.returncode == 1 and "not a whole record" in first.stderr
    target.path.write_bytes(whole)
    again = run_cli("--data-dir", str(crawl_data), "ingest-crawl", "--all", "--json")
    assert again.returncode == 1, again.stdout
    report = json.loads(again.stdout)
    assert report["segments_failed"] == 1 and report["segments_ingested"] == 0
    (changed,) = [s for s in report["segments"] if s["path"] == target.relative]
    assert changed["outcome"] == "changed"
    assert f"the file now has {sha(whole)}" in changed["problems"][0]


def _unfetched(crawled: Crawled) -> int:
    """Records of the crawl with no fetch (robots.txt said no, or the host was down)."""
    count = 0
    for path in crawled.data_dir.glob("sessions/*/*/*.jsonl"):
        count += sum(1 for line in path.read_bytes().splitlines() if b'"requests":[]' in line)
    return count


def _tree(root: Path, *, skip: Path | None = None) -> dict[str, tuple[int, int, int]]:
    """Every entry under `root` (not under `skip`): (mode, size, mtime)."""
    listing = {}
    for dirpath, dirs, files in os.walk(root):
        if skip is not None and Path(dirpath) == skip.parent:
            dirs[:] = [d for d in dirs if Path(dirpath, d) != skip]
        for name in dirs + files:
            st = os.lstat(os.path.join(dirpath, name))
            listing[os.path.relpath(os.path.join(dirpath, name), root)] = (
                st.st_mode, st.st_size, st.st_mtime_ns)
    return listing


def test_hostile_records_are_refused_with_their_field_and_good_ones_kept(
        crawled: Crawled, crawl_data: Path, tmp_path: Path) -> None:
    segments, _ = find_segments(crawl_data)
    real = segments[0].path.read_bytes().splitlines()
    fetched = [line for line in real if b'"status_code":200' in line]
    good = [fetched[0], fetched[1]]

    def changed(line: bytes, **fields: Any) -> bytes:
        record = json.loads(line)
        for name, value in fields.items():
            if name == "status":
                record["requests"][0]["response"]["status_code"] = value
            elif name == "body":
                record["requests"][0]["response"]["body_hash"] = value
            else:
                record[name] = value
        return json.dumps(record).encode()

    lacking = sha(b"a body the crawler never stored " + uuid.uuid4().bytes)
    lacking_url = "http://site0000.test/never-stored.html"
    lacking_record = json.loads(fetched[2])
    lacking_record["page_url"] = lacking_record["final_url"] = lacking_url
    lacking_record["requests"][0]["url"] = lacking_url
    lacking_record["requests"][0]["response"]["body_hash"] = f"sha256:{lacking}"
    lines = [
        good[0],
        changed(fetched[3], session_id="../../../etc"),
        changed(fetched[4], page_url="http://site0000.test/" + "a" * 100_000),
        changed(fetched[5], status="abc"),
        json.dumps(lacking_record).encode(),
        b"this is no JSON {",
        b'["an", "array", 1]',
        good[1],
    ]
    name = "20991231T235959000000Z_000099.jsonl"
    hostile = segments[0].path.parent / name
    hostile.write_bytes(b"".join(line + b"\n" for line in lines))
    relative = f"{segments[0].relative.rsplit('/', 1)[0]}/{name}"
    offsets = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]
    outside_before = _tree(tmp_path, skip=crawl_data)
    inside_before = _tree(crawl_data)

    with parts_of(crawl_data) as parts:
        report = ingest(parts)
        [seen] = [s for s in report.segments if s.path == relative]
        assert seen.outcome == "ingested"
        assert (seen.records, seen.rejected, seen.pages, seen.missing_bodies) == (8, 5, 3, 1)
        expected = {
            1: "session_id '../../../etc' is not the segment's session",
            2: "page_url is 100,021 characters long",
            3: "requests[0].response.status_code 'abc' is not an HTTP status",
            5: "not a JSON record",
            6: "not a JSON object",
        }
        for index, words in expected.items():
            assert any(p.startswith(f"record at byte {offsets[index]}: ") and words in p
                       for p in seen.problems), (words, seen.problems)
        assert any(f"body sha256:{lacking}" in p and "not in the store" in p
                   for p in seen.problems), seen.problems
        assert len(seen.problems) == 6 and all(len(p) < 400 for p in seen.problems)
        assert report.total("rejected") == 5  # the crawl's own segments are sound

        with parts.catalog.reading() as tx:
            kept = sorted(tx.session.scalars(select(PageFetch.record_offset)
                                          .where(PageFetch.index_path == relative)))
            assert tx.session.scalar(select(Blob.id).where(Blob.sha256 == lacking)) is None
            entry = tx.session.scalar(select(CrawlSegment).where(CrawlSegment.path == relative))
            assert entry is not None and (entry.records, entry.rejected) == (8, 5)
        assert kept == [offsets[0], offsets[4], offsets[7]]
        [capture] = find_url(parts.catalog, lacking_url)[1]
        assert capture.body_sha256 == lacking and not capture.stored
        for good_line in good:
            page_url = json.loads(good_line)["page_url"]
            assert relative in {c.index_path for c in find_url(parts.catalog, page_url)[1]}
        verify = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert verify.problems == 0, verify.examples

    assert _tree(tmp_path, skip=crawl_data) == outside_before  # nothing written outside
    assert not (crawl_data / "etc").exists()
    new = set(_tree(crawl_data)) - set(inside_before)
    assert new and all(p.startswith("cas" + os.sep) or p.startswith("catalog.sqlite3")
                       for p in new), sorted(new)[:10]


def test_odd_session_folders_and_symlinked_segments_are_skipped(
        crawl_data: Path, tmp_path: Path) -> None:
    segments, _ = find_segments(crawl_data)
    source = segments[0]
    day_dir = source.path.parent.parent
    # A segment of another session, whose records name URLs nothing else has.
    stranger = str(uuid.uuid4())
    text = source.path.read_bytes().replace(source.session_id.encode(), stranger.encode())
    text = text.replace(b"http://site0000.test/", b"http://stranger.test/")
    assert b"http://stranger.test/" in text
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / source.path.name).write_bytes(text)
    for folder in ("up\\..\\..\\etc", "not-a-uuid", stranger.upper()):
        (day_dir / folder).mkdir()
        shutil.copy(outside / source.path.name, day_dir / folder / source.path.name)
    (day_dir / stranger).symlink_to(outside, target_is_directory=True)
    (source.path.parent / "20991231T235959000000Z_000099.jsonl").symlink_to(
        outside / source.path.name)

    with parts_of(crawl_data) as parts:
        report = ingest(parts)
        assert {s.path for s in report.segments} == {s.relative for s in segments}
        assert report.total("rejected") == 0
        assert any("up\\..\\..\\etc: not a session folder" in line for line in report.skipped)
        assert any("not-a-uuid: not a session folder" in line for line in report.skipped)
        assert any(stranger.upper() in line for line in report.skipped)
        assert any(f"{stranger}: not a session folder" in line for line in report.skipped)
        assert any("20991231T235959000000Z_000099.jsonl: not a segment file" in line
                   for line in report.skipped)
        assert find_url(parts.catalog, "http://stranger.test/", prefix=True)[1] == []
        with parts.catalog.reading() as tx:
            assert tx.session.scalar(select(CrawlSession.id).where(CrawlSession.id == stranger)) is None
