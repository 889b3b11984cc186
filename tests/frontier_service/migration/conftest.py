"""A PostgreSQL frontier of ~50,000 rows over 1,000 domains, built once per module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from archive_testkit.pg_frontier import PgFrontier, load, synthetic, visited_row
from archive_testkit.servers import create_database, drop_database

HOSTS = [f"site{i:04d}.example" for i in range(1000)]


def fifty_thousand() -> PgFrontier:
    """50,000 distinct URLs, 10% of them visited, 5,000 more visited, 40 domains excluded,
    plus the awkward rows: the same URL twice, a URL that differs only in case of its host,
    invalid URLs, a visited URL that redirected to a frontier URL."""
    data = synthetic(HOSTS, ["/", "/about.html"], frontier_rows=50_000, visited_rows=5_000,
                     visited_in_frontier=0.1, excluded=40, seed=34)
    now = 1_700_000_000
    data.frontier += [
        ("http://site0001.example/page/7.html", "site0001.example", 1, now),  # a twin row
        ("http://SITE0002.example/page/7.html", "site0002.example", 1, now),  # a canonical twin
        ("ftp://site0003.example/file", "site0003.example", 0, now),
        ("http://", "", 0, now),
        ("http://site0004.example/redirected-here", "site0004.example", 0, now),
    ]
    data.visited.append(visited_row("http://site0004.example/old", at=now,
                                    redirected_to="http://site0004.example/redirected-here"))
    return data


@pytest.fixture(scope="module")
def pg_data() -> PgFrontier:
    return fifty_thousand()


@pytest.fixture(scope="module")
def pg_dsn(postgres_server_url: str, pg_data: PgFrontier) -> Iterator[str]:
    name = f"mig_{uuid.uuid4().hex[:10]}"
    url = create_database(postgres_server_url, name)
    load(url, pg_data)
    try:
        yield url.replace("postgresql+psycopg2://", "postgresql://", 1)
    finally:
        drop_database(postgres_server_url, name)
