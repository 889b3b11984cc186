"""`frontier-service serve` as a child process, the crawl requests it takes, and what they left
in the data dir: the serve tests' helpers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from archive_pipelines.catalog import Catalog, CrawlRequest
from archive_pipelines.crawls.definitions import CrawlDefinition
from archive_pipelines.crawls.requests import get_crawl, queue_crawl
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import load_settings
from frontier_service.archiving import iter_records
from tests.frontier_service.service.cli_runs import REPO, child_env
from tests.frontier_service.service.tree_site import HOST, TreeSite

# Quick enough for tests: polls, heartbeats and a dead crawler's takeover in seconds.
FAST = ("--poll-seconds", "0.2", "--heartbeat-seconds", "0.3", "--stale-after", "2",
        "--exit-when-idle", "0.5")


def definition(site: TreeSite, *, name: str = "tree", depth: int = 3,
               min_delay_s: float = 0.0, per_host: int = 4) -> CrawlDefinition:
    """A definition of the tree site."""
    return CrawlDefinition(name=name, seeds=(f"http://{HOST}/",), allowed_domains=(HOST,),
                           allowed_networks=(f"127.0.0.1:{site.port}",),
                           host_map=((HOST, f"127.0.0.1:{site.port}"),), max_depth=depth,
                           per_host_concurrency=per_host, min_delay_seconds=min_delay_s)


def definition_toml(site: TreeSite, name: str) -> str:
    """The same definition as a `[[crawls]]` table of archive.toml."""
    return (f'[[crawls]]\nname = "{name}"\nseeds = ["http://{HOST}/"]\n'
            f'allowed_domains = ["{HOST}"]\nallowed_networks = ["127.0.0.1:{site.port}"]\n'
            f'host_map = {{ "{HOST}" = "127.0.0.1:{site.port}" }}\nmax_depth = 3\n'
            f'per_host_concurrency = 4\nmin_delay_seconds = 0.0\n')


@contextmanager
def initialized(data: Path, archive_toml: str = "") -> Iterator[Catalog]:
    """An initialized data dir (with this archive.toml) and its catalog (closed afterwards)."""
    if archive_toml:
        data.mkdir(parents=True)
        (data / "archive.toml").write_text(archive_toml)
    settings = load_settings(data, environ={})
    initialize(settings)
    catalog = Catalog.open(settings.catalog_url)
    try:
        yield catalog
    finally:
        catalog.close()


def queue(catalog: Catalog, site: TreeSite, **changes: Any) -> CrawlRequest:
    body = definition(site, **changes)
    return queue_crawl(catalog, body.as_dict(), name=body.name, requested_by="test")


def start_serve(data: Path, redis_url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "frontier_service", "--data-dir", str(data), "--redis-url",
         redis_url, "serve", *FAST, *extra], cwd=REPO, env=child_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_serve(process: subprocess.Popen[str], timeout: float = 60) -> str:
    """SIGTERM, then its exit (status 0 asserted); returns its log. A serve that wait_for
    already found exited or killed is left alone: its error (with the log) is the one
    raised, not a second one about the kill's exit status."""
    reaped = process.returncode is not None
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=timeout)
    assert reaped or process.returncode == 0, err[-4000:]
    return err


def wait_for(catalog: Catalog, crawl_id: str, *, states: tuple[str, ...] = ("finished",),
             pages: int = 0, timeout: float = 90,
             process: subprocess.Popen[str] | None = None) -> CrawlRequest:
    """The request once it is in one of `states` with at least `pages` pages of progress."""
    deadline = time.monotonic() + timeout
    request = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"serve exited {process.returncode}: "
                                 f"{process.communicate()[1][-4000:]}")
        request = get_crawl(catalog, crawl_id)
        assert request is not None
        if request.state in states and int(request.progress.get("pages", 0)) >= pages:
            return request
        time.sleep(0.1)
    log = ""
    if process is not None:
        process.kill()
        log = process.communicate()[1][-4000:]
    raise AssertionError(f"crawl {crawl_id} not {states} with {pages} pages after {timeout} s: "
                         f"{request}\n{log}")


def fetched_pages(data: Path) -> list[str]:
    """The page URLs every crawl of the data dir fetched, once per fetch."""
    return [record["page_url"] for record in iter_records(data / "sessions")
            if record["requests"]]


def every_page(site: TreeSite, depth: int) -> set[str]:
    """The tree site's page URLs down to `depth`, as the crawler writes them."""
    pages, level = {"/"}, ["/"]
    for _ in range(depth):
        level = [child for path in level for child in _children(site, path)]
        pages.update(level)
    return {f"http://{HOST}{path}" for path in pages}


def _children(site: TreeSite, path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    if not parts:
        return [f"/a{i}" for i in range(site.wide)]
    if len(parts) == 1:
        return [f"{path}/b{i}" for i in range(site.deep)]
    if len(parts) == 2:
        return [f"{path}/c{i}" for i in range(3)]
    return []


def gone(pid: int, timeout: float) -> bool:
    """Whether process `pid` exits (or is a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def kill_quietly(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
