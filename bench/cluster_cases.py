"""The parts of `cluster_bench.py` (not a benchmark): the blobs, the CPU of process trees, one
backfill case on Celery workers and the single-run reference.

CPU is read from /proc at launch and after the last run: every process of a tree counts its
own user + system time plus what its reaped children counted (`cutime`, `cstime`), so a run
process that ended (reaped by its parent, the code server) stays counted under the daemon.
The bench is a child subreaper: orphans come back to it and count under "commands" with the
commands it ran (the backfill command, `dagster asset materialize`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from sqlalchemy import create_engine, insert, text

from archive_pipelines.catalog.models import Blob, BlobCopy
from archive_pipelines.replication.copier import map_parallel
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.cluster import (
    BIN,
    WORKSPACE,
    executor_yaml,
    start_daemon,
    start_worker,
    wait_for_workers,
)
from archive_testkit.cluster_throughput import CaseFigures
from archive_testkit.process_groups import ProcessGroups

JOB = "replica_copies_job"
KiB, MIB = 1 << 10, 1 << 20
_TICKS = os.sysconf("SC_CLK_TCK")


def make_blobs(parts: StorageParts, *, small: int, large: int) -> list[str]:
    """Write `small` blobs (log-normal around 4 KiB) and `large` ones (256 KiB - 4 MiB), half
    compressible text, half noise, into the primary store; record them (ref_count 1,
    present on the primary). Their sha256s."""
    rng = random.Random(35)
    words = [b"<div>", b"</div>", b"<a", b"href=", b"class=", b"archive", b"web", b"page"]
    pools = [b" ".join(rng.choices(words, k=1 << 20))[:4 * MIB], os.urandom(4 * MIB)]
    sizes = [min(256 * KiB, max(1, int(rng.lognormvariate(math.log(4096), 1.0))))
             for _ in range(small)] + [rng.randint(256 * KiB, 4 * MIB) for _ in range(large)]
    store = parts.primary.store

    def put(item: tuple[int, int]) -> tuple[str, int]:
        index, size = item
        pool, head = pools[index % 2], f"{index}:".encode()  # unique: nothing dedups
        start = (index * 7919) % (len(pool) - size)
        data = head + pool[start:start + max(0, size - len(head))]
        return store.put_bytes(data).sha256, len(data)

    with store.deferred_sync():
        blobs = map_parallel(put, list(enumerate(sizes)), width=4)
    store.sync()
    now = datetime.now(UTC)
    with parts.catalog.session() as session:
        session.execute(insert(Blob), [
            {"id": i, "sha256": sha, "size": size, "ref_count": 1, "created_at": now,
             "mime_type": "application/octet-stream"} for i, (sha, size) in enumerate(blobs, 1)])
        session.execute(insert(BlobCopy), [
            {"blob_id": i, "store_id": parts.primary.store_id, "status": "present", "mtime": now}
            for i in range(1, len(blobs) + 1)])
    return [sha for sha, _ in blobs]


class Replica:
    """The replica store's copies in the catalog, and a way back to an empty replica."""

    def __init__(self, catalog_url: str, folder: Path, *, name: str) -> None:
        self.engine = create_engine(catalog_url)
        self.folder, self.name, self.resets = folder, name, 0
        with self.engine.connect() as db:
            self.store_id = db.execute(text("SELECT id FROM store WHERE name = :n"),
                                       {"n": name}).scalar_one()

    def present(self) -> int:
        with self.engine.connect() as db:
            return int(db.execute(text("SELECT count(*) FROM blob_copy WHERE store_id = :s "
                                       "AND status = 'present'"), {"s": self.store_id}).scalar_one())

    def reset(self) -> None:
        """Forget every copy on the replica and give it an empty folder. The old one is moved
        aside, not deleted: on this disk a delete slows the next file creations (settle.py)."""
        with self.engine.begin() as db:
            db.execute(text("DELETE FROM blob_copy WHERE store_id = :s"), {"s": self.store_id})
        if self.folder.exists():
            self.resets += 1
            self.folder.rename(self.folder.with_name(f".{self.folder.name}-used-{self.resets}"))
        self.folder.mkdir(parents=True)


@dataclass(frozen=True)
class Services:
    """The long-lived processes every case shares: name -> pid (PostgreSQL, Redis, moto)."""

    pids: dict[str, int]


def _process_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds: own user + system and that of reaped children)."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # ended meanwhile
            fields = stat[stat.rindex(")") + 2:].split()
            table[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICKS)
    return table


def tree_cpu(roots: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far by kind: each root's whole tree; this process's other children and
    those it reaped (`commands`)."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    rooted = {pid for pids in roots.values() for pid in pids}
    others = [pid for pid in children.get(os.getpid(), []) if pid not in rooted]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {kind: 0.0 for kind in roots} | {"commands": usage.ru_utime + usage.ru_stime}
    for kind, pids in [*roots.items(), ("commands", others)]:
        todo, seen = list(pids), set()
        while todo:
            pid = todo.pop()
            if pid in table and pid not in seen:
                seen.add(pid)
                cpu[kind] += table[pid][1]
                todo.extend(children.get(pid, []))
    return cpu


def reap_orphans() -> None:
    """Reap the zombies re-parented to the bench (it is their subreaper) by a stopped case."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
            if state == "Z" and int(ppid) == os.getpid():
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(int(entry.name), os.WNOHANG)


def cpu_between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {kind: max(0.0, after.get(kind, 0.0) - before.get(kind, 0.0)) for kind in after}


def wait_for_daemon(instance: dg.DagsterInstance, *, since: float, groups: ProcessGroups,
                    timeout: float = 180.0) -> None:
    """Until dagster-daemon's run queue daemon has sent a heartbeat after `since`."""
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        beat = instance.get_daemon_heartbeats().get("QUEUED_RUN_COORDINATOR")
        if beat is not None and beat.timestamp >= since:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"dagster-daemon sent no heartbeat within {timeout:.0f}s:\n"
                               f"{groups.log_tail('dagster-daemon')}")
        time.sleep(0.5)


def wait_for_runs(instance: dg.DagsterInstance, *, tag: str, count: int,
                  alive: Callable[[], None], timeout: float) -> list[dg.RunRecord]:
    """The run records of the backfill tagged `tag`, once `count` of them have finished."""
    deadline = time.monotonic() + timeout
    while True:
        alive()
        records = instance.get_run_records(dg.RunsFilter(job_name=JOB, tags={"bench/case": tag}))
        if len(records) >= count and all(r.dagster_run.is_finished for r in records):
            return records
        if time.monotonic() > deadline:
            states = [r.dagster_run.status.value for r in records]
            raise RuntimeError(f"{tag}: {len(records)}/{count} runs after {timeout:.0f}s: {states}")
        time.sleep(0.5)


def celery_nodes(instance: dg.DagsterInstance, run_ids: list[str]) -> dict[str, int]:
    """Steps executed per Celery worker node name (the runs' engine events say which)."""
    steps: dict[str, int] = {}
    for run_id in run_ids:
        for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            event = entry.dagster_event
            metadata = event.engine_event_data.metadata if event is not None else {}
            if "Celery worker" in metadata:
                node = str(metadata["Celery worker"].value)
                steps[node] = steps.get(node, 0) + 1
    return steps


@dataclass(frozen=True)
class Backfill:
    """What every case backfills, and where."""

    data: Path
    prefixes: list[str]
    env: dict[str, str]
    logs: Path
    timeout: float


def celery_case(backfill: Backfill, *, workers: int,
                services: Services) -> tuple[CaseFigures, dict[str, int]]:
    """`workers` Celery workers and dagster-daemon started afresh, then a job backfill of
    `replica_copies_job` over the prefixes (one run each), timed from the command's start to
    the last run's end; the figures, and the steps each worker node executed."""
    tag = f"{workers}w-{time.time_ns()}"
    groups = ProcessGroups(backfill.logs / tag, env=backfill.env, cwd=WORKSPACE.parent)
    names = [f"w{i + 1}" for i in range(workers)]
    try:
        started = time.time()
        for name in names:
            start_worker(groups, backfill.data, name=name)
        start_daemon(groups)
        wait_for_workers(backfill.data, names, groups=groups)
        with dg.DagsterInstance.from_config(str(backfill.data / "dagster")) as instance:
            wait_for_daemon(instance, since=started, groups=groups)
            roots = {"workers": [p.pid for n, p in groups.children if n.startswith("worker-")],
                     "daemon": [p.pid for n, p in groups.children if n == "dagster-daemon"],
                     **{name: [pid] for name, pid in services.pids.items()}}
            before, launched = tree_cpu(roots), time.time()
            subprocess.run(
                [str(BIN / "dagster"), "job", "backfill", "-w", str(WORKSPACE), "-j", JOB,
                 "--partitions", ",".join(backfill.prefixes), "--noprompt",
                 "--tags", json.dumps({"bench/case": tag})],
                env=backfill.env, cwd=WORKSPACE.parent, check=True, capture_output=True,
                timeout=backfill.timeout)
            records = wait_for_runs(instance, tag=tag, count=len(backfill.prefixes),
                                    alive=groups.check_alive, timeout=backfill.timeout)
            cpu = cpu_between(before, tree_cpu(roots))
            failed = [r.dagster_run.run_id for r in records
                      if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
            if failed:
                raise RuntimeError(f"{tag}: {len(failed)} run(s) did not succeed: {failed[:5]}")
            ends = [r.end_time or launched for r in records]
            run_s = tuple((r.end_time or 0.0) - r.create_timestamp.timestamp() for r in records)
            steps = celery_nodes(instance, [r.dagster_run.run_id for r in records])
            others = instance.get_runs_count(dg.RunsFilter(
                created_after=datetime.fromtimestamp(launched, UTC))) - len(records)
            if others:
                steps["(runs of other jobs meanwhile)"] = others
    finally:
        groups.stop()
        reap_orphans()
    label = f"{workers} worker{'s' if workers > 1 else ''}"
    return CaseFigures(label=label, workers=workers, runs=len(records), objects=0,
                       wall_s=max(ends) - launched, cpu_s=cpu, run_s=run_s), steps


def single_run_case(backfill: Backfill, *, services: Services) -> CaseFigures:
    """The whole range as one run, as a single-run backfill launches it: `dagster job execute
    -j replica_copies_job` with the partition-range tags, Dagster's multiprocess executor
    (executor.yaml moved aside meanwhile: the single-machine default), no daemon, no Celery.
    (`dagster asset materialize --partition-range` refuses an asset whose backfill policy is
    not single-run, as replica_copies' 8 prefixes per run is.)"""
    chosen = executor_yaml(backfill.data)
    aside = chosen.with_name(chosen.name + ".aside")
    chosen.rename(aside)
    try:
        roots = {name: [pid] for name, pid in services.pids.items()}
        before, launched = tree_cpu(roots), time.time()
        done = subprocess.run(
            [str(BIN / "dagster"), "job", "execute", "-m", "archive_pipelines.definitions",
             "-d", str(WORKSPACE.parent), "-j", "replica_copies_job", "--tags",
             json.dumps({"dagster/asset_partition_range_start": backfill.prefixes[0],
                         "dagster/asset_partition_range_end": backfill.prefixes[-1]})],
            env=backfill.env, cwd=WORKSPACE.parent, capture_output=True, text=True,
            timeout=backfill.timeout)
        wall = time.time() - launched
        cpu = cpu_between(before, tree_cpu(roots))
    finally:
        aside.rename(chosen)
    if done.returncode != 0:
        raise RuntimeError(f"dagster job execute (the single run) failed:\n{done.stdout[-3000:]}"
                           f"{done.stderr[-3000:]}")
    return CaseFigures(label="single run", workers=0, runs=1, objects=0, wall_s=wall, cpu_s=cpu,
                       run_s=(wall,))
