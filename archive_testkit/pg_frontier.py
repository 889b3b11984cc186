"""A PostgreSQL frontier of the design the crawler replaced (`frontier`, `visited_urls`,
`domain_metadata`), filled with COPY: what `migrate-from-postgres` tests and benchmarks read.

`frontier.url` is indexed but not unique and the table has no primary key (the worst case
for a migration: it must order by the URL and cut batches where it changes).
"""

from __future__ import annotations

import hashlib
import io
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SCHEMA = """
CREATE TABLE frontier (url TEXT NOT NULL, domain TEXT NOT NULL, depth INTEGER NOT NULL DEFAULT 0,
                       added_timestamp BIGINT NOT NULL);
CREATE INDEX frontier_url ON frontier (url);
CREATE TABLE visited_urls (url TEXT PRIMARY KEY, url_sha256 CHAR(64) NOT NULL,
                           crawled_timestamp BIGINT NOT NULL, http_status_code INTEGER,
                           content_storage_path TEXT, redirected_to_url TEXT);
CREATE TABLE domain_metadata (domain TEXT PRIMARY KEY, robots_txt_content TEXT,
                              robots_txt_expires_timestamp BIGINT,
                              is_manually_excluded BOOLEAN NOT NULL DEFAULT FALSE,
                              last_scheduled_fetch_timestamp BIGINT);
"""

FrontierRow = tuple[str, str, int, int]
VisitedRow = tuple[str, str, int, int | None, str | None, str | None]
DomainRow = tuple[str, str | None, int | None, bool, int | None]


@dataclass
class PgFrontier:
    """The three tables' rows."""

    frontier: list[FrontierRow] = field(default_factory=list)
    visited: list[VisitedRow] = field(default_factory=list)
    domains: list[DomainRow] = field(default_factory=list)


def libpq(dsn: str) -> str:
    return dsn.replace("postgresql+psycopg2://", "postgresql://", 1)


def load(dsn: str, data: PgFrontier, *, create: bool = True) -> None:
    """Create the tables (unless `create` is False) and COPY the rows in."""
    import psycopg2

    conn = psycopg2.connect(libpq(dsn))
    try:
        with conn.cursor() as cur:
            if create:
                cur.execute(SCHEMA)
            _copy(cur, "frontier", data.frontier)
            _copy(cur, "visited_urls", data.visited)
            _copy(cur, "domain_metadata", data.domains)
        conn.commit()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("ANALYZE frontier; ANALYZE visited_urls; ANALYZE domain_metadata")
    finally:
        conn.close()


def visited_row(url: str, *, at: int, redirected_to: str | None = None) -> VisitedRow:
    return (url, hashlib.sha256(url.encode()).hexdigest(), at, 200,
            f"store/{hashlib.sha256(url.encode()).hexdigest()[:16]}", redirected_to)


def synthetic(hosts: Sequence[str], paths: Sequence[str], *, frontier_rows: int,
              visited_rows: int, visited_in_frontier: float = 0.1, excluded: int = 0,
              seed: int = 0, now: int = 1_700_000_000) -> PgFrontier:
    """frontier_rows URLs spread over `hosts` (paths drawn from `paths`, then numbered), a
    share of them also visited, more visited URLs outside the frontier, and one
    domain_metadata row per host (the first `excluded` hosts excluded, every third with an
    unexpired robots.txt and every third with an expired one, every other with a last
    scheduled fetch)."""
    rng = random.Random(seed)
    data = PgFrontier()
    urls = _urls(hosts, paths, frontier_rows)
    for url, host in urls:
        data.frontier.append((url, host, rng.randrange(3), now - rng.randrange(86_400)))
    frontier_urls = [url for url, _ in urls]
    shared = rng.sample(frontier_urls, int(len(frontier_urls) * visited_in_frontier))
    visited = set(shared)
    extra = 0
    while len(visited) < visited_rows + len(shared):
        host = hosts[extra % len(hosts)]
        visited.add(f"http://{host}/visited/{extra}.html")
        extra += 1
    data.visited = [visited_row(url, at=now - rng.randrange(86_400)) for url in sorted(visited)]
    fresh_until = int(time.time()) + 10 * 86_400
    for i, host in enumerate(hosts):
        robots = "User-agent: *\nDisallow: /private/\n" if i % 3 != 2 else None
        expires = fresh_until if i % 3 == 0 else now  # every third has expired
        data.domains.append((host, robots, expires if robots else None, i < excluded,
                             now - 60 if i % 2 == 0 else None))
    return data


def _urls(hosts: Sequence[str], paths: Sequence[str], count: int) -> list[tuple[str, str]]:
    """`count` distinct URLs, round-robin over hosts, the listed paths first."""
    out = []
    for n in range(count):
        host = hosts[n % len(hosts)]
        turn = n // len(hosts)
        path = paths[turn] if turn < len(paths) else f"/page/{turn}.html"
        out.append((f"http://{host}{path}", host))
    return out


def _copy(cur: object, table: str, rows: Iterable[tuple[object, ...]]) -> None:
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(r"\N" if v is None else _field(v) for v in row) + "\n")
    buffer.seek(0)
    cur.copy_expert(f"COPY {table} FROM STDIN", buffer)  # type: ignore[attr-defined]


def _field(value: object) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
