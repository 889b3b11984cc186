"""Several machines, one crawl, end to end: each "machine" is a `frontier-service run
--machine NAME` child process with a data dir of its own, all on one Redis, crawling a test
web whose every request the test reads back. Two crawl together; one is killed and comes
back; one is lost for good and its loss is counted; bad input is refused."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.testweb.config import all_hosts
from frontier_service.archiving import iter_records
from frontier_service.frontier.frontier_files import walk
from frontier_service.frontier.slots import slot_of
from tests.frontier_service.service.cli_runs import cli, start, wait_for_pages
from tests.frontier_service.service.cli_runs import finish as finish_run
from tests.helpers.crawls import delete_keys

# Twelve hosts with links between them, nothing slow, dead or disallowed: a crawl without a
# depth limit fetches the same closure of URLs every time (the ordinary pages, the private
# pages some link to, and the junk links that answer 404).
MACHINES_WEB = TestWebConfig(
    seed=34, hosts=12, pages_per_host=15, links_per_page=10, cross_host_fraction=0.3,
    page_min_bytes=1_000, page_max_bytes=3_000, latency_ms=1.0, robots_fraction=0.0,
    special_fraction=0.0, trap_fraction=0.0, dead_fraction=0.0, huge_robots_hosts=0,
    garbage_robots_fraction=0.0, crawl_delay_fraction=0.0)
HOSTS = all_hosts(MACHINES_WEB)
SLOTS = 8
LEASE_S = 3
CONCURRENCY = 8


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(MACHINES_WEB) as running:
        yield running


def run_args(data: Path, redis_url: str, crawl_name: str, port: int, *extra: str,
             seeded: bool = True) -> list[str]:
    args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name,
            "run", "--host-map", f"*.test=127.0.0.1:{port}", "--allow-network", "127.0.0.0/8",
            "--max-depth", "100", "--min-delay", "0.05", "--concurrency", str(CONCURRENCY),
            "--segment-pages", "40", "--progress-seconds", "1", "--loop", "asyncio",
            "--lease-seconds", str(LEASE_S), "--exit-when-idle", "2"]
    for host in HOSTS:
        args += ["--allowed-domain", host]
    for host in HOSTS[:3] if seeded else ():
        args += ["--seed", f"http://{host}/"]
    return [*args, *extra]


def machine_args(data: Path, redis_url: str, crawl_name: str, port: int, name: str,
                 *extra: str, seeded: bool = True) -> list[str]:
    return run_args(data, redis_url, crawl_name, port, "--machine", name, "--slots", str(SLOTS),
                    "--machine-lease", str(LEASE_S), *extra, seeded=seeded)


def fetched(web: TestWeb) -> Counter[str]:
    """Requests per URL, robots.txt left out (each machine asks for it)."""
    return Counter(f"http://{r.host}{r.path_qs}" for r in web.log.records()
                   if r.path_qs != "/robots.txt")


@pytest.fixture(scope="module")
def closure(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every URL one machine, crawling alone, fetches: what the machines together must fetch."""
    web.log.clear()
    root = tmp_path_factory.mktemp("alone")
    name = f"alone-{uuid.uuid4().hex[:10]}"
    process, _ = start(run_args(root / "data", redis_url, name, web.port))
    code, summary, err = finish(process, timeout=90)
    delete_keys(redis_url, name)
    assert code == 0 and summary["stopped"] == "frontier exhausted", err[-3000:]
    counts = fetched(web)
    assert max(counts.values()) == 1
    web.log.clear()
    assert len(counts) > 300, len(counts)
    return set(counts)


def finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, dict, str]:
    """As cli_runs.finish; a run that does not end is killed, and its log shown."""
    try:
        return finish_run(process, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"the run did not end in {timeout} s:\n{err[-5000:]}") from None


def machines_json(data: Path, redis_url: str, crawl_name: str, *extra: str
                  ) -> tuple[int, dict, str]:
    done = cli("--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name,
               "machines", "--json", *extra)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, (json.loads(lines[-1]) if lines else {}), done.stderr


def file_domains(data: Path) -> set[str]:
    """The domains whose frontier files under a machine's data dir hold lines."""
    return {domain for domain, _, size in walk(data) if domain is not None and size}


def slot_owners(redis_url: str, crawl_name: str) -> dict[int, str]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        return {int(s): o for s, o in client.hgetall(f"{crawl_name}:slotmap").items()}
    finally:
        client.close()


def domain_hash(redis_url: str, crawl_name: str, domain: str) -> dict[str, str]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        return client.hgetall(f"{crawl_name}:domain:{domain}")
    finally:
        client.close()


def inbox_entries(redis_url: str, crawl_name: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return sum(int(client.xlen(f"{crawl_name}:inbox:{s}")) for s in range(SLOTS))
    finally:
        client.close()


def pages_of(data: Path) -> Counter[str]:
    return Counter(str(r["page_url"]) for r in iter_records(data / "sessions") if r["requests"])


def test_two_machines_fetch_every_url_once(web: TestWeb, closure: set[str], tmp_path: Path,
                                           redis_url: str, crawl_name: str) -> None:
    web.log.clear()
    a, b = tmp_path / "a", tmp_path / "b"
    first, _ = start(machine_args(a, redis_url, crawl_name, web.port, "A"))
    second, _ = start(machine_args(b, redis_url, crawl_name, web.port, "B"))
    code_a, sum_a, err_a = finish(first, timeout=90)
    code_b, sum_b, err_b = finish(second, timeout=90)
    assert code_a == 0 and sum_a["stopped"] == "frontier exhausted", err_a[-3000:]
    assert code_b == 0 and sum_b["stopped"] == "frontier exhausted", err_b[-3000:]

    counts = fetched(web)
    twice = {url: n for url, n in counts.items() if n > 1}
    assert not twice, twice
    assert set(counts) == closure, (closure - set(counts), set(counts) - closure)
    pages_a, pages_b = pages_of(a), pages_of(b)
    assert len(pages_a) > 30 and len(pages_b) > 30, (len(pages_a), len(pages_b))
    assert not set(pages_a) & set(pages_b)
    # What Redis counts as each machine's to fetch is in domains of the slots it owned to
    # the end; of its other files (domains it handed over) nothing is its own any more.
    owners = slot_owners(redis_url, crawl_name)
    for name, data in (("A", a), ("B", b)):
        for domain in file_domains(data):
            held = domain_hash(redis_url, crawl_name, domain)
            if owners.get(slot_of(domain, SLOTS)) != name:
                assert held.get("m") != name and f"ro@{name}" not in held, (name, domain, held)
    assert inbox_entries(redis_url, crawl_name) == 0

    # A crawl several machines run refuses a run without a machine name, and another
    # number of slots.
    done = cli(*run_args(a, redis_url, crawl_name, web.port, seeded=False))
    assert done.returncode != 0 and "--machine NAME" in done.stderr, done.stderr[-2000:]
    done = cli(*machine_args(a, redis_url, crawl_name, web.port, "A", "--slots", "16",
                             seeded=False))
    assert done.returncode != 0 and "this crawl has 8 slots, not 16" in done.stderr, \
        done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def wait_gone(redis_url: str, crawl_name: str, machine: str, timeout: float = 20) -> None:
    """Until `machine`'s lease ran out and another machine took its slots."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if machine not in slot_owners(redis_url, crawl_name).values():
            return
        time.sleep(0.1)
    raise AssertionError(f"{machine}'s slots were not taken over in {timeout} s")


def start_both_kill_a(web: TestWeb, redis_url: str, crawl_name: str, *, a: Path,
                      b: Path) -> subprocess.Popen[str]:
    """Machines A and B crawl from a cleared request log; A is killed (SIGKILL) once it
    fetched 40 pages. Returns B, still running."""
    web.log.clear()
    first, port_a = start(machine_args(a, redis_url, crawl_name, web.port, "A"))
    second, _ = start(machine_args(b, redis_url, crawl_name, web.port, "B"))
    wait_for_pages(first, port_a, 40)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    return second


def test_a_machine_killed_for_longer_than_its_lease_loses_no_url(
        web: TestWeb, closure: set[str], tmp_path: Path, redis_url: str,
        crawl_name: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    second = start_both_kill_a(web, redis_url, crawl_name, a=a, b=b)
    before_kill = web.log.records()
    killed_at = len(before_kill)
    wait_gone(redis_url, crawl_name, "A")  # B took A's slots: A's lines wait on its disk
    time.sleep(0.5)
    first, _ = start(machine_args(a, redis_url, crawl_name, web.port, "A"))
    code_a, sum_a, err_a = finish(first, timeout=90)
    code_b, sum_b, err_b = finish(second, timeout=90)
    assert code_a == 0 and sum_a["stopped"] == "frontier exhausted", err_a[-3000:]
    assert code_b == 0 and sum_b["stopped"] == "frontier exhausted", err_b[-3000:]
    assert len(web.log.records()) > killed_at

    counts = fetched(web)
    (tmp_path / "a.log").write_text(err_a)  # what the machines said, for a failure
    (tmp_path / "b.log").write_text(err_b)
    assert set(counts) == closure, (len(closure - set(counts)), sorted(closure - set(counts))[:8],
                                    set(counts) - closure, tmp_path)
    again = sum(n - 1 for n in counts.values())
    # As with one machine (tests/frontier_service/recovery/test_redis_loss.py): at most the
    # fetches in flight at the kill and those whose results were not durable yet, one
    # checkpoint round of fetching (0.05 s; past 0.25 s on a 2-core machine at load 16).
    last_second = sum(1 for r in before_kill if r.time >= before_kill[-1].time - 0.5)
    bound = CONCURRENCY + last_second
    print(f"URLs fetched again after the kill: {again} (bound {bound}: {CONCURRENCY} in "
          f"flight + {last_second} fetched in the last 0.5 s before it)")
    assert again <= bound, {url: n for url, n in counts.items() if n > 1}
    # Every fetched URL has its page record (the killed run's came back from its journal),
    # and only a URL fetched again has two.
    records = pages_of(a) + pages_of(b)
    assert set(records) == set(counts), (set(counts) - set(records), set(records) - set(counts))
    assert sum(n - 1 for n in records.values()) <= again
    assert inbox_entries(redis_url, crawl_name) == 0


def test_a_machine_lost_for_good_is_counted_and_forgotten(
        web: TestWeb, closure: set[str], tmp_path: Path, redis_url: str,
        crawl_name: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    second = start_both_kill_a(web, redis_url, crawl_name, a=a, b=b)
    code, _, err = machines_json(b, redis_url, crawl_name, "--forget", "B")
    assert code != 0 and "'B' is live" in err, err[-2000:]
    kept = tmp_path / "a-at-the-kill"
    shutil.copytree(a, kept)  # what was lost, read below
    shutil.rmtree(a)
    code_b, sum_b, err_b = finish(second, timeout=90)
    assert code_b == 0 and sum_b["stopped"] == "frontier exhausted", err_b[-3000:]

    code, report, err = machines_json(b, redis_url, crawl_name)
    assert code == 0, err[-2000:]
    lines = {m["name"]: m for m in report["machines"]}
    lost = lines["A"]
    assert not lost["live"] and lost["orphaned_domains"] > 0
    # The truth: the unfetched lines of A's files (as Redis recorded them when B took the
    # domains over), and the URLs of the test web nobody fetched.
    truth = lost_lines(redis_url, crawl_name, kept, "A")
    never = closure - set(fetched(web))
    print(f"lost with A: {lost['orphaned_domains']} domains, {lost['orphaned_bytes']} bytes, "
          f"~{lost['orphaned_urls']} URLs estimated, {sum(truth.values())} lines on its disk, "
          f"{len(never)} URLs of the web never fetched")
    assert lost["orphaned_domains"] == len(truth)
    assert abs(lost["orphaned_urls"] - sum(truth.values())) <= 0.25 * sum(truth.values()) + 2
    # Lines lost unfetched (a few fetched ones were in flight), plus what only their pages
    # linked to: more never fetched than A's disk held, none fetched twice.
    assert len(never) >= sum(truth.values()) - CONCURRENCY
    assert max(fetched(web).values()) == 1

    code, _, err = machines_json(b, redis_url, crawl_name, "--forget", "Z")
    assert code != 0 and "no machine named 'Z'" in err, err[-2000:]
    code, report, err = machines_json(b, redis_url, crawl_name, "--forget", "A")
    assert code == 0, err[-2000:]
    assert report["forgotten"]["domains"] == lost["orphaned_domains"]
    assert report["counters"]["domains_lost_with_machines"] == lost["orphaned_domains"]
    assert report["counters"]["bytes_lost_with_machines"] == lost["orphaned_bytes"]
    assert "A" not in {m["name"] for m in report["machines"]}


def lost_lines(redis_url: str, crawl_name: str, data: Path, machine: str) -> dict[str, int]:
    """Per domain that `machine` left orphaned: the frontier lines in the range Redis
    noted, read from a copy of its data dir."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        domains = client.smembers(f"{crawl_name}:orphans:{machine}")
        noted = {d: client.hget(f"{crawl_name}:domain:{d}", f"ro@{machine}") for d in domains}
    finally:
        client.close()
    paths = {domain: path for domain, path, _ in walk(data) if domain is not None}
    out = {}
    for domain, where in noted.items():
        assert where is not None, domain
        start_at, end = (int(n) for n in where.split())
        with open(paths[domain], "rb") as f:
            f.seek(start_at)
            chunk = f.read(end - start_at)
        out[domain] = sum(1 for line in chunk.split(b"\n") if line.strip(b"\0"))
    return out


def test_a_bad_machine_name_is_refused(web: TestWeb, tmp_path: Path, redis_url: str,
                                       crawl_name: str) -> None:
    done = cli(*machine_args(tmp_path / "a", redis_url, crawl_name, web.port, "a b"))
    assert done.returncode != 0 and "--machine: machine name 'a b'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
