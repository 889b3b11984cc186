"""kill -9 the migration at random instants, 50+ times, storing only or storing and retiring.

After every kill, before any repair: every original file's bytes exist somewhere (its path
in the folder or the store; hash-compared with the generator's manifest) and no snapshot's
fs_version is ahead of its files. A final uninterrupted run converges: everything in the
store, every folder a compatibility link, storage verified.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.datadir import initialize
from archive_pipelines.migration import import_orphans
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.archivebox import Manifest, ReleaseMix, generate_collection
from archive_testkit.forkserver import ForkServer
from tests.helpers.migration import ALL_RELEASES, lost_bytes, snapshots

ROOT = Path(__file__).resolve().parents[2]
MIN_KILLS = 52


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The migration processes, each a fork of one process that imported the app once (a
    real process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.migration.crash_migrate"], cwd=ROOT) as server:
        yield server


def fresh_collection(data: Path, seed: int) -> tuple[StorageParts, Manifest]:
    manifest = generate_collection(data, ReleaseMix(releases=ALL_RELEASES, shared_asset_fraction=0.5),
                                   snapshots=36, seed=seed)
    settings = Settings(data_dir=data)
    initialize(settings)
    storage = open_storage(settings)
    report = import_orphans(storage.catalog, storage.layout)
    assert report.imported == 36
    return storage, manifest


def versions_not_ahead(storage: StorageParts) -> list[str]:
    """Snapshots whose fs_version claims more than their files show."""
    problems = []
    for ts, snapshot in snapshots(storage).items():
        folder = storage.layout.archive / ts
        if snapshot.fs_version == "cas":
            if not folder.is_symlink():
                problems.append(f"{ts} cas but archive/{ts} is not a compatibility link")
            with storage.catalog.transaction() as tx:
                rows = tx.files.snapshot_file_rows(snapshot.id)
            if not rows or not all(storage.primary.store.exists(row[4]) for row in rows):
                problems.append(f"{ts} cas but its blobs are not all in the store")
    return problems


@pytest.mark.slow
def test_kill_9_during_migration_never_loses_bytes_and_converges(tmp_path: Path,
                                                                forks: ForkServer) -> None:
    rng = random.Random(4242)
    kills = runs = rounds = 0
    started = time.monotonic()
    while kills < MIN_KILLS:
        rounds += 1
        data = tmp_path / f"round{rounds}"
        storage, manifest = fresh_collection(data, seed=rounds)
        while True:
            final = kills >= MIN_KILLS  # enough kills: let one run finish to show convergence
            mode = "retire" if final else rng.choice(("retire", "retire", "store"))
            args = [sys.executable, "-m", "tests.migration.crash_migrate", str(data), mode]
            with forks.popen(args, cwd=ROOT, stdout=subprocess.PIPE) as proc:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
                if not final:
                    time.sleep(rng.uniform(0.0, 0.6))
                killed = proc.poll() is None and not final
                if killed:
                    proc.kill()
                proc.wait()
                assert killed or proc.returncode == 0
            runs += 1
            kills += killed
            # Invariants at the crash point, before anything repairs:
            assert lost_bytes(storage, manifest) == [], f"round {rounds}, run {runs} ({mode})"
            assert versions_not_ahead(storage) == [], f"round {rounds}, run {runs} ({mode})"
            found = verify_storage(storage.catalog, storage.primary, storage.views,
                                   scan_store=False).found
            assert found["missing_blob_files"] == found["refcount_drift"] == 0
            if not killed and mode == "retire":
                break  # this collection is fully migrated; start another one
        # Converged: every snapshot in the store, every folder a link, nothing lost.
        assert {s.fs_version for s in snapshots(storage).values()} == {"cas"}
        assert all(p.is_symlink() for p in storage.layout.archive.iterdir() if p.name[0].isdigit())
        assert lost_bytes(storage, manifest) == []
        verify_storage(storage.catalog, storage.primary, storage.views, fix=True, vacuum=True)
        assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
        storage.close()
        storage.catalog.engine.dispose()
    print(f"{kills} kills in {runs} runs over {rounds} collections, {time.monotonic() - started:.0f} s")
