"""Cluster benchmark: `replica_copies` backfill throughput with 1 and with 2 dagster-celery
workers on this machine, side by side in one run (issue 35).

    .venv/bin/python bench/cluster_bench.py [--quick] [--blobs 20000] [--prefixes 64]

Starts its own PostgreSQL (Dagster's storage and the catalog), redis-server (Celery's broker
and result backend) and moto_server (the compute logs), and makes a cluster-profile data dir
(`archive-pipelines init --profile cluster`) whose primary store holds --blobs small blobs
(log-normal around 4 KiB) and --large larger ones (256 KiB - 4 MiB) over all 256 hash
prefixes, with one local zstd replica. Then, each case on an empty replica:

  (a) one Celery worker and (b) two, each with a fresh dagster-daemon: `dagster job backfill
      -j replica_copies_job` over the first --prefixes prefixes (one run per prefix, at most
      --max-concurrent-runs at a time), timed from the command's start to the last run's end;
  (c) the asset's own backfill of the same range (one run, the multiprocess executor, no
      Celery): the single-machine reference (--no-single-run skips it).

Prints objects/s, runs/s, seconds per run (queued to finished), CPU per object by process
kind (the workers; the daemon with its code server and run processes; the commands; the
servers), the 2-worker / 1-worker ratio and what one more worker machine would add. The
director sensor and the verify schedule are stopped first: only the backfills copy. No
verdict: exit 1 when a run fails or a copy is missing. Scratch in bench/.work/cluster.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cluster_cases import Backfill, Replica, Services, celery_case, make_blobs, single_run_case  # noqa: E402
from crawl_baselines.process_tree_cpu import become_subreaper  # noqa: E402
from settle import remove_tree, settle  # noqa: E402

from archive_pipelines.blobstore.hash_prefixes import HEX_PREFIXES  # noqa: E402
from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from archive_pipelines.replication import ReplicaSet  # noqa: E402
from archive_pipelines.settings import load_settings  # noqa: E402
from archive_pipelines.storage.assembly import open_storage  # noqa: E402
from archive_testkit.cluster import BIN, WORKSPACE, cluster_env  # noqa: E402
from archive_testkit.cluster_throughput import (  # noqa: E402
    CaseFigures,
    interpretation,
    scaling,
    significant,
)
from archive_testkit.servers import LocalMotoServer, LocalPostgres, create_database  # noqa: E402

WORK = ROOT / "bench" / ".work" / "cluster"
BUCKET = "bench-cluster"
AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
       "AWS_DEFAULT_REGION": "us-east-1"}
ARCHIVE_TOML = """[catalog]
url = "{catalog}"

[replication]
retention = 2

[[stores]]
name = "primary"
path = "cas"
codec = "raw"

[[stores]]
name = "replica"
path = "replicas/replica"
codec = "zstd"
"""
# Launched by default and not by the backfills: stopped, so that only the backfills copy.
QUIET = [("sensor", "archival_director_sensor"), ("schedule", "verify_storage_schedule")]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2,000 + 20 blobs, 8 prefixes (~3-4 min on a quiet box)")
    parser.add_argument("--blobs", type=int, help="small blobs (default 20000)")
    parser.add_argument("--large", type=int, help="larger blobs (default 1%% of --blobs)")
    parser.add_argument("--prefixes", type=int, help="prefixes backfilled, one run each (64)")
    parser.add_argument("--max-concurrent-runs", type=int, default=4,
                        help="the QueuedRunCoordinator's limit (default 4)")
    parser.add_argument("--no-single-run", action="store_true",
                        help="skip (c), the asset's own single-run backfill")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds a case may take (default 3600)")
    parser.add_argument("--keep", action="store_true", help="keep bench/.work/cluster")
    args = parser.parse_args()
    args.blobs = args.blobs or (2000 if args.quick else 20_000)
    args.large = args.large if args.large is not None else args.blobs // 100
    args.prefixes = args.prefixes or (8 if args.quick else 64)
    if not 1 <= args.prefixes <= 256:
        parser.error("--prefixes must be 1-256")
    return args


def quiet_launchers(env: dict[str, str]) -> None:
    """Stop the sensor and schedule that would launch runs of their own during the cases."""
    procs = [subprocess.Popen([str(BIN / "dagster"), kind, "stop", name, "-w", str(WORKSPACE)],
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for kind, name in QUIET]
    for (kind, name), proc in zip(QUIET, procs, strict=True):
        out, _ = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"dagster {kind} stop {name} failed:\n{out[-2000:]}")


def prepare(data: Path, args: argparse.Namespace, *, postgres: LocalPostgres,
            redis: LocalRedis, moto: LocalMotoServer) -> tuple[dict[str, str], str, list[str]]:
    """The cluster-profile data dir with its blobs; its environment, catalog URL and hashes."""
    import boto3

    env = cluster_env(data, {**AWS, **{k: v for k, v in os.environ.items()
                                       if k.startswith("AWS_")}})
    boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1",
                 aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)
    catalog = create_database(postgres.url, "catalog")
    data.mkdir(parents=True)
    (data / "archive.toml").write_text(ARCHIVE_TOML.format(catalog=catalog))
    subprocess.run([str(BIN / "archive-pipelines"), "--data-dir", str(data), "init", "--profile",
                    "cluster", "--instance-db", create_database(postgres.url, "dagster"),
                    "--broker", redis.url.rsplit("/", 1)[0] + "/1",
                    "--compute-logs", f"s3://{BUCKET}/compute-logs", "--s3-endpoint", moto.url,
                    "--max-concurrent-runs", str(args.max_concurrent_runs)],
                   env=env, check=True, capture_output=True)
    started = time.perf_counter()
    parts = open_storage(load_settings(data, environ={}))
    try:
        hashes = make_blobs(parts, small=args.blobs, large=args.large)
        ReplicaSet.open(parts.catalog, parts.settings)  # the replica's store row
    finally:
        parts.close()
        parts.catalog.engine.dispose()
    print(f"{len(hashes):,} blobs ({args.blobs:,} small, {args.large:,} larger) written to the "
          f"primary in {time.perf_counter() - started:.1f} s", flush=True)
    quiet_launchers(env)
    return env, catalog, hashes


def report(case: CaseFigures) -> None:
    kinds = ", ".join(f"{kind} {significant(case.cpu_ms_per_object(kind))}"
                      for kind, cpu in sorted(case.cpu_s.items(), key=lambda kv: -kv[1]) if cpu)
    print(f"  {case.label:<10} {case.objects:>7,} objects in {case.wall_s:7.1f} s: "
          f"{significant(case.objects_per_s)} objects/s, {case.runs} run(s), "
          f"{significant(case.runs_per_s)} runs/s, {case.median_run_s:.1f} s per run (median, "
          f"queued to finished); CPU {case.cpu_total_s:,.1f} s = "
          f"{significant(case.cpu_ms_per_object())} ms per object ({kinds}); "
          f"{significant(case.cpu_total_s / case.runs)} CPU s per run; load "
          f"{os.getloadavg()[0]:.1f} after (1 min; other processes' load is not in the CPU)",
          flush=True)


def run_cases(backfill: Backfill, args: argparse.Namespace, *, replica: Replica,
              services: Services, expected: int) -> list[CaseFigures]:
    cases: list[CaseFigures] = []
    for workers in ([1, 2] + ([] if args.no_single_run else [0])):
        replica.reset()
        if workers:
            case, steps = celery_case(backfill, workers=workers, services=services)
            nodes = ", ".join(f"{node} {count}" for node, count in sorted(steps.items()))
        else:
            case, nodes = single_run_case(backfill, services=services), ""
        case = dataclasses.replace(case, objects=replica.present())
        report(case)
        if nodes:
            print(f"             steps per Celery worker: {nodes}")
        if case.objects != expected:
            raise RuntimeError(f"{case.label}: {case.objects:,} copies present on the replica, "
                               f"expected {expected:,}")
        cases.append(case)
    return cases


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up servers and scratch
    previous = WORK.with_name(f"{WORK.name}-previous-{os.getpid()}")
    if WORK.exists():
        WORK.rename(previous)
    if args.quick:
        print("(--quick: not waiting for the disk to settle after earlier deletes)")
    else:
        settle()
    prefixes = list(HEX_PREFIXES[:args.prefixes])
    print(f"cluster bench {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}; prefixes {prefixes[0]}..{prefixes[-1]} ({len(prefixes)} "
          f"runs per Celery case), at most {args.max_concurrent_runs} runs at a time, "
          f"one Celery process per worker", flush=True)
    servers: list = []
    code = 1
    try:
        postgres, redis, moto = LocalPostgres(), LocalRedis(WORK / "redis"), LocalMotoServer()
        for server in (postgres, redis, moto):
            servers.append(server.start())
        become_subreaper()  # after the servers: orphans of the cases come back to the bench
        data = WORK / "data"
        env, catalog, hashes = prepare(data, args, postgres=postgres, redis=redis, moto=moto)
        expected = sum(1 for sha in hashes if sha[:2] in set(prefixes))
        print(f"{expected:,} blobs in the backfilled prefixes: each case copies them to an "
              f"empty replica", flush=True)
        services = Services(pids={"postgres": postgres.pid or 0, "redis": redis.pid or 0,
                                  "moto": moto.pid or 0})
        backfill = Backfill(data=data, prefixes=prefixes, env=env, logs=WORK / "logs",
                            timeout=args.timeout)
        cases = run_cases(backfill, args, replica=Replica(catalog, data / "replicas" / "replica",
                                                          name="replica"),
                          services=services, expected=expected)
        one, two = cases[0], cases[1]
        print(f"2 workers / 1 worker: {scaling(one, two):.2f}x objects/s "
              f"({significant(one.objects_per_s)} -> {significant(two.objects_per_s)})")
        if len(cases) > 2:
            print(f"single run / 2 workers: {cases[2].objects_per_s / two.objects_per_s:.2f}x "
                  f"objects/s")
        print(interpretation(one, two, cores=os.cpu_count() or 1))
        code = 0
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = getattr(exc, "stderr", None) or ""
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        print(f"error: {exc}\n{detail[-3000:]}", file=sys.stderr)
    finally:
        for server in reversed(servers):
            server.stop()
        if not args.keep:
            remove_tree(WORK)
        remove_tree(previous)
    return code


if __name__ == "__main__":
    sys.exit(main())
