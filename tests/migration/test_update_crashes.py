"""`update --import-orphans --migrate-fs` killed with -9 at 30+ random points on 2,000 folders,
and two `update` runs at once: nothing is lost, and the adopted collection opens as before.

The manifest is (path, sha256) of every original file, index.json included. After every
kill, before any repair, every original's bytes are still somewhere we keep (its folder, the
migrated/ folder it moved to, or a blob that hashes to it). Once a run completes: every
original path under `archive/<ts>/` opens the same bytes, every sha256 is a blob referenced
by that path; then `gc --grace-hours 0` (which deletes migrated/ folders) and the same again.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotFile
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.archivebox import ReleaseMix, generate_collection
from archive_testkit.forkserver import ForkedProcess, ForkServer
from archive_testkit.manifest import check_manifest, manifest
from tests.helpers.cli import CLI
from tests.helpers.migration import ALL_RELEASES

FOLDERS = 2000
MIN_KILLS = 30
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `archive-pipelines` runs, each a fork of one process that imported the app
    once (a real process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["archive_pipelines.cli.*"], cwd=ROOT) as server:
        yield server


def run_cli(forks: ForkServer, *args: str) -> subprocess.CompletedProcess[str]:
    """tests.cli.test_cli.run_cli, forked by `forks`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    return forks.run([*CLI, *args], env=env, timeout=120)


def _update(forks: ForkServer, data: Path) -> ForkedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return forks.popen([*CLI, "--data-dir", str(data), "update", "--import-orphans",
                        "--migrate-fs", "--batch-size", "250"], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lost(data: Path, before: dict[str, str]) -> list[str]:
    """Originals whose bytes are nowhere we keep: not at their path (through links), not in
    migrated/, not a blob that hashes to them."""
    kept = set(manifest(data, "migrated").values()) if (data / "migrated").exists() else set()
    storage_root = data / "cas" / "sha256"
    lost = []
    for path, sha in before.items():
        if sha in kept:
            continue
        try:
            if sha256_file(data / path)[0] == sha:
                continue
        except OSError:
            pass
        blob = storage_root / sha[:2] / sha[2:4] / sha
        if not (blob.is_file() and sha256_file(blob)[0] == sha):
            lost.append(path)
    return lost


def _referenced(data: Path, before: dict[str, str]) -> list[str]:
    """Originals that are not a verified blob referenced by their own path."""
    storage = open_storage(Settings(data_dir=data))
    try:
        with storage.catalog.reading() as tx:
            rows = tx.session.execute(
                select(Snapshot.timestamp, SnapshotFile.relative_path, Blob.sha256, Blob.ref_count)
                .join(SnapshotFile, SnapshotFile.snapshot_id == Snapshot.id)
                .join(Blob, Blob.id == SnapshotFile.blob_id)).all()
    finally:
        storage.close()
        storage.catalog.engine.dispose()
    recorded = {f"archive/{ts}/{rel}": (sha, refs) for ts, rel, sha, refs in rows}
    problems = []
    for path, sha in before.items():
        found = recorded.get(path)
        blob = data / "cas" / "sha256" / sha[:2] / sha[2:4] / sha
        if found is None or found[0] != sha or found[1] < 1:
            problems.append(f"{path}: not referenced ({found})")
        elif sha256_file(blob)[0] != sha:
            problems.append(f"{path}: blob does not hash to {sha[:12]}")
    return problems


def _adopted_as_before(forks: ForkServer, data: Path, before: dict[str, str]) -> None:
    assert check_manifest(data, before) == []
    assert _referenced(data, before) == []
    gc = run_cli(forks, "--data-dir", str(data), "gc", "--grace-hours", "0", "--untracked")
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert not list((data / "migrated").glob("*/*"))  # the retired folders are gone now
    assert check_manifest(data, before) == []
    assert _referenced(data, before) == []
    verify = run_cli(forks, "--data-dir", str(data), "verify", "--deep")
    assert verify.returncode == 0 and "healthy" in verify.stdout, verify.stdout


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory, forks: ForkServer
               ) -> tuple[Path, dict[str, str]]:
    """2,000 small legacy folders of every release (and index.sqlite3), initialized."""
    data = tmp_path_factory.mktemp("pristine") / "data"
    generate_collection(data, ReleaseMix(releases=ALL_RELEASES, files_per_snapshot=2, with_sqlite=True),
                        snapshots=FOLDERS, seed=14)
    assert run_cli(forks, "--data-dir", str(data), "init").returncode == 0
    return data, manifest(data, "archive")


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def _tracebacks(err: str, *, killed: bool) -> list[str]:
    """The tracebacks a run printed, less those a kill explains: a hashing worker that was
    starting when its parent died reads the parent's end of its pipe empty (EOFError in
    multiprocessing's spawn_main); it is the kill's echo, not a failure of the run."""
    found = err.split("Traceback (most recent call last):")[1:]
    return [text for text in found
            if not (killed and "in spawn_main" in text and "EOFError" in text)]


@pytest.mark.slow
@pytest.mark.timeout(600)  # 99 s beside a full suite on 2026-11-29: a slow CI day is 3x that
def test_kill_9_at_random_points_of_update_loses_nothing(
        collection: tuple[Path, dict[str, str]], tmp_path: Path, forks: ForkServer) -> None:
    data = _copy(collection[0], tmp_path / "data")
    before = collection[1]
    assert len({path.split("/")[1] for path in before}) >= FOLDERS
    rng = random.Random(1414)
    kills = runs = 0
    started = time.monotonic()
    while True:
        proc = _update(forks, data)
        final = kills >= MIN_KILLS
        if not final:
            # Early kills land in the import, later ones (the import of a known folder is a
            # no-op) in the migration's batches: each run gets further than the last.
            time.sleep(rng.uniform(0.2, 1.2 + 0.15 * kills))
        killed = not final and proc.poll() is None
        if killed:
            proc.kill()
        out, err = proc.communicate()
        runs += 1
        kills += killed
        assert killed or proc.returncode == 0, out + err
        assert _tracebacks(err, killed=killed) == [], err
        assert _lost(data, before) == [], f"run {runs}"
        if final or (not killed and proc.returncode == 0 and kills >= MIN_KILLS):
            break
        if not killed:  # finished before the kill: start over for more kill points
            shutil.rmtree(data)
            _copy(collection[0], data)
    print(f"{kills} kills in {runs} runs, {time.monotonic() - started:.0f} s")
    _adopted_as_before(forks, data, before)


@pytest.mark.slow
def test_two_updates_at_once_lose_nothing(collection: tuple[Path, dict[str, str]], tmp_path: Path,
                                          forks: ForkServer) -> None:
    data = _copy(collection[0], tmp_path / "data")
    before = collection[1]

    first, second = _update(forks, data), _update(forks, data)
    outputs = [proc.communicate() for proc in (first, second)]

    for proc, (out, err) in zip((first, second), outputs, strict=True):
        assert proc.returncode == 0, out + err
        assert "Traceback" not in err
    assert _lost(data, before) == []
    # Folders one run found busy were the other's: a last run has nothing left to do.
    again = run_cli(forks, "--data-dir", str(data), "update", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    _adopted_as_before(forks, data, before)
