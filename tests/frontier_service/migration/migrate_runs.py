"""Running `migrate-from-postgres` as a child process, and reading back what it built."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from archive_testkit.pg_frontier import PgFrontier
from frontier_service.frontier.frontier_files import FrontierFiles, walk
from tests.frontier_service.service.cli_runs import REPO, child_env


def migrate_args(dsn: str, data: Path, redis_url: str, crawl: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "frontier_service", "--data-dir", str(data), "--redis-url",
            redis_url, "--crawl-name", crawl, "migrate-from-postgres", dsn, *extra]


def migrate(dsn: str, data: Path, redis_url: str, crawl: str, *extra: str,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(migrate_args(dsn, data, redis_url, crawl, *extra), cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def start_migration(dsn: str, data: Path, redis_url: str, crawl: str,
                    *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(migrate_args(dsn, data, redis_url, crawl, *extra), cwd=REPO,
                            env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)


@dataclass(frozen=True)
class Expected:
    """What the files must hold after migrating a PgFrontier: canonical URL -> domain."""

    queued: dict[str, str]
    visited: set[str]  # canonical visited URLs and redirect targets
    excluded: set[str]  # domain keys


def expected_from(data: PgFrontier) -> Expected:
    visited = set()
    for visited_row in data.visited:
        for url in (visited_row[0], visited_row[5]):
            found = try_canonical_url_and_domain(url) if url else None
            if found is not None:
                visited.add(found[0])
    queued = {}
    for frontier_row in data.frontier:
        found = try_canonical_url_and_domain(frontier_row[0])
        if found is not None and found[0] not in visited:
            queued[found[0]] = found[1]
    excluded = set()
    for domain_row in data.domains:
        found = try_canonical_url_and_domain(f"http://{domain_row[0]}/")
        if domain_row[3] and found is not None:
            excluded.add(found[1])
    return Expected(queued, visited, excluded)


def lines_in_files(root: Path) -> tuple[Counter[str], dict[str, str], int]:
    """(every queued URL with how often it occurs, URL -> file's domain, corrupt lines)."""
    files = FrontierFiles(root)
    counts: Counter[str] = Counter()
    where = {}
    try:
        for domain, _, _ in walk(root):
            assert domain is not None
            records, _ = files.read_from(domain, 0, 10_000_000)
            for record in records:
                counts[record.url] += 1
                where[record.url] = domain
        return counts, where, files.corrupt_lines
    finally:
        files.close()


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)
