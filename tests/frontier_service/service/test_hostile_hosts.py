"""Hosts serving compression bombs cost only their own slots: the real crawler, a bomb host
per encoding beside a documentation site, --min-delay 0, concurrency 16. Run once without the
bomb hosts (the baseline) and once with them. Each bomb host is retired at its third bomb in a
row, so the bombs are fetched side by side while the site is crawled."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from archive_testkit.hostile import ENCODINGS, HostileConfig, serve_hostile_in_subprocess
from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.testweb.docs_site import docs_paths
from frontier_service.archiving import iter_records
from tests.frontier_service.service.cli_runs import REPO, child_env
from tests.helpers.crawls import delete_keys

SITE = TestWebConfig(hosts=0, docs_pages=300, docs_links=60)
NORMAL = SITE.docs_host
BOMB_HOSTS = {kind: f"bombs-{n}.test" for n, kind in enumerate(ENCODINGS)}
BOMBS_SEEDED = 4  # per host: three are fetched, the third retires the host
BODY_CAP = 20 * 1024 * 1024  # the crawler's default max_body_bytes
BOMB = HostileConfig(bomb_bytes=1024 * 1024 * 1024, bombs_per_kind=8)


@dataclass
class Run:
    exit_code: int
    peak_rss: int  # bytes, the crawler process's high-water mark
    stderr: str
    data_dir: Path


@pytest.fixture(scope="module")
def site() -> Iterator[TestWeb]:
    with serve_in_background(SITE) as running:
        yield running


def crawl(tmp: Path, redis_url: str, seeds: dict[str, int]) -> Run:
    """`frontier-service run` from each host's seed until idle; peak RSS from wait4."""
    name = f"hostile-{uuid.uuid4().hex[:8]}"
    data = tmp / name
    args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", name, "run",
            "--allow-network", "127.0.0.0/8", "--min-delay", "0", "--concurrency", "16",
            "--max-depth", "3", "--exit-when-idle", "1", "--max-seconds", "50",
            "--metrics-port", "-1", "--progress-seconds", "1", "--loop", "asyncio"]
    for seed, port in seeds.items():
        host = seed.split("/")[2]
        args += ["--seed", seed, "--allowed-domain", host, "--host-map", f"{host}=127.0.0.1:{port}"]
    with open(tmp / f"{name}.log", "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "frontier_service", *args], cwd=REPO,
                                   env=child_env(), stdout=subprocess.DEVNULL, stderr=log)
        try:
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if process.returncode is None:
                process.kill()
                process.wait()
            delete_keys(redis_url, name)
    return Run(process.returncode, usage.ru_maxrss * 1024,
               (tmp / f"{name}.log").read_text(errors="replace"), data)


def largest_gap(site: TestWeb, host: str) -> float:
    times = sorted(r.time for r in site.log.records() if r.host == host)
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def test_a_bomb_host_stalls_nothing_else(site: TestWeb, redis_url: str, tmp_path: Path) -> None:
    normal_seed = f"http://{NORMAL}/"
    site.log.clear()
    baseline = crawl(tmp_path, redis_url, {normal_seed: site.port})
    assert baseline.exit_code == 0, baseline.stderr[-3000:]
    baseline_gap = largest_gap(site, NORMAL)

    site.log.clear()
    with serve_hostile_in_subprocess(BOMB) as bombs:
        seeds = {normal_seed: site.port}
        for kind, host in BOMB_HOSTS.items():
            seeds.update({f"http://{host}/bomb/{kind.replace(', ', '+')}/{n}": bombs.port
                          for n in range(BOMBS_SEEDED)})
        run = crawl(tmp_path, redis_url, seeds)
    assert run.exit_code == 0, run.stderr[-3000:]
    gap = largest_gap(site, NORMAL)
    print(f"\nnormal host's largest gap between requests: {gap:.3f} s with the bomb host, "
          f"{baseline_gap:.3f} s without; crawler peak RSS {run.peak_rss / 2**20:.0f} MiB with, "
          f"{baseline.peak_rss / 2**20:.0f} MiB without")

    assert "renewing leases failed" not in run.stderr
    fetched = {r.path_qs for r in site.log.records() if r.host == NORMAL and r.status == 200}
    assert set(docs_paths(SITE)) <= fetched
    assert run.peak_rss < baseline.peak_rss + 2 * BODY_CAP
    assert gap < 2.0

    # Three bombs of each host were fetched, each cut for its ratio, none reported as a
    # timeout; then the host was retired, saying why.
    reasons: Counter[str | None] = Counter()
    for record in iter_records(run.data_dir / "sessions"):
        for request in record["requests"]:
            if "/bomb/" in request["url"]:
                assert request["error"] is None, request["error"]
                reasons[request["response"]["body_truncated_reason"]] += 1
    assert reasons == {"decode ratio over 1000:1": 3 * len(BOMB_HOSTS)}, json.dumps(reasons)
    for host in BOMB_HOSTS.values():
        assert (f"not crawling {host} further: it answered decompression bombs"
                in run.stderr), run.stderr[-3000:]
