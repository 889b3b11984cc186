"""compact-crawls on a real crawl: after compaction every capture is found as before and its
record reads back equal; the compacted file is the segments' records, byte for byte; the blob
references move from the segments to the compacted file and its index; a session still being
crawled, too recent, or whose segments changed is left exactly as it was."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import subprocess
import sys
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import zstandard
from sqlalchemy import select

from archive_pipelines.captures.compaction import INDEX_MAGIC, compact_sessions, iter_index
from archive_pipelines.captures.lookup import find_body, find_session, find_url
from archive_pipelines.captures.segment_ingest import ingest_segment, pending_segments
from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob, CrawlSegment, CrawlSession
from archive_pipelines.storage.gc import GcReport, collect_garbage
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.captures import (
    assert_storage_clean,
    capture_primary,
    capture_rows,
    catalog_dump,
    compacted_files,
    ingest_all,
    parts_of,
    records_of,
    segment_files,
    session_ids,
)
from tests.helpers.crawls import Crawled

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]
NOW = timedelta(0)  # older_than: every session that ended before now

# -- helpers of this module (the ones the crash tests share: tests/helpers/captures.py) ----


def lookups(catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """What every lookup answers, for every URL, site, session and body the catalog holds:
    the captures as listed, less where their record lies (that is what compaction moves)."""
    rows = capture_rows(catalog)
    found: dict[str, list[dict[str, Any]]] = {}

    def listed(captures: list[Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in asdict(c).items() if k not in ("index_path", "record_offset")}
                for c in captures]

    for url in sorted({row["url"] for row in rows}):
        found[f"url {url}"] = listed(find_url(catalog, url)[1])
    for site in sorted({row["site"] for row in rows}):
        found[f"prefix {site}"] = listed(find_url(catalog, site, prefix=True)[1])
    for sid in sorted({row["session_id"] for row in rows}):
        found[f"session {sid}"] = listed(find_session(catalog, sid))
        found[f"session {sid} all"] = listed(find_session(catalog, sid, every_request=True))
    for sha in sorted({row["body_sha256"] for row in rows if row["body_sha256"]}):
        found[f"body {sha}"] = listed(find_body(catalog, sha))
    assert sum(map(len, found.values())) > len(rows)  # every capture is found, most twice
    return found


def ref_counts(catalog: Catalog, shas: list[str]) -> dict[str, int]:
    with catalog.reading() as tx:
        return {str(sha): int(n) for sha, n in tx.session.execute(
            select(Blob.sha256, Blob.ref_count).where(Blob.sha256.in_(shas)))}


# -- compaction of a real crawl ------------------------------------------------------------


def test_compaction_keeps_every_capture_lookup_and_record(crawl_data: Path,
                                                          catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        (sid,) = session_ids(parts.catalog)
        before_rows = capture_rows(parts.catalog)
        before_records = records_of(crawl_data, before_rows)
        before_lookups = lookups(parts.catalog)
        before_dump = catalog_dump(parts.catalog)
        originals = segment_files(crawl_data)
        assert len(originals) >= 2  # several segments, so segment order matters
        with parts.catalog.reading() as tx:
            segment_shas = list(tx.session.scalars(select(CrawlSegment.sha256)))
        assert ref_counts(parts.catalog, segment_shas) == dict.fromkeys(segment_shas, 1)

        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)

        # The report: one session, every segment read, every record written, files removed.
        assert [(s.session_id, s.outcome, s.problems) for s in report.sessions] == [
            (sid, "compacted", [])]
        whole = [data[:data.rfind(b"\n") + 1] for _path, data in sorted(
            originals.items(), key=lambda item: item[0].rsplit("/", 1)[-1])]
        lines = b"".join(whole).count(b"\n")
        done = report.sessions[0]
        assert (done.segments, done.records, done.removed_files) == (len(originals), lines,
                                                                      len(originals))
        assert done.bytes_in == sum(map(len, originals.values()))

        # Every lookup answers the same captures; every record reads back equal.
        after_rows = capture_rows(parts.catalog)
        assert lookups(parts.catalog) == before_lookups
        after_records = records_of(crawl_data, after_rows)
        assert after_records == before_records
        # Page titles stay, on the captures (every column is compared below) and in the
        # compacted file's records.
        titled = [row for row in after_rows if row["title"] is not None]
        assert len(titled) > 100
        assert all(after_records[row["id"]]["title"] == row["title"] for row in titled)
        compacted_path = f"sessions/compacted/{sid}.jsonl.zst"
        assert {row["index_path"] for row in after_rows} == {compacted_path}
        # A record's ordinal stands for its (segment, byte offset): captures of one record
        # share it, captures of different records do not.
        moved = {(b["index_path"], b["record_offset"]): a["record_offset"]
                 for b, a in zip(before_rows, after_rows, strict=True)}
        assert len(set(moved.values())) == len(moved)
        assert all(0 <= ordinal < lines for ordinal in moved.values())
        assert [{k: v for k, v in row.items() if k not in ("index_path", "record_offset")}
                for row in after_rows] == [
            {k: v for k, v in row.items() if k not in ("index_path", "record_offset")}
            for row in before_rows]

        # The segments are gone (and their session folder); the compacted pair is there.
        assert segment_files(crawl_data) == {}
        assert not any((crawl_data / path).parent.exists() for path in originals)
        assert compacted_files(crawl_data) == [f"{sid}.idx", f"{sid}.jsonl.zst"]
        zst = crawl_data / compacted_path
        idx = zst.with_name(f"{sid}.idx")
        with open(zst, "rb") as handle:
            decompressed = zstandard.ZstdDecompressor().stream_reader(
                handle, read_across_frames=True).readall()
        assert decompressed == b"".join(whole)
        # The index: a magic then one fixed entry per record; its frames tile the file and
        # each decompresses on its own to the lines it indexes.
        raw_idx = idx.read_bytes()
        assert raw_idx.startswith(INDEX_MAGIC)
        assert len(raw_idx) == len(INDEX_MAGIC) + 20 * lines
        entries = list(iter_index(idx))
        data = zst.read_bytes()
        frames = sorted({(start, length) for start, length, _inner, _size in entries})
        assert len(frames) >= 2
        assert frames[0][0] == 0 and frames[-1][0] + frames[-1][1] == len(data)
        assert all(a + n == b for (a, n), (b, _m) in itertools.pairwise(frames))
        rebuilt = []
        for start, length, inner, size in entries:
            frame = zstandard.ZstdDecompressor().decompress(data[start:start + length])
            rebuilt.append(frame[inner:inner + size])
        assert b"".join(rebuilt) == decompressed

        # Blob references: the segments' released (orphans, files kept for gc), the
        # compacted file and its index referenced once each and stored in the primary.
        assert ref_counts(parts.catalog, segment_shas) == dict.fromkeys(segment_shas, 0)
        with parts.catalog.reading() as tx:
            row = tx.session.execute(select(CrawlSession.compacted_path,
                                         CrawlSession.compacted_blob_id,
                                         CrawlSession.index_blob_id)).one()
            assert row[0] == compacted_path
            held = {int(i): str(sha) for i, sha in tx.session.execute(
                select(Blob.id, Blob.sha256).where(Blob.id.in_(row[1:])))}
            assert list(tx.session.scalars(select(CrawlSegment.blob_id))) == [None] * len(originals)
            unreferenced = list(tx.session.scalars(select(Blob.unreferenced_since)
                                                .where(Blob.sha256.in_(segment_shas))))
            assert None not in unreferenced
        assert row[1] is not None and row[2] is not None
        zst_sha, idx_sha = held[row[1]], held[row[2]]
        assert ref_counts(parts.catalog, [zst_sha, idx_sha]) == {zst_sha: 1, idx_sha: 1}
        store = parts.primary.store
        assert store.local_path(zst_sha).read_bytes() == data
        assert store.local_path(idx_sha).read_bytes() == raw_idx
        assert all(store.local_path(sha).exists() for sha in segment_shas)
        assert_storage_clean(parts, crawl_data)
        verified = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert verified.found["orphan_blobs"] == len(segment_shas)

        # What else changed: only the captures' record places, the session's compacted
        # file, the segments' blob and the ref counts/copies of those blobs.
        after_dump = catalog_dump(parts.catalog)
        assert after_dump["crawl_segment"] == sorted(
            (tuple((k, None if k == "blob_id" else v) for k, v in row)
             for row in before_dump["crawl_segment"]), key=repr)

        # A second run has nothing to do and changes nothing.
        again = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                 older_than=NOW)
        assert again.sessions == []
        assert catalog_dump(parts.catalog) == after_dump
        assert zst.read_bytes() == data and idx.read_bytes() == raw_idx
        assert compacted_files(crawl_data) == [f"{sid}.idx", f"{sid}.jsonl.zst"]


def test_a_session_with_a_segment_not_ingested_yet_is_left_alone(crawl_data: Path) -> None:
    with parts_of(crawl_data) as parts:
        pending, _skipped = pending_segments(parts.catalog, crawl_data)
        assert len(pending) >= 2
        for segment in pending[:-1]:
            assert ingest_segment(parts.catalog, capture_primary(parts), segment).outcome \
                == "ingested"
        (sid,) = session_ids(parts.catalog)
        dump, files = catalog_dump(parts.catalog), segment_files(crawl_data)

        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)

        assert [(s.session_id, s.outcome) for s in report.sessions] == [(sid, "skipped")]
        assert report.failed == []
        assert report.sessions[0].problems == ["segments not yet ingested: run ingest-crawl first"]
        assert catalog_dump(parts.catalog) == dump
        assert segment_files(crawl_data) == files
        assert compacted_files(crawl_data) == []
        # Once the last segment is ingested, the session compacts.
        ingest_all(parts, crawl_data)
        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)
        assert [s.outcome for s in report.sessions] == ["compacted"]
        assert_storage_clean(parts, crawl_data)


@pytest.mark.parametrize("crawler_state", ["lock held", "journal"])
def test_a_session_a_crawler_is_still_writing_is_left_alone(crawl_data: Path,
                                                            crawler_state: str) -> None:
    with parts_of(crawl_data) as parts:
        ingest_all(parts, crawl_data)
        (sid,) = session_ids(parts.catalog)
        dump, files = catalog_dump(parts.catalog), segment_files(crawl_data)
        journals = crawl_data / "sessions" / ".journals"
        journals.mkdir(exist_ok=True)
        lock = journals / f"{sid}.lock"
        lock.touch()  # a lock file nobody holds stops nothing
        fd = os.open(lock, os.O_RDWR)
        try:
            if crawler_state == "lock held":
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                expected = "a crawler is still writing this session: left for later"
            else:
                (journals / f"{sid}.3.journal").write_bytes(b"")
                expected = ("the crawler's journal holds records not in a segment yet: "
                            "left for later (a crawler run recovers them)")
            report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                      older_than=NOW)
            assert [(s.session_id, s.outcome, s.problems) for s in report.sessions] == [
                (sid, "skipped", [expected])]
            assert catalog_dump(parts.catalog) == dump
            assert segment_files(crawl_data) == files
            assert compacted_files(crawl_data) == []
        finally:
            os.close(fd)  # the crawler is gone (its lock released with it)
        (journals / f"{sid}.3.journal").unlink(missing_ok=True)
        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)
        assert [(s.outcome, s.problems) for s in report.sessions] == [("compacted", [])]


def test_a_session_newer_than_older_than_is_left_alone(crawl_data: Path) -> None:
    with parts_of(crawl_data) as parts:
        ingest_all(parts, crawl_data)
        (sid,) = session_ids(parts.catalog)
        with parts.catalog.reading() as tx:
            found = tx.captures.crawl_session(sid)
        assert found is not None and found.ended_at is not None
        ended = found.ended_at
        dump, files = catalog_dump(parts.catalog), segment_files(crawl_data)
        store = capture_primary(parts)

        # Left alone, and reported skipped with its last fetch and the age it lacks.
        last = f"last fetch {ended:%Y-%m-%d %H:%M} UTC: younger than"
        week = compact_sessions(parts.catalog, store, crawl_data, older_than=timedelta(days=7))
        assert [(s.session_id, s.outcome, s.problems) for s in week.sessions] == [
            (sid, "skipped", [f"{last} 7 days"])]
        hours = compact_sessions(parts.catalog, store, crawl_data,
                                 older_than=timedelta(hours=2), now=ended + timedelta(hours=1))
        assert [(s.outcome, s.problems) for s in hours.sessions] == [
            ("skipped", [f"{last} 2 hours"])]
        # ... also when asked for by id.
        by_id = compact_sessions(parts.catalog, store, crawl_data, older_than=timedelta(hours=2),
                                 now=ended + timedelta(hours=1), session_id=sid)
        assert [s.outcome for s in by_id.sessions] == ["skipped"]
        assert catalog_dump(parts.catalog) == dump
        assert segment_files(crawl_data) == files
        assert compacted_files(crawl_data) == []

        report = compact_sessions(parts.catalog, store, crawl_data,
                                  older_than=timedelta(hours=2),
                                  now=ended + timedelta(hours=3))
        assert [(s.session_id, s.outcome) for s in report.sessions] == [(sid, "compacted")]


@pytest.mark.parametrize("damage", ["byte appended", "byte changed", "removed"])
def test_a_segment_changed_after_ingest_fails_the_session_and_changes_nothing(
        crawl_data: Path, damage: str) -> None:
    with parts_of(crawl_data) as parts:
        ingest_all(parts, crawl_data)
        (sid,) = session_ids(parts.catalog)
        dump, files = catalog_dump(parts.catalog), segment_files(crawl_data)
        records = records_of(crawl_data, capture_rows(parts.catalog))
        # Not the first segment: the compacted file has been partly written by then.
        victim = sorted(files, key=lambda p: p.rsplit("/", 1)[-1])[1]
        path = crawl_data / victim
        if damage == "byte appended":
            with open(path, "ab") as handle:
                handle.write(b"x")
            expected = f"{victim} changed since it was ingested"
        elif damage == "byte changed":
            data = bytearray(files[victim])
            data[100] ^= 0x20
            path.write_bytes(bytes(data))
            expected = f"{victim} changed since it was ingested"
        else:
            path.unlink()
            expected = f"{victim} is missing"
        damaged = segment_files(crawl_data)

        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)

        assert [(s.session_id, s.outcome) for s in report.sessions] == [(sid, "failed")]
        assert report.failed == report.sessions
        (problem,) = report.sessions[0].problems
        assert problem.startswith(expected), problem
        assert catalog_dump(parts.catalog) == dump
        assert segment_files(crawl_data) == damaged  # every segment file still there
        assert compacted_files(crawl_data) == []  # no compacted file, no temp file left
        if damage == "byte appended":  # the records themselves are as they were
            assert records_of(crawl_data, capture_rows(parts.catalog)) == records
        # Nothing was stored either: the store holds no file the catalog does not know.
        assert_storage_clean(parts, crawl_data)

        # With the segment as it was ingested, the same session compacts.
        path.write_bytes(files[victim])
        report = compact_sessions(parts.catalog, capture_primary(parts), crawl_data,
                                  older_than=NOW)
        assert [(s.outcome, s.problems) for s in report.sessions] == [("compacted", [])]
        assert records_of(crawl_data, capture_rows(parts.catalog)) == records
        assert_storage_clean(parts, crawl_data)


def test_gc_after_compaction_takes_the_segment_copies_and_no_record(crawl_data: Path) -> None:
    with parts_of(crawl_data) as parts:
        ingest_all(parts, crawl_data)
        records = records_of(crawl_data, capture_rows(parts.catalog))
        with parts.catalog.reading() as tx:
            segment_shas = sorted(tx.session.scalars(select(CrawlSegment.sha256)))

        def gc() -> GcReport:
            return collect_garbage(parts.catalog, parts.primary, parts.views.farm, layout=parts.layout,
                                   grace_hours=0, untracked=True)

        assert gc().removed == 0  # before: the segments' blobs are referenced
        compact_sessions(parts.catalog, capture_primary(parts), crawl_data, older_than=NOW)
        taken = gc()
        assert taken.removed == len(segment_shas)
        assert not any(parts.primary.store.local_path(sha).exists() for sha in segment_shas)
        assert records_of(crawl_data, capture_rows(parts.catalog)) == records
        assert gc().removed == 0
        assert_storage_clean(parts, crawl_data)


# -- the CLI ---------------------------------------------------------------------------------


def run_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    return subprocess.run([*CLI, "--data-dir", str(data_dir), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def _records_by_id(result: subprocess.CompletedProcess[str]) -> dict[int, Any]:
    assert result.returncode == 0, result.stderr
    return {c["id"]: (c["index_path"], c["record"]) for c in json.loads(result.stdout)["captures"]}


def test_compact_crawls_command(crawl_data: Path, crawled: Crawled) -> None:
    helped = run_cli(crawl_data, "compact-crawls", "--help")
    assert helped.returncode == 0, helped.stderr
    for option in ("--older-than DAYS", "--session ID", "--dry-run", "--json"):
        assert option in helped.stdout
    assert run_cli(crawl_data, "ingest-crawl", "--all", "--json").returncode == 0
    sid = crawled.report.session_id
    listing = ["captures", "--session", sid, "--requests", "--json", "--records"]
    before = _records_by_id(run_cli(crawl_data, *listing))
    assert before and all(record["session_id"] == sid for _path, record in before.values())
    assert all(not path.startswith("sessions/compacted/") for path, _record in before.values())

    # The default (crawl.compact_after_days = 7): the crawl is too recent, and it says so.
    recent = run_cli(crawl_data, "compact-crawls", "--json")
    assert recent.returncode == 0, recent.stderr
    [(left, outcome, [why])] = [(s["session_id"], s["outcome"], s["problems"])
                                for s in json.loads(recent.stdout)["sessions"]]
    assert (left, outcome) == (sid, "skipped") and why.endswith("younger than 7 days"), why
    recent_text = run_cli(crawl_data, "compact-crawls")
    assert f"{sid}  skipped: last fetch " in recent_text.stdout
    assert "0 session(s) compacted: 0 B -> 0 B; 1 session(s) skipped" in recent_text.stdout

    # A dry run names what the real run would take, by a unique start of its id, and
    # changes nothing.
    segments_before = segment_files(crawl_data)
    dry = run_cli(crawl_data, "compact-crawls", "--older-than", "0", "--dry-run",
                  "--session", sid[:8].upper())
    assert dry.returncode == 0, dry.stderr
    assert f"{sid}  would compact {len(segments_before)} segment(s)" in dry.stdout
    assert "1 session(s) would be compacted" in dry.stdout
    assert segment_files(crawl_data) == segments_before
    assert not (crawl_data / "sessions" / "compacted").exists()
    assert _records_by_id(run_cli(crawl_data, *listing)) == before

    # A segment changed since its ingest: exit 1, the reason on stderr, nothing changed.
    segment = sorted(segment_files(crawl_data))[0]
    original = (crawl_data / segment).read_bytes()
    with open(crawl_data / segment, "ab") as handle:
        handle.write(b"\n")
    failed = run_cli(crawl_data, "compact-crawls", "--older-than", "0")
    assert failed.returncode == 1
    assert f"{segment} changed since it was ingested" in failed.stderr
    assert f"{sid}  failed" in failed.stdout
    assert _records_by_id(run_cli(crawl_data, *listing)) == before
    (crawl_data / segment).write_bytes(original)

    ran = run_cli(crawl_data, "compact-crawls", "--older-than", "0", "--session", sid, "--json")
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    (done,) = report["sessions"]
    assert (done["session_id"], done["outcome"], done["problems"]) == (sid, "compacted", [])
    assert report["removed_files"] == done["removed_files"] == report["segments"] >= 2
    assert report["records"] == done["records"] > 0
    assert 0 < report["bytes_out"] < report["bytes_in"]
    after = _records_by_id(run_cli(crawl_data, *listing))
    assert {path for path, _record in after.values()} == {f"sessions/compacted/{sid}.jsonl.zst"}
    assert {i: record for i, (_p, record) in after.items()} == {
        i: record for i, (_p, record) in before.items()}

    # Rerun: nothing to do (text output), exit 0.
    again = run_cli(crawl_data, "compact-crawls", "--older-than", "0")
    assert again.returncode == 0, again.stderr
    assert "0 session(s) compacted" in again.stdout
    # Bad arguments: a usage error (2) each, nothing done.
    bad_session = run_cli(crawl_data, "compact-crawls", "--session", "not-a-session")
    assert bad_session.returncode == 2
    assert "a session id is a UUID" in bad_session.stderr
    # A session no one recorded: a miss, exit 1.
    assert run_cli(crawl_data, "compact-crawls", "--session", "ffffffff").returncode == 1
    for bad_days in ("-1", "nan", "inf"):
        assert run_cli(crawl_data, "compact-crawls", "--older-than", bad_days).returncode == 2
    with parts_of(crawl_data) as parts:
        assert_storage_clean(parts, crawl_data)
