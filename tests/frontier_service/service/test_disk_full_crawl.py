"""The data disk fills up mid-crawl (issue 18): `frontier-service run` on a data dir in a
4 MiB tmpfs, crawling a test web of 40-80 KB pages that does not fit.

The crawl drains and exits 2 with one line saying the disk is full (its JSON summary still
printed); no URL is consumed without its page record (every URL before a domain's read
offset in Redis has one, in a segment or a journal); every domain is released. Once the
tmpfs is grown, the same command finishes the crawl: every page an undisturbed crawl
fetches is fetched and recorded with its body in the store, `ingest-crawl --all` records
them and `verify --deep` is healthy.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.tmpfs import resize_tmpfs
from frontier_service.archiving import iter_records, journal_files
from frontier_service.archiving.page_journal import JournaledIndexWriter, recover_journals
from frontier_service.frontier.frontier_files import FrontierFiles
from tests.frontier_service.service.cli_runs import cli
from tests.helpers.cli import run_cli
from tests.helpers.crawls import delete_keys

pytestmark = pytest.mark.faults

WEB = TestWebConfig(seed=18, hosts=6, pages_per_host=25, links_per_page=12,
                    cross_host_fraction=0.2, page_min_bytes=40_000, page_max_bytes=80_000,
                    latency_ms=2.0, robots_fraction=1.0, crawl_delay_fraction=0.0,
                    garbage_robots_fraction=0.0, huge_robots_hosts=0, special_fraction=0.0,
                    trap_fraction=0.0, dead_fraction=0.0)
SEEDS = [f"http://site{n:04d}.test/" for n in range(WEB.hosts)]

Key = tuple[str, str]


def run_args(data: Path, redis_url: str, name: str, port: int) -> list[str]:
    """`frontier-service run` until the frontier is empty; leases as long as the default, so
    a domain the stopped crawl did not release would hold up the rerun past --max-seconds."""
    args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", name, "run",
            "--host-map", f"*.test=127.0.0.1:{port}", "--allow-network", "127.0.0.0/8",
            "--allowed-domain", "*.test", "--max-depth", "30", "--min-delay", "0.02",
            "--concurrency", "8", "--segment-pages", "40", "--checkpoint-seconds", "0.5",
            "--lease-seconds", "120", "--exit-when-idle", "1", "--max-seconds", "60",
            "--progress-seconds", "0", "--loop", "asyncio"]
    for seed in SEEDS:
        args += ["--seed", seed]
    return args


def crawl(args: list[str]) -> tuple[int, dict[str, object], str]:
    """Run the crawl to its end: (exit status, its JSON summary, stderr)."""
    done = cli(*args, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, (json.loads(lines[-1]) if lines else {}), done.stderr


def page_counts(web: TestWeb) -> Counter[Key]:
    return Counter((r.host, r.path_qs) for r in web.log.records() if r.path_qs != "/robots.txt")


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture(scope="module")
def reachable(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> set[Key]:
    """What the same crawl fetches on a disk with room."""
    web.log.clear()
    name = f"full-{uuid.uuid4().hex[:8]}"
    data = tmp_path_factory.mktemp("roomy") / "data"
    try:
        code, summary, err = crawl(run_args(data, redis_url, name, web.port))
    finally:
        delete_keys(redis_url, name)
    assert code == 0 and summary["stopped"] == "frontier exhausted", err[-3000:]
    counts = page_counts(web)
    assert len(counts) > 100 and max(counts.values()) == 1
    return set(counts)


@pytest.fixture
def small_disk(tmpfs: Callable[[str], Path]) -> Path:
    """A 4 MiB tmpfs (see the `tmpfs` fixture)."""
    return tmpfs("4m")


def recorded_urls(data: Path) -> set[str]:
    """Page URLs with a record: in a closed segment or in a session's journal."""
    urls = {str(record["page_url"]) for record in iter_records(data / "sessions")}
    for journal in (data / "sessions" / ".journals").glob("*.journal"):
        for line in journal.read_bytes().splitlines():
            with contextlib.suppress(ValueError):  # a torn last line: never consumed
                urls.add(str(json.loads(line)["page_url"]))
    return urls


def consumed_urls(data: Path, redis_url: str, name: str) -> set[str]:
    """The URLs before each domain's read offset in Redis: the crawl is done with them."""
    client = redis.Redis.from_url(redis_url)
    files = FrontierFiles(data)
    consumed: set[str] = set()
    try:
        prefix = f"{name}:domain:"
        for key in client.scan_iter(match=f"{prefix}*"):
            domain = key.decode().removeprefix(prefix)
            read_offset = int(client.hget(key, "read_offset") or 0)
            position = 0
            while position < read_offset:
                records, position = files.read_from(domain, position, 1)
                if not records:
                    break
                if position <= read_offset:
                    consumed.add(records[0].url)
    finally:
        files.close()
        client.close()
    return consumed


def leased_domains(redis_url: str, name: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return int(client.zcard(f"{name}:domains:leased"))
    finally:
        client.close()


def test_a_full_data_disk_stops_the_crawl_in_one_line_and_a_rerun_finishes_it(
        web: TestWeb, reachable: set[Key], redis_url: str, crawl_name: str, small_disk: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = small_disk / "data"
    init = run_cli("--data-dir", str(data), "init")  # the catalog on the small disk too
    assert init.returncode == 0, init.stderr
    args = run_args(data, redis_url, crawl_name, web.port)
    web.log.clear()

    code, summary, err = crawl(args)

    assert code == 2, err[-3000:]
    assert "Traceback" not in err, err[-5000:]
    errors = [line for line in err.splitlines() if line.startswith("frontier-service: error:")]
    assert errors == [err.splitlines()[-1]] and errors[0].startswith(
        "frontier-service: error: data disk full: "), err[-3000:]
    assert "free space, then run it again" in errors[0]
    assert summary["failed"] is True and str(summary["stopped"]).startswith("data disk full: ")
    assert 0 < int(str(summary["pages"])) < len(reachable) * 0.7, "the disk filled too late"
    # No URL is consumed without its record; every domain was handed back.
    consumed = consumed_urls(data, redis_url, crawl_name)
    assert consumed, "nothing was consumed: the check below checks nothing"
    missing = consumed - recorded_urls(data)
    assert not missing, f"{len(missing)} URLs consumed without a record, e.g. {sorted(missing)[:3]}"
    assert leased_domains(redis_url, crawl_name) == 0

    resize_tmpfs(small_disk, "64m")
    code, summary, err = crawl(args)

    assert code == 0 and summary["stopped"] == "frontier exhausted", err[-3000:]
    assert summary["failed"] is False
    counts = page_counts(web)
    never = reachable - set(counts)
    assert not never, f"{len(never)} pages never fetched, e.g. {sorted(never)[:3]}"
    bodies: dict[str, str] = {}
    for record in iter_records(data / "sessions"):
        for request in record["requests"]:
            body = (request.get("response") or {}).get("body_hash")
            if body:
                bodies[str(record["page_url"])] = body.removeprefix("sha256:")
    for host, path_qs in reachable:
        sha256 = bodies.get(f"http://{host}{path_qs}")
        assert sha256 is not None, f"no record with a body for http://{host}{path_qs}"
        stored = data / "cas" / "sha256" / sha256[:2] / sha256[2:4] / sha256
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == sha256
    ingested = run_cli("--data-dir", str(data), "ingest-crawl", "--all")
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    verified = run_cli("--data-dir", str(data), "verify", "--deep")
    assert verified.returncode == 0, verified.stdout
    with capsys.disabled():  # in the test run's output, -q or not
        print(f"\n  data disk full: {sum(n - 1 for n in counts.values())} URLs fetched twice of "
              f"{len(reachable)} (the ones whose records were not durable at the stop)")


@pytest.mark.unit
def test_a_journal_append_the_disk_refuses_leaves_no_torn_line_and_keeps_its_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk takes half of a checkpoint's append, then is full: the half is cut off
    again, and the records stay buffered for the next append (a checkpoint that failed
    released nothing, so a later one must still write them)."""
    writer = JournaledIndexWriter(tmp_path, str(uuid.uuid4()))
    writer.add({"page_url": "http://a.test/1", "navigation_id": "n1", "requests": []})
    writer.journal.sync()
    path = writer.journal.path(writer.journal.generation)
    before = path.read_bytes()
    for n in (2, 3):
        writer.add({"page_url": f"http://a.test/{n}", "navigation_id": f"n{n}", "requests": []})
    real_write, calls = os.write, []

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        calls.append(1)
        if len(calls) == 1:
            return real_write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_files.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        writer.journal.sync()
    assert path.read_bytes() == before  # no torn line left behind
    monkeypatch.setattr(journal_files.os, "write", real_write)
    writer.journal.sync()  # space again: the same records go out whole
    writer.journal.abandon()  # the process stops without a segment
    (segment,) = recover_journals(tmp_path)
    urls = sorted(str(r["page_url"]) for r in iter_records(segment.path))
    assert urls == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
