"""(b) The seed's old design: PostgreSQL as the work queue, one connection per worker.

A `frontier` table claimed with `FOR UPDATE SKIP LOCKED`, a `domain_metadata` row per
domain for politeness (next allowed fetch time, reserved while a fetch is in flight),
`visited_urls`, and a batch insert of each page's discovered links. The fetch path is
the real crawler's (aiohttp fetcher, robots cache, link extraction, bodies into a blob
store); only the queue differs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import time
from pathlib import Path

import asyncpg

from archive_pipelines.blobstore import LocalBlobStore
from bench.crawl_baselines.common import Window, add_common_args, fetch_page, make_fetcher, seeds
from frontier_service.fetch import RobotsCache
from frontier_service.service.process import run_async

SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    id BIGSERIAL PRIMARY KEY, url TEXT NOT NULL UNIQUE, domain TEXT NOT NULL,
    depth INT NOT NULL, priority_score REAL NOT NULL DEFAULT 1.0,
    added_timestamp DOUBLE PRECISION NOT NULL, claimed_at DOUBLE PRECISION);
CREATE INDEX IF NOT EXISTS frontier_unclaimed ON frontier (added_timestamp, id)
    WHERE claimed_at IS NULL;
CREATE INDEX IF NOT EXISTS frontier_domain ON frontier (domain);
CREATE TABLE IF NOT EXISTS visited_urls (
    url TEXT PRIMARY KEY, url_sha256 TEXT NOT NULL, domain TEXT NOT NULL,
    crawled_timestamp DOUBLE PRECISION NOT NULL, http_status_code INT,
    content_sha256 TEXT, redirected_to_url TEXT);
CREATE TABLE IF NOT EXISTS domain_metadata (
    domain TEXT PRIMARY KEY, next_fetch_at DOUBLE PRECISION NOT NULL DEFAULT 0);
"""
CLAIM = """
WITH picked AS (
    SELECT f.id FROM frontier f
    WHERE f.claimed_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM domain_metadata d
                      WHERE d.domain = f.domain AND d.next_fetch_at > $1)
    ORDER BY f.added_timestamp, f.id
    LIMIT 1
    FOR UPDATE OF f SKIP LOCKED)
UPDATE frontier SET claimed_at = $1 FROM picked WHERE frontier.id = picked.id
RETURNING frontier.id, frontier.url, frontier.domain, frontier.depth
"""
# Reserve the domain while its fetch is in flight (one request per host at a time).
RESERVE = """
INSERT INTO domain_metadata (domain, next_fetch_at) VALUES ($1, $2)
ON CONFLICT (domain) DO UPDATE SET next_fetch_at = EXCLUDED.next_fetch_at
WHERE domain_metadata.next_fetch_at <= $3
RETURNING domain
"""
UNCLAIM = "UPDATE frontier SET claimed_at = NULL WHERE id = $1"
SCHEDULE = "UPDATE domain_metadata SET next_fetch_at = $2 WHERE domain = $1"
INSERT_LINKS = """
INSERT INTO frontier (url, domain, depth, added_timestamp)
SELECT t.url, t.domain, $3, $4 FROM unnest($1::text[], $2::text[]) AS t(url, domain)
WHERE NOT EXISTS (SELECT 1 FROM visited_urls v WHERE v.url = t.url)
ON CONFLICT (url) DO NOTHING
"""
MARK_VISITED = """
INSERT INTO visited_urls (url, url_sha256, domain, crawled_timestamp, http_status_code,
                          content_sha256, redirected_to_url)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (url) DO NOTHING
"""
DONE = "DELETE FROM frontier WHERE id = $1"


def put_body(store: LocalBlobStore, body: bytes) -> None:
    if not store.exists(hashlib.sha256(body).hexdigest()):
        store.put_bytes(body)


async def crawl(args: argparse.Namespace) -> None:
    dsn = args.dsn
    setup = await asyncpg.connect(dsn)
    await setup.execute(SCHEMA)
    now = time.time()
    await setup.executemany(
        "INSERT INTO frontier (url, domain, depth, added_timestamp) VALUES ($1, $2, 0, $3)"
        " ON CONFLICT DO NOTHING", [(url, url.split("/")[2], now) for url in seeds(args)])
    await setup.close()
    gate = asyncio.Semaphore(16)

    async def connect() -> asyncpg.Connection:
        async with gate:
            return await asyncpg.connect(dsn)

    connections = await asyncio.gather(*(connect() for _ in range(args.concurrency)))
    store = LocalBlobStore(Path(args.work_dir) / "cas")
    window = Window(args.warmup, args.seconds)
    claim_s: list[float] = []

    async def worker(conn: asyncpg.Connection) -> None:
        while time.monotonic() < window.deadline:
            began = time.monotonic()
            now = time.time()
            row = await conn.fetchrow(CLAIM, now)
            claim_s.append(time.monotonic() - began)
            if row is None:
                await asyncio.sleep(0.1)
                continue
            if await conn.fetchval(RESERVE, row["domain"], now + 3600, now) is None:
                await conn.execute(UNCLAIM, row["id"])  # another worker is on this host
                continue
            url = row["url"]
            if not await robots.can_fetch(url):
                await conn.execute(MARK_VISITED, url, "", row["domain"], time.time(), None, None, None)
                await conn.execute(DONE, row["id"])
                await conn.execute(SCHEDULE, row["domain"], time.time())
                continue
            result, links, digest = await fetch_page(fetcher, url)
            await conn.execute(SCHEDULE, row["domain"], time.time() + args.delay)
            if result.body is not None:
                await asyncio.to_thread(put_body, store, result.body)
            if links:
                await conn.execute(INSERT_LINKS, [u for u, _ in links], [d for _, d in links],
                                   row["depth"] + 1, time.time())
            sha = hashlib.sha256(url.encode()).hexdigest()
            location = result.redirects[-1].location if result.redirects else None
            await conn.execute(MARK_VISITED, url, sha, row["domain"], time.time(), result.status,
                               digest, location)
            await conn.execute(DONE, row["id"])
            window.page(result.error is None)

    async with make_fetcher(args) as fetcher:
        robots = RobotsCache(fetcher)
        with store.deferred_sync():
            window = Window(args.warmup, args.seconds)  # opens once every connection is up
            marks = asyncio.create_task(window.run_marks())
            workers = [asyncio.create_task(worker(conn)) for conn in connections]
            await marks
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
    for conn in connections:
        with contextlib.suppress(Exception):
            await conn.close(timeout=2)
    claims = sorted(claim_s) or [0.0]
    window.result("PostgreSQL queue (seed design)", connections=len(connections),
                  claim_ms_median=round(claims[len(claims) // 2] * 1000, 1),
                  claim_ms_p95=round(claims[int(len(claims) * 0.95)] * 1000, 1)).emit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_common_args(parser)
    parser.add_argument("--dsn", required=True, help="postgresql:// DSN of an empty database")
    args = parser.parse_args()
    run_async(crawl(args), args.loop)


if __name__ == "__main__":
    main()
