"""Replay, CDX and Memento (issue 30).

`cdx`: CDX API latency over a catalog of `--cdx-rows` captures (10,000,000 by default)
generated directly in bulk (`cdx_catalog.py`: Zipf-like URL popularity, one URL with 1% of the
captures, ids in time order), on SQLite (cached under bench/.work/replay/) and on PostgreSQL
(DATABASE_URL's server, else a private one; the same rows copied with COPY, indexes built
after, ANALYZE). Timed in-process, alternating the two catalogs query by query, each query
timed whole (`answer_cdx`: parse, catalog reads, lines rendered):
- exact lookups: `url=<URL>` (every capture of the URL, Internet Archive text lines) for
  `--lookups` URLs drawn uniformly from the distinct URLs, plus 10% absent URLs;
- the first page of a prefix: `url=<host>/*&limit=100` for hosts drawn uniformly;
- context (no target): the most-captured URL's `nearest` (what replay asks),
  `limit=-100` of it and its `showNumPages`.
p50 and p99 per case and catalog; target p50 <= 10 ms for each (the exit status).

`replay`: our replay server beside pywb 2.10 (in its own virtualenv) serving the same
captures, under the requests a browser makes for `--pages` pages (each page rewritten, then
the resources it names), on a real crawl of the test web and on a generated WARC of
`--records` records; alternated runs, requests/s and latency; verdict ours / pywb
requests/s >= 1 at both sizes (`replay_load.py` says how).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from captures_bench import Postgres, copy_to_postgres, percentile, sqlite_url  # noqa: E402
from cdx_catalog import CdxCatalog, ensure_cdx_catalog  # noqa: E402

TARGET_P50_MS = 10.0
WORK = BENCH_DIR / ".work" / "replay"
PARTS = ("cdx", "replay")


def _postgres_copy(cdx: CdxCatalog, pg_url: str) -> float:
    """The SQLite catalog's rows into the PostgreSQL one (migrated, empty), indexes after."""
    from sqlalchemy import text

    from archive_pipelines.catalog import make_engine, upgrade_catalog
    from archive_pipelines.catalog.models import Base

    started = time.perf_counter()
    engine = make_engine(pg_url)
    try:
        upgrade_catalog(engine)
        with engine.begin() as conn:
            for index in Base.metadata.tables["page_fetch"].indexes:
                conn.execute(text(f"DROP INDEX {index.name}"))
        copy_to_postgres(cdx.path, pg_url)
        for index in Base.metadata.tables["page_fetch"].indexes:
            index.create(engine)
        with engine.connect() as conn:
            conn.execute(text("COMMIT"))
            conn.execute(text("ANALYZE page_fetch"))
    finally:
        engine.dispose()
    return time.perf_counter() - started


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def bench_cdx(rows: int, lookups: int, postgres: Postgres) -> bool:
    from archive_pipelines.catalog import Catalog, make_engine
    from archive_pipelines.replay.cdx_answer import answer_cdx
    from archive_pipelines.replay.exclusions import Exclusions
    from archive_pipelines.surt import urlkey

    started = time.perf_counter()
    cdx = ensure_cdx_catalog(WORK, rows)
    info = cdx.info
    print(f"\ncdx: {rows:,} captures of {info['distinct_urls']:,} URLs on {info['hosts']:,} hosts "
          f"(generated in {info['seconds']:.0f} s, indexes {info['index_seconds']:.0f} s; "
          f"ready in {time.perf_counter() - started:.0f} s)")
    print(postgres.describe())
    name, pg_url = postgres.create()
    ok = True
    verdicts: list[str] = []
    try:
        print(f"PostgreSQL copy: {_postgres_copy(cdx, pg_url):.0f} s (COPY, indexes, ANALYZE)")
        catalogs = {"SQLite": Catalog(make_engine(sqlite_url(cdx.path))),
                    "PostgreSQL": Catalog(make_engine(pg_url))}
        rng = random.Random(5)
        none = Exclusions()

        def ask(catalog: Catalog, query: dict[str, list[str]]) -> Callable[[], object]:
            def call() -> object:
                answer = answer_cdx(query, catalog=catalog, dialect="ia", exclusions=none)
                if answer.status != 200:
                    raise SystemExit(f"error: {query} answered {answer.status}: {answer.body[:200]!r}")
                return answer
            return call

        urls = rng.sample(info["sample"], min(lookups, len(info["sample"])))
        exact = [{"url": [url]} for url in urls]
        exact += [{"url": [f"https://absent-{n}.example.net/x"]} for n in range(max(1, lookups // 10))]
        rng.shuffle(exact)
        prefixes = [{"url": [f"{host}/*"], "limit": ["100"]}
                    for host in rng.sample(info["hosts_sample"], min(lookups, len(info["hosts_sample"])))]
        cases = {"exact URL": exact, "prefix, first 100": prefixes}
        for catalog in catalogs.values():  # warm-up: the first queries open connections
            for query in exact[:10] + prefixes[:10]:
                ask(catalog, query)()
        figures: dict[tuple[str, str], list[float]] = {}
        lines: dict[str, list[int]] = {}
        order = list(catalogs)
        for case, queries in cases.items():
            for number, query in enumerate(queries):
                counts = set()
                for label in (order if number % 2 == 0 else order[::-1]):
                    call = ask(catalogs[label], query)
                    started = time.perf_counter()
                    answer = call()
                    figures.setdefault((case, label), []).append(
                        (time.perf_counter() - started) * 1000)
                    counts.add(answer.body.count(b"\n"))  # type: ignore[attr-defined]
                if len(counts) != 1:
                    raise SystemExit(f"error: the catalogs disagree on {query}: {counts} lines")
                lines.setdefault(case, []).append(counts.pop())
        print(f"answer_cdx in-process (Internet Archive dialect), alternated query by query; "
              f"load average {os.getloadavg()[0]:.1f}")
        print(f"{'case':>18} {'catalog':>11} {'queries':>8} {'lines p50':>9} {'p50 ms':>7} "
              f"{'p99 ms':>7} {'max ms':>7}")
        for (case, label), values in figures.items():
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            print(f"{case:>18} {label:>11} {len(values):>8} {statistics.median(lines[case]):>9.0f} "
                  f"{p50:>7.2f} {p99:>7.2f} {max(values):>7.2f}")
            passed = p50 <= TARGET_P50_MS
            ok = ok and passed
            verdicts.append(f"{'PASS' if passed else 'FAIL'}  CDX {case} p50 on {label} "
                            f"({rows:,} captures): {p50:.2f} ms (target <= {TARGET_P50_MS:.0f}); "
                            f"p99 {p99:.2f} ms")
        heavy, key = info["heavy"], urlkey(info["heavy"])
        for label, catalog in catalogs.items():
            def nearest(catalog: Catalog = catalog) -> None:
                with catalog.reading() as tx:
                    tx.replay.nearest(key, at_ms=1_700_000_000_000)
            spent = {
                "nearest": [_timed(nearest) for _ in range(7)],
                "limit=-100": [_timed(ask(catalog, {"url": [heavy], "limit": ["-100"]}))
                               for _ in range(7)],
                "showNumPages": [_timed(ask(catalog, {"url": [heavy], "showNumPages": ["true"]}))
                                 for _ in range(3)],
            }
            print(f"the most-captured URL ({heavy}) on {label}, medians: "
                  + ", ".join(f"{what} {statistics.median(v):.2f} ms" for what, v in spent.items())
                  + " (context)")
        for catalog in catalogs.values():
            catalog.engine.dispose()
    finally:
        postgres.drop(name)
    for line in verdicts:
        print(line)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="the parts to run (repeatable; default: all)")
    parser.add_argument("--cdx-rows", type=int, default=10_000_000,
                        help="captures in the CDX catalogs (10,000,000)")
    parser.add_argument("--lookups", type=int, default=500,
                        help="exact lookups and prefix pages per catalog (500)")
    parser.add_argument("--pages", type=int, default=1_000,
                        help="replay: pages requested from each corpus, with their resources "
                        "(1,000)")
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="replay: records in the generated WARC (1,000,000)")
    parser.add_argument("--runs", type=int, default=3,
                        help="replay: timed runs per server and corpus, alternated (3)")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="replay: pages in flight in the client (16)")
    parser.add_argument("--prepare", action="store_true",
                        help="replay: only make (or find cached) the corpora and pywb's indexes, "
                        "measure nothing (the 1,000,000-record corpus takes a while)")
    args = parser.parse_args(argv)
    parts = args.only or list(PARTS)
    ok = True
    if "cdx" in parts:
        postgres = Postgres().start()
        try:
            ok = bench_cdx(args.cdx_rows, args.lookups, postgres) and ok
        finally:
            postgres.stop()
    if "replay" in parts:
        from replay_load import bench_replay

        ok = bench_replay(pages=args.pages, records=args.records, runs=args.runs,
                          concurrency=args.concurrency, work=WORK,
                          prepare_only=args.prepare) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
