"""Running `python -m frontier_service` as a child process against the test web."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from archive_pipelines.server_process import free_port
from archive_testkit.testweb import hosts_where
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings
from tests.frontier_service.service.web import WEB

REPO = Path(__file__).resolve().parents[3]
# Live hosts only: the restart tests need no dead-host backoff to wait out.
HOSTS = hosts_where(WEB, lambda t: t.alive and not t.traps)[:6]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DAGSTER_HOME", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "frontier_service", *args], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def crawl_args(data_dir: Path, redis_url: str, crawl_name: str, port: int,
               *extra: str) -> list[str]:
    args = ["--data-dir", str(data_dir), "--redis-url", redis_url, "--crawl-name", crawl_name,
            "run", "--host-map", f"*.test=127.0.0.1:{port}", "--allow-network", "127.0.0.0/8",
            "--max-depth", "1", "--min-delay", "0.1", "--concurrency", "16",
            "--segment-pages", "40", "--progress-seconds", "1", "--loop", "asyncio",
            # visited_queue reads every URL queued back from the files: no compaction
            # (test_compaction_crawl.py crawls with it)
            "--compact-bytes", "0"]
    for host in HOSTS:
        args += ["--allowed-domain", host, "--seed", f"http://{host}/"]
    return [*args, *extra]


def start(args: Sequence[str]) -> tuple[subprocess.Popen[str], int]:
    """Start a crawl with a health endpoint; returns the process and its metrics port."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "frontier_service", *args,
                                "--metrics-port", str(port)], cwd=REPO, env=child_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, port


def metric(port: int, name: str) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    found = re.search(rf"^frontier_{name} (\d+)$", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def healthz(port: int) -> dict[str, object]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
        assert response.status == 200
        return dict(json.loads(response.read()))


def wait_for_pages(process: subprocess.Popen[str], port: int, pages: int,
                   timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        seen = metric(port, "pages_total")
        if seen is not None and seen >= pages:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"fewer than {pages} pages after {timeout} s")


def finish(process: subprocess.Popen[str], timeout: float = 40) -> tuple[int, dict[str, object], str]:
    """Wait for exit; returns (exit code, the JSON summary line or {}, stderr)."""
    out, err = process.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return process.returncode, (json.loads(lines[-1]) if lines else {}), err


def visited_queue(data: Path, redis_url: str, crawl_name: str) -> list[str]:
    """Every URL queued for HOSTS, after checking the crawl finished: nothing ready, leased
    or pending, no corrupt frontier line, and every queued URL visited."""
    settings = CrawlerSettings(data_dir=data, redis_url=redis_url, crawl_name=crawl_name)

    async def check() -> list[str]:
        async with open_frontier(settings) as (frontier, _):
            stats = await frontier.stats()
            assert stats.ready_domains == 0 and stats.leased_domains == 0
            assert stats.pending_bytes == 0
            queued = []
            for host in HOSTS:
                records, _ = frontier.files.read_from(host, 0, 1_000_000)
                visits = await frontier.visited.get_many([r.url for r in records])
                assert records and all(v is not None for v in visits)
                queued += [r.url for r in records]
            assert frontier.files.corrupt_lines == 0
        return queued

    return asyncio.run(check())
