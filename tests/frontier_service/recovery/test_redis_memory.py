"""A Redis that cannot hold the crawl stops it with one line, never a rebuild loop.

Each test starts its own redis-server (its memory settings are the fault) and runs
`python -m frontier_service` against a test web: a policy that evicts any key is refused
before anything is queued; evictions or out-of-memory replies mid-run stop the run with
exit 2 within a bounded time, naming them; a rerun once Redis is healthy fetches every page.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from archive_pipelines.embedded_redis import LocalRedis
from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.testweb.config import all_hosts
from archive_testkit.testweb.graph import absolute_links, is_page_path
from frontier_service.recovery.epoch import EpochState, check_epoch
from frontier_service.recovery.frontier_recovery import REBUILDS_PER_WINDOW, FrontierRecovery
from frontier_service.recovery.redis_memory import RedisCannotHoldCrawl
from tests.frontier_service.frontier.helpers import connect, open_frontier
from tests.frontier_service.service.cli_runs import cli, finish, start, wait_for_pages

pytestmark = pytest.mark.faults

WEB = TestWebConfig(seed=21, hosts=6, pages_per_host=50, links_per_page=12,
                    cross_host_fraction=0.2, page_min_bytes=1_000, page_max_bytes=2_000,
                    latency_ms=2.0, robots_fraction=1.0, crawl_delay_fraction=0.0,
                    garbage_robots_fraction=0.0, huge_robots_hosts=0, special_fraction=0.0,
                    trap_fraction=0.0, dead_fraction=0.0)
HOSTS = all_hosts(WEB)
STOP_WITHIN_S = 20.0  # from the fault to the exit: a failure bound, not the expected time

Page = tuple[str, str]  # (host, path)


def reachable_pages() -> set[Page]:
    """The ordinary pages the seeds lead to, by the test web's own link graph."""
    todo: list[Page] = [(host, "/") for host in HOSTS]
    found = set(todo)
    while todo:
        for url in absolute_links(WEB, *todo.pop()):
            parts = urlsplit(url)
            page = (parts.hostname or "", parts.path)
            if page[0] in HOSTS and is_page_path(WEB, parts.path) \
                    and not parts.path.startswith("/private/") and page not in found:
                found.add(page)
                todo.append(page)
    return found


PAGES = reachable_pages()


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture
def server() -> Iterator[LocalRedis]:
    """This test's own redis-server: its memory settings are the test's to break."""
    with LocalRedis() as running:
        yield running


def common(data: Path, url: str, name: str) -> list[str]:
    return ["--data-dir", str(data), "--redis-url", url, "--crawl-name", name]


def run_args(data: Path, url: str, name: str, port: int, *extra: str) -> list[str]:
    args = [*common(data, url, name), "run", "--host-map", f"*.test=127.0.0.1:{port}",
            "--allow-network", "127.0.0.0/8", "--allowed-domain", "*.test",
            "--max-depth", "30", "--min-delay", "0.1", "--concurrency", "8",
            "--checkpoint-seconds", "0.5", "--lease-seconds", "5", "--exit-when-idle", "1",
            "--max-seconds", "90", "--progress-seconds", "0", "--loop", "asyncio", *extra]
    return [*args, *[a for host in HOSTS for a in ("--seed", f"http://{host}/")]]


def configure(url: str, **settings: str) -> dict[str, int]:
    """CONFIG SET on the test's own server; returns its INFO memory."""
    client = redis.Redis.from_url(url)
    try:
        for key, value in settings.items():
            client.config_set(key.replace("_", "-"), value)
        return dict(client.info("memory"))
    finally:
        client.close()


def keys_of(url: str, name: str) -> list[bytes]:
    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=f"{name}:*"))
    finally:
        client.close()


def pages_fetched(web: TestWeb) -> set[Page]:
    return {(r.host, urlsplit(r.path_qs).path) for r in web.log.records() if r.status == 200}


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("frontier-service: error:")]


@pytest.mark.parametrize("command", ["run", "seed"])
def test_a_policy_that_evicts_any_key_is_refused_at_start(
        web: TestWeb, server: LocalRedis, tmp_path: Path, command: str) -> None:
    configure(server.url, maxmemory="64mb", maxmemory_policy="allkeys-lru")
    name = f"mem-{uuid.uuid4().hex[:6]}"
    if command == "run":
        args = run_args(tmp_path / "data", server.url, name, web.port)
    else:
        args = [*common(tmp_path / "data", server.url, name), "seed", "--allowed-domain",
                "*.test", "--allow-network", "127.0.0.0/8", "http://site0000.test/"]
    done = cli(*args)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [
        f"frontier-service: error: Redis at {server.url} evicts keys when full (maxmemory "
        "64mb, maxmemory-policy allkeys-lru) and would lose the crawl's state: set "
        "maxmemory-policy noeviction (or maxmemory 0) on it, or use another Redis"]
    assert keys_of(server.url, name) == []  # nothing queued
    assert not list((tmp_path / "data" / "frontiers").rglob("*.frontier"))


def test_evictions_mid_run_stop_it_and_a_rerun_on_a_healthy_redis_finishes(
        web: TestWeb, server: LocalRedis, tmp_path: Path) -> None:
    web.log.clear()
    data, name = tmp_path / "data", f"mem-{uuid.uuid4().hex[:6]}"
    process, port = start(run_args(data, server.url, name, web.port))
    at = wait_for_pages(process, port, 40)
    used = configure(server.url)["used_memory"]
    configure(server.url, maxmemory=str(int(used * 0.8)), maxmemory_policy="allkeys-lru")
    fault = time.monotonic()
    code, summary, stderr = finish(process, timeout=STOP_WITHIN_S + 30)
    stopped_after = time.monotonic() - fault
    print(f"\n  evictions from {at} pages: exit {code} {stopped_after:.1f} s after the fault, "
          f"{summary.get('pages')} pages")
    assert code == 2, stderr[-3000:]
    assert stopped_after < STOP_WITHIN_S
    assert "Traceback" not in stderr, stderr[stderr.find("Traceback") - 400:][:3000]
    [line] = error_lines(stderr)
    assert line.startswith("frontier-service: error: Redis evicted ")
    assert "(maxmemory " in line and "maxmemory-policy allkeys-lru)" in line
    assert "set maxmemory-policy noeviction" in line
    assert summary["failed"] is True and str(summary["stopped"]).startswith("Redis evicted ")
    assert len(pages_fetched(web) & PAGES) < len(PAGES)  # stopped before the end

    # The operator fixes Redis and runs the same command again: it finishes the crawl.
    configure(server.url, maxmemory="0", maxmemory_policy="noeviction")
    rerun = cli(*run_args(data, server.url, name, web.port), timeout=90)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    missing = PAGES - pages_fetched(web)
    assert not missing, f"{len(missing)} of {len(PAGES)} pages never fetched: {sorted(missing)[:3]}"


def test_out_of_memory_mid_run_stops_every_process(
        web: TestWeb, server: LocalRedis, tmp_path: Path) -> None:
    """volatile-lru never evicts the crawl's keys (it sets no TTLs): writes fail instead,
    which is named and stops the run, two processes of it."""
    configure(server.url, maxmemory="256mb", maxmemory_policy="volatile-lru")  # accepted
    web.log.clear()
    data, name = tmp_path / "data", f"mem-{uuid.uuid4().hex[:6]}"
    process, port = start(run_args(data, server.url, name, web.port, "--processes", "2"))
    at = wait_for_pages(process, port, 40, timeout=60)
    used = configure(server.url)["used_memory"]
    configure(server.url, maxmemory=str(int(used * 0.9)))  # only the robots cache can go
    fault = time.monotonic()
    code, summary, stderr = finish(process, timeout=STOP_WITHIN_S + 30)
    stopped_after = time.monotonic() - fault
    print(f"\n  out of memory from {at} pages: exit {code} {stopped_after:.1f} s after the "
          f"fault, {summary.get('pages')} pages")
    assert code == 2, stderr[-3000:]
    assert stopped_after < STOP_WITHIN_S
    assert "Traceback" not in stderr, stderr[stderr.find("Traceback") - 400:][:3000]
    [line] = error_lines(stderr)
    assert line.startswith("frontier-service: error: Redis is out of memory (OOM command not "
                           "allowed")
    assert "maxmemory-policy volatile-lru" in line and "raise its maxmemory" in line
    assert summary["failed"] is True and summary["processes"] == 2
    assert str(summary["stopped"]).startswith("Redis is out of memory")


def test_a_redis_that_keeps_losing_the_crawl_is_rebuilt_a_bounded_number_of_times(
        server: LocalRedis, tmp_path: Path) -> None:
    """FLUSHALL again and again (no memory limit to blame): rebuilt from the files each
    time up to the bound, then the run's failure, instead of rebuilding for ever."""
    data = tmp_path / "data"

    async def scenario() -> str:
        async with open_frontier(server.url, data, "lossy") as frontier, \
                connect(server.url) as admin:
            recovery = FrontierRecovery(frontier, data)
            await recovery.on_start()
            await frontier.add_urls([(f"http://site{n}.test/", 0) for n in range(5)])
            for _ in range(REBUILDS_PER_WINDOW):
                await admin.flushall()
                await recovery.rebuild_lost()
                state = await check_epoch(admin, frontier.state.keys, recovery.crawl_id)
                assert state is EpochState.MATCH
                assert (await frontier.stats()).ready_domains == 5
            await admin.flushall()
            with pytest.raises(RedisCannotHoldCrawl) as refused:
                await recovery.rebuild_lost()
            assert await recovery.problem() == str(refused.value)
            return str(refused.value)

    reason = asyncio.run(scenario())
    assert reason.startswith(f"Redis lost the state of crawl 'lossy' {REBUILDS_PER_WINDOW + 1} "
                             "times in 60 s (maxmemory 0 (none), maxmemory-policy noeviction)")
    assert reason.endswith("nothing is lost (the data dir holds the crawl): run the crawl "
                           "again once Redis can hold it")
