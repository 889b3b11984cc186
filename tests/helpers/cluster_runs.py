"""Helpers for the cluster tests: what a cluster fixture holds, legacy ArchiveBox folders for
the `blobs` asset to store, and the runs a backfill made (their status, which Celery worker
executed each step)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.settings import load_settings
from archive_testkit.process_groups import ProcessGroups

FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
            dg.DagsterRunStatus.CANCELED}


@dataclass(frozen=True)
class ClusterOptions:
    """What a test file's cluster differs in (override the `cluster_options` fixture)."""

    visibility_timeout: int = 300  # executor.yaml's --visibility-timeout
    blobs: int = 40  # distinct blobs ingested before the workers start
    blob_bytes: int = 600  # about the size of each
    # When > 0: the blobs' hashes all begin with one of this many two-hex-digit prefixes,
    # evenly (more blobs per prefix: a longer step per partition of replica_copies).
    prefixes: int = 0
    legacy_days: tuple[str, ...] = ()  # days with snapshots whose files are in legacy folders
    # Sensors stopped before dagster-daemon starts (archival_director_sensor, on by default,
    # copies every blob short of copies in its first tick).
    stopped_sensors: tuple[str, ...] = ()


def blob_contents(options: ClusterOptions) -> list[bytes]:
    """`options.blobs` distinct contents of about `options.blob_bytes`, spread over
    `options.prefixes` hash prefixes when that is set (a nonce varied until one fits)."""
    contents = []
    wanted = {f"{i * (256 // options.prefixes):02x}": 0 for i in range(options.prefixes)}
    per_prefix = -(-options.blobs // max(1, options.prefixes))
    nonce = 0
    while len(contents) < options.blobs:
        line = f"cluster blob {nonce}\n".encode()
        nonce += 1
        data = line * max(1, options.blob_bytes // len(line))
        prefix = hashlib.sha256(data).hexdigest()[:2]
        if wanted:
            if wanted.get(prefix, per_prefix) >= per_prefix:
                continue
            wanted[prefix] += 1
        contents.append(data)
    return contents


def add_legacy_days(data: Path, days: tuple[str, ...]) -> dict[str, int]:
    """Two snapshots a day known to the catalog (as an import records them) whose files are
    still in legacy ArchiveBox folders under archive/<timestamp>/: what `blobs` stores for the
    day. Returns {day: files in its folders}."""
    engine = make_engine(load_settings(data, environ={}).catalog_url)
    files = {}
    try:
        repo = Catalog(engine)
        for n, day in enumerate(days):
            start = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
            for k in range(2):
                ts = f"{start + 3600 * (k + 1):.0f}.{k + 1}"
                url = f"https://day{n}.test/{k}"
                folder = data / "archive" / ts
                (folder / "wget").mkdir(parents=True)
                (folder / "index.json").write_text(f'{{"url": "{url}", "timestamp": "{ts}"}}')
                (folder / "wget" / "index.html").write_text(f"<html>{url} {day}</html>")
                (folder / "wget" / "app.js").write_bytes(f"// {day}\n".encode() * 500)
                repo.snapshots.add_snapshot(url=url, timestamp=ts, fs_version="organized",
                                            created_at=datetime.fromtimestamp(float(ts), tz=UTC))
            files[day] = 6  # index.json, index.html, app.js in each of two folders
    finally:
        engine.dispose()
    return files


def wait_for_runs(instance: dg.DagsterInstance, count: int, *, groups: ProcessGroups,
                  runs_filter: dg.RunsFilter, timeout: float = 600.0) -> list[dg.DagsterRun]:
    """The runs `runs_filter` selects, once there are `count` and all have finished."""
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        runs = list(instance.get_runs(runs_filter))
        if len(runs) >= count and all(run.status in FINISHED for run in runs):
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"runs not finished in {timeout:.0f}s: "
                                 f"{[(run.run_id[:8], run.status.value) for run in runs]}\n"
                                 f"{groups.log_tail('dagster-daemon')}")
        time.sleep(1.0)


def celery_workers(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(step key, node name) for each time a Celery worker began executing one of the run's
    steps, in order (the engine event dagster-celery's task reports first)."""
    workers = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        metadata = event.engine_event_data.metadata if event is not None else {}
        if "Celery worker" in metadata:
            workers.append((str(entry.step_key), str(metadata["Celery worker"].value)))
    return workers


def engine_events(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, list[str]]]:
    return [(entry.user_message, list(entry.dagster_event.engine_event_data.metadata))
            for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
            if entry.dagster_event is not None]
