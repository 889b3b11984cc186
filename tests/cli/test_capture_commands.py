"""`ingest-crawl` and `captures` as a person runs them, on a real crawl of the test web."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.cli.captures_command import listing_title
from tests.helpers.cli import run_cli
from tests.helpers.crawls import Crawled


@pytest.fixture(scope="module")
def ingested(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[str, dict[str, Any]]:
    """(data dir, the `ingest-crawl --all --json` report) of the crawl, ingested by the CLI
    once for the module; the tests only look things up in it."""
    data_dir = tmp_path_factory.mktemp("cli") / "data"
    shutil.copytree(crawled.data_dir, data_dir, symlinks=True)
    done = run_cli("--data-dir", str(data_dir), "ingest-crawl", "--all", "--json")
    assert done.returncode == 0, done.stderr
    return str(data_dir), json.loads(done.stdout)


def captures_json(data_dir: str, *args: str) -> list[dict[str, Any]]:
    done = run_cli("--data-dir", data_dir, "captures", *args, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["captures"]
    assert isinstance(found, list)
    return found


def test_help_of_both_commands() -> None:
    ingest = run_cli("ingest-crawl", "--help")
    assert ingest.returncode == 0
    assert all(option in ingest.stdout for option in ("--session", "--all", "--json"))
    lookup = run_cli("captures", "--help")
    assert lookup.returncode == 0
    for option in ("--prefix", "--from", "--to", "--session", "--requests", "--sha256",
                   "--limit", "--json"):
        assert option in lookup.stdout
    assert "canonical" in lookup.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["captures", "not a url"], "bad URL 'not a url'"),
    (["captures", "ftp://site0001.test/"], "bad URL"),
    (["captures", "http://site0001.test/", "--from", "yesterday"], "bad time 'yesterday'"),
    (["captures", "http://site0001.test/", "--to", "2026-13-40"], "bad time"),
    (["captures", "--session", "../../../etc"], "bad --session '../../../etc'"),
    (["captures", "--session", "61ccb46a_x"], "a session id is a UUID"),
    (["captures", "--sha256", "xyz"], "bad hash 'xyz'"),
    (["captures"], "give one of: URL, --session ID, --sha256 HASH"),
    (["captures", "http://site0001.test/", "--sha256", "0" * 64], "give one of"),
    (["ingest-crawl"], "--session ID or --all"),
    (["ingest-crawl", "--session", "../../etc"], "bad --session '../../etc'"),
])
def test_a_bad_input_is_one_clear_line(tmp_path: Path, args: list[str], words: str) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    done = run_cli("--data-dir", str(data), *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archive-pipelines: error: "), done.stderr
    assert words in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_limit_below_one_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_cli("--data-dir", str(data), "init")
    done = run_cli("--data-dir", str(data), "captures", "http://site0001.test/", "--limit", "0")
    assert done.returncode == 2 and "--limit" in done.stderr


def test_ingest_crawl_json_report_and_a_rerun(ingested: tuple[str, dict[str, Any]],
                                              crawled: Crawled) -> None:
    data_dir, report = ingested
    assert report["segments_ingested"] == crawled.report.segments
    assert report["segments_failed"] == report["rejected"] == report["cut_bytes"] == 0
    assert report["missing_bodies"] == 0
    assert report["pages"] == sum(s["pages"] for s in report["segments"])
    assert report["pages"] >= crawled.report.pages and report["captures"] > report["pages"]
    assert set(report["status_classes"]) >= {"2xx", "3xx", "4xx", "failed"}
    again = run_cli("--data-dir", data_dir, "ingest-crawl", "--all")
    assert again.returncode == 0 and again.stdout.startswith("segments ingested 0 ")
    session = run_cli("--data-dir", data_dir, "ingest-crawl", "--session",
                      crawled.report.session_id)
    assert session.returncode == 0 and session.stdout.startswith("segments ingested 0 ")


def test_captures_finds_what_the_web_answered(ingested: tuple[str, dict[str, Any]],
                                              crawled: Crawled) -> None:
    data_dir, _report = ingested
    by_status: dict[int, tuple[str, str]] = {}
    for request in crawled.requests:
        if request.status and request.path_qs != "/robots.txt":
            by_status.setdefault(request.status, (request.host, request.path_qs))
    assert {200, 404} <= set(by_status)
    for status, (host, path_qs) in sorted(by_status.items()):
        spelled = f"HTTP://{host.upper()}:80{path_qs}#fragment"
        found = captures_json(data_dir, spelled)
        pages = [c for c in found if c["kind"] in ("page", "request")]
        assert pages and pages[0]["status_code"] == status, (spelled, found)
        assert pages[0]["stored"] and len(pages[0]["body_sha256"]) == 64
        assert pages[0]["session_id"] == crawled.report.session_id
        assert pages[0]["timestamp"].endswith("Z")


def test_captures_text_marks_redirects_and_failures(ingested: tuple[str, dict[str, Any]]) -> None:
    data_dir, _report = ingested
    every = captures_json(data_dir, "http://site0001.test", "--prefix")
    redirect = next(c for c in every if c["kind"] == "redirect")
    text = run_cli("--data-dir", data_dir, "captures", redirect["url"])
    assert text.returncode == 0
    assert f"(-> {redirect['final_url']})" in text.stdout
    failed = [c for c in captures_json(data_dir, "--session", every[0]["session_id"])
              if c["status_code"] is None]
    assert failed, "the crawl has no failed fetch"
    shown = run_cli("--data-dir", data_dir, "captures", failed[0]["url"])
    assert shown.returncode == 0 and f"(failed: {failed[0]['error']})" in shown.stdout
    assert shown.stdout.strip().splitlines()[-1].startswith("1 capture(s) ")


def test_captures_show_a_pages_title(ingested: tuple[str, dict[str, Any]]) -> None:
    """--json has every capture's `title` (a page's HTML title, else null); the listing shows
    it quoted after the URL, non-ASCII as it is."""
    data_dir, _report = ingested
    every = captures_json(data_dir, "--session", captures_json(
        data_dir, "http://site0001.test", "--prefix")[0]["session_id"], "--requests")
    assert all("title" in c for c in every)
    assert all(c["title"] is None for c in every if c["kind"] != "page")
    titled = [c for c in every if c["title"]]
    assert len(titled) > 100
    idn = next(c for c in titled if c["url"].startswith("http://xn--"))
    assert idn["title"] == "B\u00fccher"
    for capture in (titled[0], idn):
        shown = run_cli("--data-dir", data_dir, "captures", capture["url"])
        assert shown.returncode == 0, shown.stderr
        line = next(line for line in shown.stdout.splitlines() if line.startswith(capture["timestamp"]))
        assert line.endswith(f'{capture["url"]}  {json.dumps(capture["title"], ensure_ascii=False)}')
    untitled = next(c for c in every if c["kind"] == "page" and c["title"] is None
                    and c["status_code"] == 404)
    shown = run_cli("--data-dir", data_dir, "captures", untitled["url"])
    assert f'{untitled["url"]}  "' not in shown.stdout


def test_prefix_time_bounds_session_and_hash(ingested: tuple[str, dict[str, Any]]) -> None:
    data_dir, report = ingested
    site = captures_json(data_dir, "http://site0001.test", "--prefix")
    assert site and all(c["url"].startswith("http://site0001.test/") for c in site)
    assert [c["fetched_ms"] for c in site] == sorted((c["fetched_ms"] for c in site), reverse=True)
    day = datetime.fromtimestamp(site[0]["fetched_ms"] / 1000, UTC).date()
    same_day = captures_json(data_dir, "http://site0001.test", "--prefix",
                             "--from", day.strftime("%Y%m%d"), "--to", day.isoformat())
    assert len(same_day) == len(site)  # the crawl took seconds (or crossed one midnight)
    before = run_cli("--data-dir", data_dir, "captures", "http://site0001.test", "--prefix",
                     "--to", (day - timedelta(days=1)).strftime("%Y%m%d"))
    assert before.returncode == 1 and "0 capture(s)" in before.stdout
    limited = captures_json(data_dir, "http://site0001.test", "--prefix", "--limit", "2")
    assert limited == site[:2]

    session_id = site[0]["session_id"]
    pages = captures_json(data_dir, "--session", session_id)
    assert len(pages) == report["pages"] and {c["kind"] for c in pages} == {"page"}
    every = captures_json(data_dir, "--session", session_id, "--requests")
    assert len(every) == report["captures"]

    body = next(c["body_sha256"] for c in site if c["stored"])
    same_body = captures_json(data_dir, "--sha256", f"sha256:{body}")
    assert same_body and all(c["body_sha256"] == body for c in same_body)
    assert {c["id"] for c in every if c["body_sha256"] == body} == {c["id"] for c in same_body}


def test_a_unique_start_of_a_hash_or_session_id_is_enough(
        ingested: tuple[str, dict[str, Any]]) -> None:
    data_dir, _report = ingested
    site = captures_json(data_dir, "http://site0001.test", "--prefix")
    bodies = sorted({c["body_sha256"] for c in captures_json(
        data_dir, "--session", site[0]["session_id"], "--requests") if c["body_sha256"]})
    body = bodies[0]
    # The shortest start of `body` that no other body hash shares, in upper case.
    short = next(body[:n] for n in range(4, 65)
                 if not any(other.startswith(body[:n]) for other in bodies[1:]))
    assert captures_json(data_dir, "--sha256", short.upper()) == captures_json(
        data_dir, "--sha256", body)
    session_id = site[0]["session_id"]
    assert captures_json(data_dir, "--session", session_id[:8].upper()) == captures_json(
        data_dir, "--session", session_id)

    # A start several hashes share: each listed, one a line; exit 2 (give more of it).
    shared = next(h[:1] for h in bodies if sum(b.startswith(h[:1]) for b in bodies) >= 2)
    sharing = [b for b in bodies if b.startswith(shared)]
    ambiguous = run_cli("--data-dir", data_dir, "captures", "--sha256", shared)
    assert ambiguous.returncode == 2 and ambiguous.stdout == ""
    lines = ambiguous.stderr.strip().splitlines()
    assert lines[0].startswith(f"archive-pipelines: error: --sha256 '{shared}' starts ")
    assert lines[1:] == [f"  {b}" for b in sharing[:10]] + (["  ..."] if len(sharing) > 10 else [])
    # A start no hash or session has: a miss, exit 1, like a lookup that finds nothing.
    nothing = next(f"{n:04x}" for n in range(65536)
                   if not any(b.startswith(f"{n:04x}") for b in bodies))
    missed = run_cli("--data-dir", data_dir, "captures", "--sha256", nothing)
    assert missed.returncode == 1 and "no capture body hash starts with" in missed.stderr
    other = "0" if not session_id.startswith("0") else "1"
    assert run_cli("--data-dir", data_dir, "captures", "--session", other).returncode == 1


@pytest.mark.parametrize("args", [
    ["https://site0001.test/"],
    ["http://site0001.test/never/crawled.html"],
    ["--session", "00000000-0000-0000-0000-000000000000"],
    ["--sha256", "0" * 64],
])
def test_no_match_exits_1(ingested: tuple[str, dict[str, Any]], args: list[str]) -> None:
    data_dir, _report = ingested
    done = run_cli("--data-dir", data_dir, "captures", *args)
    assert done.returncode == 1 and done.stderr == ""
    assert done.stdout.startswith("0 capture(s) ")
    as_json = run_cli("--data-dir", data_dir, "captures", *args, "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["captures"] == []


def test_ingest_crawl_reports_a_refused_record_and_exits_1(crawl_data: Path) -> None:
    segment = sorted(crawl_data.glob("sessions/*/*/*.jsonl"))[0]
    record = json.loads(segment.read_bytes().splitlines()[0])
    record["requests"][0]["response"]["status_code"] = "abc"
    hostile = segment.parent / "20991231T235959000000Z_000099.jsonl"
    hostile.write_text(json.dumps(record) + "\n")
    done = run_cli("--data-dir", str(crawl_data), "ingest-crawl", "--all")
    assert done.returncode == 1
    relative = hostile.relative_to(crawl_data).as_posix()
    assert f"  {relative}: record at byte 0: requests[0].response.status_code 'abc' is not " \
           "an HTTP status" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.unit
@pytest.mark.parametrize(("title", "shown"), [
    ("B\u00fccher", '"B\u00fccher"'),
    ('say "hi"\\', '"say \\"hi\\"\\\\"'),
    ("\x1b[2J\x1b]0;owned\x07 \u009b", '"\\u001b[2J\\u001b]0;owned\\u0007 \\u009b"'),
    ("x" * 81, '"' + "x" * 79 + '\u2026"'),
    ("x" * 80, '"' + "x" * 80 + '"'),
    ("abc\u202egnp.exe\u2028\x7f", '"abc\\u202egnp.exe\\u2028\\u007f"'),
])
def test_a_title_in_a_listing_is_quoted_cut_and_never_a_terminal_control(title: str,
                                                                          shown: str) -> None:
    assert listing_title(title) == shown
