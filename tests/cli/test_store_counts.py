"""One set of counts: after an ingest, a crawl ingest, a compaction and a gc, `status`,
`verify`, `gc --dry-run` and `replication-status` give the same numbers for the same things;
and `verify` names each problem it finds (and then never says healthy)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

ROWS = re.compile(r"([\d,]+) blob rows: ([\d,]+) referenced, ([\d,]+) unreferenced"
                  r"(?: \(([\d,]+) within gc's grace, ([\d,]+) past it, ([\d,]+) collected by gc\))?")


def _number(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0


def blob_rows(output: str) -> tuple[int, ...]:
    """(rows, referenced, unreferenced, within the grace, past it, collected) of the one
    blob counts line in `output`."""
    found = ROWS.findall(output)
    assert len(found) == 1, output
    return tuple(_number(part) for part in found[0])


def one(pattern: str, output: str) -> int:
    found = re.findall(pattern, output, re.MULTILINE)
    assert len(found) == 1, (pattern, output)
    return _number(found[0])


def reports(data: str) -> dict[str, str]:
    """The four commands' text, each run once; every one exits 0."""
    done = {}
    for name, args in (("status", ["status"]), ("verify", ["verify"]),
                       ("gc", ["gc", "--dry-run"]),
                       ("replication-status", ["replication-status"])):
        ran = run_cli("--data-dir", data, *args)
        assert ran.returncode == 0, (name, ran.stdout, ran.stderr)
        done[name] = ran.stdout
    return done


def assert_same_counts(data: str) -> tuple[int, ...]:
    """The four commands agree, line by line, on what they count; returns the counts."""
    texts = reports(data)
    counts = {name: blob_rows(text) for name, text in texts.items()}
    assert len(set(counts.values())) == 1, counts
    rows, referenced, unreferenced, within, past, collected = counts["status"]
    assert rows == referenced + unreferenced and unreferenced == within + past + collected
    # What each checks or acts on is one of those numbers, named the same.
    assert one(r"checked ([\d,]+) referenced blobs", texts["verify"]) == referenced
    assert one(r"healthy \(([\d,]+) referenced blobs present", texts["verify"]) == referenced
    assert one(r"; ([\d,]+) referenced blobs;", texts["replication-status"]) == referenced
    assert one(r"unreferenced blobs past the grace: ([\d,]+);", texts["gc"]) == past
    assert one(r"unreferenced blobs within the grace \([^)]*\): ([\d,]+);", texts["gc"]) == within
    assert len(re.findall(r"^  waiting blob [0-9a-f]{64} ", texts["gc"], re.M)) == min(within, 10)
    # Sizes for people: binary units, never raw byte counts.
    assert re.search(r"^blob sizes +referenced [\d.,]+ (B|KiB|MiB)", texts["status"], re.M)
    assert "blob_bytes" not in texts["status"]
    return counts["status"]


def test_the_commands_agree_after_ingest_crawl_compaction_and_gc(
        crawl_data: Path, tmp_path: Path) -> None:
    data = str(crawl_data)
    site = tmp_path / "site"
    site.mkdir()
    for i in range(3):
        (site / f"{i}.html").write_text(f"page {i}\n" * 50)
    (site / "copy.html").write_text("page 0\n" * 50)  # deduplicated
    done = run_cli("--data-dir", data, "ingest", "--url", "https://a.test/", "wget", str(site))
    assert done.returncode == 0, done.stderr
    assert run_cli("--data-dir", data, "ingest-crawl", "--all").returncode == 0
    compacted = run_cli("--data-dir", data, "compact-crawls", "--older-than", "0")
    assert compacted.returncode == 0 and "1 session(s) compacted" in compacted.stdout
    segments = one(r"compacted +([\d,]+) segment\(s\)", compacted.stdout)
    gc = run_cli("--data-dir", data, "gc")
    assert gc.returncode == 0, gc.stderr

    # The compaction released the segments' blobs: unreferenced, files kept for the grace.
    rows, referenced, unreferenced, within, past, collected = assert_same_counts(data)
    assert (unreferenced, within, past, collected) == (segments, segments, 0, 0) and segments >= 2
    assert referenced > 4

    # Past a grace of 0 they are gc's: the dry run says so, the run takes them, and the
    # rows that stay (so the same bytes revive them) are counted as collected everywhere.
    dry = run_cli("--data-dir", data, "gc", "--dry-run", "--grace-hours", "0")
    assert one(r"unreferenced blobs past the grace: ([\d,]+);", dry.stdout) == segments
    assert blob_rows(dry.stdout)[3:] == (0, segments, 0)
    assert run_cli("--data-dir", data, "gc", "--grace-hours", "0").returncode == 0
    assert assert_same_counts(data) == (rows, referenced, unreferenced, 0, 0, segments)


def ingested(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    site = tmp_path / "site"
    site.mkdir()
    for i in range(12):
        (site / f"{i}.html").write_text(f"page {i}")
    done = run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/",
                   "--timestamp", "1700000000.0", "wget", str(site))
    assert done.returncode == 0, done.stderr
    return data


@pytest.mark.parametrize("lost", ["link", "blob"])
def test_verify_names_what_is_missing_and_exits_1(tmp_path: Path, lost: str) -> None:
    data = ingested(tmp_path)
    if lost == "link":
        gone = [f"archive/by_timestamp/1700000000.0/wget/{i}.html" for i in range(11)]
        kind = "missing_links"
    else:
        blob_files = sorted(p for p in (data / "cas").rglob("*")
                            if p.is_file() and re.fullmatch("[0-9a-f]{64}", p.name))
        assert len(blob_files) == 12
        gone = [str(p.relative_to(data)) for p in blob_files[:11]]
        kind = "missing_blob_files"
    for path in gone:
        (data / path).unlink()
    done = run_cli("--data-dir", str(data), "verify")
    assert done.returncode == 1
    assert "healthy" not in done.stdout
    assert one(rf"^  {kind} +([\d,]+)$", done.stdout) == 11
    named = [line.strip() for line in done.stdout.splitlines() if line.startswith("    ")]
    # The first ten by name (a blob by its sha256 and its file's path), then how many more.
    assert named[-1] == "... and 1 more (--json lists every one)"
    assert len(named) == 11 and all(any(path in line for path in gone) for line in named[:10])
    as_json = run_cli("--data-dir", str(data), "verify", "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    listed = report["named"][kind]
    assert len(listed) == 11 and {p for p in gone if any(p in line for line in listed)} == set(gone)
    assert report["found"][kind] == report["problems"] == 11

