"""kill -9 a running ingest at random points, 24 times: nothing referenced is ever lost."""

import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.forkserver import ForkServer
from tests.helpers.storage import add_snapshot, write_tree

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The ingest processes, each a fork of one process that imported the app once (a real
    process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.storage.crash_ingest"], cwd=ROOT) as server:
        yield server


@pytest.mark.slow
def test_kill_9_during_ingest_never_loses_referenced_data(sqlite_storage: StorageParts,
                                                          tmp_path: Path,
                                                          forks: ForkServer) -> None:
    rng = random.Random(1234)
    files = {}
    for extractor in ("wget", "singlefile", "media"):
        for i in range(60):
            shared = i % 5 == 0
            body = (b"shared-asset-%d" % (i % 3)) * 200 if shared else rng.randbytes(3000 + i)
            files[f"{extractor}/d{i % 4}/f{i}.bin"] = body
    src = write_tree(tmp_path / "src", files)
    snapshots = [add_snapshot(sqlite_storage, url=f"https://s{i}.test/", timestamp=f"{i}.0")
                 for i in range(4)]
    args = [sys.executable, "-m", "tests.storage.crash_ingest",
            str(sqlite_storage.settings.data_dir), str(src), ",".join(snapshots)]
    kills = 0
    for _run in range(24):
        with forks.popen(args, cwd=ROOT, stdout=subprocess.PIPE) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "READY"
            time.sleep(rng.uniform(0.0, 0.8))
            if proc.poll() is None:
                proc.kill()
                kills += 1
            proc.wait()
        # Invariants that must hold at every crash point, before any repair:
        report = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views)
        assert report.found["missing_blob_files"] == 0, report.examples
        assert report.found["refcount_drift"] == 0, report.examples
    assert kills >= 12, "the ingest finished too fast to be interrupted"
    # A final run completes the work; verify --fix repairs what a crash left undone.
    done = forks.run(args, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                   fix=True, vacuum=True)
    final = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views)
    assert final.problems == 0, final.examples
    assert final.found["untracked_blob_files"] == 0  # every stored file ended up referenced
    assert final.files_checked == len(files) * len(snapshots)
