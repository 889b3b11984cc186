"""migrate-from-postgres throughput: a throwaway PostgreSQL frontier of the replaced design
(1,000,000 frontier rows over 10,000 domains, 100,000 visited) taken over by the command,
run as a child process the way a user runs it. Target >= 50,000 frontier rows/s.

    .venv/bin/python bench/crawl_bench.py --case migrate
    .venv/bin/python bench/crawl_migrate.py --rows 200000 --domains 2000 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from archive_testkit.pg_frontier import load, synthetic  # noqa: E402
from archive_testkit.servers import LocalPostgres  # noqa: E402

TARGET_ROWS_PER_S = 50_000.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--migrate-rows", type=int, default=1_000_000,
                        help="migrate case: frontier rows")
    parser.add_argument("--migrate-domains", type=int, default=10_000,
                        help="migrate case: domains")
    parser.add_argument("--migrate-visited", type=int, default=100_000,
                        help="migrate case: visited rows (10%% of them also frontier rows)")
    parser.add_argument("--migrate-batch-rows", type=int, default=20_000)


def run_case(args: argparse.Namespace, work: Path, *, profile: bool = False) -> bool:
    """Build the frontier, migrate it, print rows/s; True if at or above the target."""
    rows, domains, visited = args.migrate_rows, args.migrate_domains, args.migrate_visited
    print(f"migrate bench {time.strftime('%Y-%m-%d %H:%M')}: {rows:,} frontier rows over "
          f"{domains:,} domains, {visited:,} visited rows, batches of "
          f"{args.migrate_batch_rows:,}", flush=True)
    work.mkdir(parents=True, exist_ok=True)
    postgres = LocalPostgres(settings=("shared_buffers=256MB",)).start()
    redis_server = LocalRedis().start()
    try:
        dsn = postgres.create_database("frontier").replace("postgresql+psycopg2://",
                                                           "postgresql://", 1)
        started = time.monotonic()
        hosts = [f"site{i:05d}.example" for i in range(domains)]
        data = synthetic(hosts, ["/"], frontier_rows=rows, visited_rows=int(visited * 0.9),
                         visited_in_frontier=visited * 0.1 / rows, excluded=domains // 100)
        load(dsn, data)
        print(f"  PostgreSQL filled with COPY in {time.monotonic() - started:.1f} s", flush=True)
        del data
        command = [sys.executable, "-m", "frontier_service", "--data-dir", str(work / "data"),
                   "--redis-url", redis_server.url, "--crawl-name", "migrated",
                   "migrate-from-postgres", dsn, "--json",
                   "--batch-rows", str(args.migrate_batch_rows)]
        if profile:
            command[1:3] = ["-m", "cProfile", "-o", str(work / "migrate.prof"), "-m",
                            "frontier_service"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        children, redis_cpu = _children_cpu(), _process_cpu(redis_server.pid)
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        command_cpu = _children_cpu() - children  # the servers are not waited for yet
        redis_cpu = _process_cpu(redis_server.pid) - redis_cpu
        if done.returncode != 0:
            print(f"  FAIL: the migration exited {done.returncode}: {done.stderr[-2000:]}")
            return False
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        frontier_rows = summary["rows"]["frontier"]
        all_rows = sum(summary["rows"].values())
        rate = frontier_rows / seconds
        print(f"  migrated in {seconds:.1f} s (process start to exit): "
              f"{frontier_rows:,} frontier rows, {all_rows:,} rows of all three tables; "
              f"{summary['counts'].get('frontier_queued', 0):,} URLs queued in "
              f"{_files(work / 'data'):,} frontier files", flush=True)
        print(f"  {rate:,.0f} frontier rows/s ({all_rows / seconds:,.0f} rows/s over all "
              f"tables); target >= {TARGET_ROWS_PER_S:,.0f}: "
              f"{'PASS' if rate >= TARGET_ROWS_PER_S else 'FAIL'}", flush=True)
        per = 100_000 / max(frontier_rows, 1)
        print(f"  CPU per 100,000 frontier rows: {command_cpu * per:.2f} s the command "
              f"(start-up included), {redis_cpu * per:.2f} s redis-server", flush=True)
        if profile:
            import pstats

            pstats.Stats(str(work / "migrate.prof")).sort_stats("cumulative").print_stats(35)
        return rate >= TARGET_ROWS_PER_S
    finally:
        redis_server.stop()
        postgres.stop()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int | None) -> float:
    """User + system CPU seconds of a running process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _files(data: Path) -> int:
    return sum(1 for _ in (data / "frontiers").glob("??/*.frontier"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_arguments(parser)
    parser.add_argument("--profile", action="store_true", help="cProfile the migration")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="migrate-bench-"))
    try:
        return 0 if run_case(args, work, profile=args.profile) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
