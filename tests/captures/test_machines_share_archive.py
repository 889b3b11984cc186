"""Several machines, one archive: two `frontier-service run --machine` processes, each with a
data dir of its own, crawl one test web together on one Redis, writing to one S3 primary
(moto_server) and one PostgreSQL catalog. Ingested from one machine's data dir only, every
page is in the catalog once, whichever machine fetched it; a page the other machine fetched
replays from this one; and the other machine's data dir sees the same captures."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from sqlalchemy import select

from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.testweb.config import all_hosts
from archive_testkit.testweb.graph import absolute_links, is_page_path
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.seeding import add_seeds
from tests.frontier_service.service.cli_runs import child_env
from tests.helpers.crawls import refetch, unique_crawl_name
from tests.helpers.replay import fetch
from tests.helpers.s3_crawls import CLI, ROOT, local_segments, run_cli, segment_keys
from tests.helpers.s3_primary import s3_primary_data_dir

# Eight hosts linking to each other, nothing slow, dead or disallowed: the pages a crawl
# without a depth limit reaches follow from the link graph alone (see `reachable_pages`).
SHARED_WEB = TestWebConfig(
    seed=3402, hosts=8, pages_per_host=12, links_per_page=8, cross_host_fraction=0.35,
    page_min_bytes=1_000, page_max_bytes=3_000, latency_ms=1.0, robots_fraction=0.0,
    special_fraction=0.0, trap_fraction=0.0, dead_fraction=0.0, huge_robots_hosts=0,
    garbage_robots_fraction=0.0, crawl_delay_fraction=0.0)
HOSTS = all_hosts(SHARED_WEB)
SEEDS = tuple(f"http://{host}/" for host in HOSTS[:2])
SLOTS = 8
IDLE_S = 10  # covers seeding the crawl once both machines joined (and a late start)


@pytest.fixture(scope="module")
def shared_web() -> Iterator[TestWeb]:
    with serve_in_background(SHARED_WEB) as running:
        yield running


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    with unique_crawl_name(redis_url, "share") as name:
        yield name


def reachable_pages() -> set[tuple[str, str]]:
    """(host, path) of every HTML page of the test web the seeds lead to, through any chain
    of links (queries left out: a page linked as `/p1.html?ref=nav` is the same page)."""
    todo = [urlsplit(seed) for seed in SEEDS]
    found: set[tuple[str, str]] = set()
    while todo:
        parts = todo.pop()
        page = (parts.hostname or "", parts.path or "/")
        if page in found or page[0] not in HOSTS or not is_page_path(SHARED_WEB, page[1]):
            continue
        found.add(page)
        todo += [urlsplit(link) for link in absolute_links(SHARED_WEB, *page)]
    return found


def scope_args(port: int) -> list[str]:
    args = ["--host-map", f"*.test=127.0.0.1:{port}", "--allow-network", "127.0.0.0/8",
            "--max-depth", "100"]
    for host in HOSTS:
        args += ["--allowed-domain", host]
    return args


def machine_args(data: Path, redis_url: str, crawl_name: str, port: int, name: str) -> list[str]:
    """A machine of the crawl, without seeds: it waits (up to IDLE_S) for the test to seed
    the crawl once both machines hold their share of the slots."""
    return ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name,
            "run", "--machine", name, "--slots", str(SLOTS), "--machine-lease", "3",
            *scope_args(port), "--min-delay", "0.05", "--concurrency", "8",
            "--segment-pages", "25", "--progress-seconds", "1", "--loop", "asyncio",
            "--exit-when-idle", str(IDLE_S)]


async def seed(data: Path, redis_url: str, crawl_name: str, port: int) -> int:
    """Queue SEEDS as `frontier-service seed` does: into the inboxes of their owners."""
    settings = CrawlerSettings(data_dir=data, redis_url=redis_url, crawl_name=crawl_name,
                               allowed_domains=tuple(HOSTS), allowed_networks=("127.0.0.0/8",),
                               host_map=(("*.test", f"127.0.0.1:{port}"),), max_depth=100)
    async with open_frontier(settings) as (frontier, _url):
        return (await add_seeds(frontier, settings, SEEDS)).added


def wait_for_shares(redis_url: str, crawl_name: str, timeout: float = 60) -> dict[str, int]:
    """Until machines A and B each own half the slots (the second to start gets its share
    from the first); returns slots per machine."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            owners = Counter(str(m) for m in client.hgetall(f"{crawl_name}:slotmap").values())
            if owners == {"A": SLOTS // 2, "B": SLOTS // 2}:
                return dict(owners)
            time.sleep(0.1)
    finally:
        client.close()
    raise AssertionError(f"the slots were not shared out in {timeout} s: {owners}")


def crawl(args: list[str], logs: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """`frontier-service run` as a child, its output in files (a pipe nobody reads while
    the test waits for the other machine would stop it when full)."""
    with open(f"{logs}.out", "wb") as out, open(f"{logs}.err", "wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "frontier_service", *args,
                                    "--metrics-port", "-1"], cwd=ROOT, env=child_env(),
                                   stdout=out, stderr=err)
    return process, logs


def finished(process: subprocess.Popen[bytes], logs: Path) -> tuple[int, dict, str]:
    """(exit code, the run's JSON summary, the end of its log)."""
    try:
        code = process.wait(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    lines = [line for line in Path(f"{logs}.out").read_text().splitlines()
             if line.startswith("{")]
    return code, json.loads(lines[-1]) if lines else {}, Path(f"{logs}.err").read_text()[-3000:]


def fetched_urls(web: TestWeb) -> Counter[str]:
    """Requests per URL the web answered (robots.txt left out: each machine asks for it)."""
    return Counter(f"http://{r.host}{r.path_qs}" for r in web.log.records()
                   if r.path_qs != "/robots.txt")


def catalog_captures(settings: Settings) -> list[tuple[str, str, int]]:
    """(session, URL, fetched_ms) of every capture in the catalog of `settings`."""
    parts = open_storage(settings)
    try:
        with parts.catalog.reading() as tx:
            rows = tx.session.execute(
                select(PageFetch.session_id, PageFetch.url, PageFetch.fetched_ms)).all()
    finally:
        parts.close()
        parts.catalog.engine.dispose()
    return [(str(session), str(url), int(ms)) for session, url, ms in rows]


def cli_json(data: Path, *args: str) -> dict:
    done = run_cli(data, *args, "--json")
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return dict(json.loads(done.stdout))


def test_two_machines_crawl_into_one_archive_that_either_reads(
        shared_web: TestWeb, redis_url: str, s3_endpoint_url: str, s3_bucket: str,
        postgres_url: str, crawl_name: str, tmp_path: Path) -> None:
    a, b = (s3_primary_data_dir(tmp_path / name, endpoint_url=s3_endpoint_url, bucket=s3_bucket,
                                catalog_url=postgres_url) for name in ("a", "b"))
    shared_web.log.clear()
    runs = [crawl(machine_args(data, redis_url, crawl_name, shared_web.port, name),
                  tmp_path / name) for data, name in ((a.data_dir, "A"), (b.data_dir, "B"))]
    try:
        wait_for_shares(redis_url, crawl_name)
        added = asyncio.run(seed(b.data_dir, redis_url, crawl_name, shared_web.port))
        assert added == len(SEEDS)
    finally:
        (code_a, run_a, err_a), (code_b, run_b, err_b) = (finished(*run) for run in runs)
    assert code_a == 0 and run_a["stopped"] == "frontier exhausted", err_a
    assert code_b == 0 and run_b["stopped"] == "frontier exhausted", err_b
    sessions = {"A": str(run_a["session_id"]), "B": str(run_b["session_id"])}
    assert sessions["A"] != sessions["B"]

    # Both machines wrote to the bucket only: no segment or body is left in either data dir.
    for data in (a.data_dir, b.data_dir):
        assert local_segments(data) == []
        assert [p for p in (data / "cas").rglob("*") if p.is_file()] == []
    segments = segment_keys(s3_endpoint_url, s3_bucket)
    for name, run in (("A", run_a), ("B", run_b)):
        mine = [key for key in segments if f"/{sessions[name]}/" in key]
        assert run["segments"] and len(mine) == run["segments"], (name, mine, run)
    assert len(segments) == len(set(segments)) == int(run_a["segments"]) + int(run_b["segments"])

    # Machine B alone ingests: A's segments come from the bucket.
    totals = cli_json(b.data_dir, "ingest-crawl", "--all")
    assert (totals["missing_bodies"], totals["segments_failed"], totals["rejected"]) == (0, 0, 0)
    assert totals["segments_ingested"] == len(segments), totals

    web_fetched = fetched_urls(shared_web)
    assert web_fetched and max(web_fetched.values()) == 1, web_fetched.most_common(3)
    rows = catalog_captures(b)
    by_session: dict[str, Counter[str]] = {}
    for session, url, _ms in rows:
        by_session.setdefault(session, Counter())[url] += 1
    assert set(by_session) == set(sessions.values())
    everything = by_session[sessions["A"]] + by_session[sessions["B"]]
    twice = {url: n for url, n in everything.items() if n > 1}
    assert not twice, twice  # each URL captured once, by one machine
    assert set(everything) == set(web_fetched), (set(web_fetched) - set(everything),
                                                 set(everything) - set(web_fetched))
    pages = reachable_pages()
    captured_pages = {(urlsplit(url).hostname, urlsplit(url).path) for url in everything}
    assert len(pages) > 50 and pages <= captured_pages, pages - captured_pages
    by_a, by_b = set(by_session[sessions["A"]]), set(by_session[sessions["B"]])
    assert len(by_a) > 10 and len(by_b) > 10, (len(by_a), len(by_b))
    for name, run in (("A", run_a), ("B", run_b)):  # every page a machine archived
        assert sum(by_session[sessions[name]].values()) == run["pages"], (name, run)

    # A page A fetched replays from B's data dir with the web's bytes (its body: the bucket).
    page = next(url for url in sorted(by_a) if not urlsplit(url).query
                and (urlsplit(url).hostname, urlsplit(url).path) in pages)
    [fetched_ms] = [ms for session, url, ms in rows if url == page]
    replay_matches_the_web(b.data_dir, shared_web, page, fetched_ms=fetched_ms)

    # A's data dir sees B's captures: the counts, a URL B fetched, and B's session.
    status = run_cli(a.data_dir, "status")
    assert status.returncode == 0, status.stderr[-3000:]
    counted = re.search(r"^captures\s+([0-9,]+)$", status.stdout, re.MULTILINE)
    assert counted and int(counted[1].replace(",", "")) == sum(everything.values()), status.stdout
    url_b = sorted(by_b)[0]
    found = cli_json(a.data_dir, "captures", url_b)["captures"]
    assert [c["session_id"] for c in found] == [sessions["B"]], found


def replay_matches_the_web(data: Path, web: TestWeb, url: str, *, fetched_ms: int) -> None:
    """`archive-pipelines replay` on `data` answers `url`'s capture, unrewritten (`id_`),
    with the bytes the web serves."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    process = subprocess.Popen([*CLI, "--data-dir", str(data), "replay", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=ROOT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        listening = re.search(r"http://127\.0\.0\.1:([0-9]+)/web/", line)
        if not listening:
            process.kill()
            raise AssertionError(f"replay did not start: {line!r} {process.communicate()[1]}")
        answer = fetch(int(listening[1]), f"/web/{timestamp_of(fetched_ms)}id_/{url}")
        parts = urlsplit(url)
        status, body = refetch(web.port, parts.hostname or "", parts.path or "/")
        assert (answer.status, answer.body) == (status, body), (url, answer.status)
    finally:
        process.kill()
        process.communicate(timeout=10)

