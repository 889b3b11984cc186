"""kill -9 a worker mid-batch, over and over: later runs converge, nothing partial shows."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from archive_pipelines.replication import ReplicaSet, replication_status
from archive_testkit.forkserver import ForkServer
from tests.helpers.replication import (
    Env,
    assert_statuses_truthful,
    assert_store_sound,
    local_replica,
    open_with_replicas,
    populate,
    replicate_all,
    s3_replica,
    statuses,
)

ROOT = Path(__file__).resolve().parents[2]
KILLS = 24


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The worker processes, each a fork of one process that imported the app once (a real
    process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.replication.crash_worker"], cwd=ROOT) as server:
        yield server


def wave(round_no: int) -> dict[str, bytes]:
    """New files for one round: many small ones and a few large enough to be cut mid-copy."""
    rng = random.Random(round_no)
    files = {f"page{i}.html": f"<p>round {round_no} page {i}</p>".encode() * rng.randint(1, 400)
             for i in range(24)}
    for i in range(3):
        files[f"media{i}.bin"] = os.urandom(rng.randint(1, 4) << 20)
    return files


def run_worker(forks: ForkServer, settings_json: Path, retention: int, kill_after: float | None
               ) -> tuple[int, bool]:
    """Start a worker; kill -9 it `kill_after` seconds into its first batch."""
    proc = forks.popen(
        [sys.executable, "-m", "tests.replication.crash_worker", str(settings_json),
         str(retention)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    killed = False
    try:
        if kill_after is None:
            return proc.wait(timeout=120), False
        line = proc.stdout.readline()  # "batch": it is copying now
        if line.strip() == "batch":
            time.sleep(kill_after)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed = True
        return proc.wait(timeout=60), killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.slow
def test_kill_9_mid_batch_converges_and_never_shows_a_partial_object(
        data_dir: Path, tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        forks: ForkServer) -> None:
    storage = open_with_replicas(data_dir, [local_replica(), s3_replica(s3_endpoint_url, s3_bucket)],
                           retention=3)
    settings_json = tmp_path / "settings.json"
    settings_json.write_text(storage.settings.model_dump_json())
    try:
        blobs: dict[str, bytes] = {}
        replicas = ReplicaSet.open(storage.catalog, storage.settings)
        local = replicas["local"].require()
        rng = random.Random(7)
        kills = interrupted = 0
        for round_no in range(KILLS * 2):
            blobs |= populate(storage, tmp_path, wave(round_no), name=f"wave{round_no}",
                              timestamp=f"1735142400.{round_no}")
            returncode, killed = run_worker(forks, settings_json, 3, rng.uniform(0.0, 0.6))
            if killed:
                kills += 1
                assert returncode == -signal.SIGKILL
                # Killed between "ongoing" and "present": a copy was cut short.
                interrupted += "ongoing" in statuses(storage).values()
            else:
                assert returncode == 0
            assert_store_sound(local)  # whatever was killed, nothing partial is visible
            if kills >= KILLS:
                break
        assert kills >= 20
        assert interrupted >= kills // 3, f"only {interrupted} of {kills} kills hit a copy"

        # Later runs converge: a clean worker process, then the in-process director.
        assert run_worker(forks, settings_json, 3, None) == (0, False)
        env = Env(storage, replicas, blobs)
        replicate_all(env, retention=3, max_age=timedelta(0))
        status = replication_status(storage.catalog, replicas, 3)
        assert status.meets_policy and status.blobs == len(blobs)
        for name in ("local", "s3"):
            store = replicas[name].require()
            assert set(store.iter_hashes()) == set(blobs)
            assert_store_sound(store)
        assert_statuses_truthful(env)
    finally:
        storage.close()
        storage.catalog.engine.dispose()
