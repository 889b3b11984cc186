"""The ingest worker processes: they outlive the threads that start them, die with their
parent, and store and link exactly what the in-process path does (see test_ingest)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, StorageSettings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.file_workers import may_start_processes
from tests.helpers.storage import add_snapshot, write_tree


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_exit_when_their_parent_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-m", "tests.storage.file_workers_parent", str(tmp_path / "data")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "a worker outlived its killed parent"
        time.sleep(0.1)


def test_the_pool_outlives_the_thread_that_started_it(data_dir: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=data_dir, storage=StorageSettings(ingest_processes=2,
                                                                   ingest_batch_size=3))
    initialize(settings)
    storage = open_storage(settings)
    try:
        reports = []
        for n in range(2):  # each ingest in its own short-lived thread
            sid = add_snapshot(storage, timestamp=f"{n}.0")
            src = write_tree(tmp_path / f"s{n}", {f"f{i}": f"{n}-{i}".encode() for i in range(10)})
            thread = threading.Thread(target=lambda sid=sid, src=src: reports.append(
                ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                                 snapshot_id=sid, extractor="wget", directory=src,
                                 batch_size=3)))
            thread.start()
            thread.join()
            if n == 0:
                first_pids = storage.work.file_workers().pids()
        assert [(r.files, r.errors) for r in reports] == [(10, []), (10, [])]
        assert storage.work.file_workers().pids() == first_pids
        assert all(_alive(pid) for pid in first_pids)
    finally:
        storage.close()
        storage.catalog.engine.dispose()
    assert not any(_alive(pid) for pid in first_pids)
    assert os.path.islink(data_dir / "archive" / "by_timestamp" / "1.0" / "wget" / "f9")


def test_workers_do_not_rerun_the_parents_main_script(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {f"f{i}": f"{i}".encode() for i in range(9)})
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "tests/storage/file_workers_unguarded.py", str(tmp_path / "data"),
         str(runs), str(src)],
        capture_output=True, text=True, timeout=120, check=False,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["9", "0", "2"]  # every file stored, by two workers
    assert runs.read_text() == "ran\n"  # the script ran once: in the parent only


def test_leaving_a_with_block_stops_the_workers_and_their_manager_thread(
        data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, storage=StorageSettings(ingest_processes=2))
    initialize(settings)
    with open_storage(settings) as storage:
        workers = storage.work.file_workers()
        pids = workers.pids()
        manager = workers._pool._executor_manager_thread
        assert len(pids) == 2 and manager is not None and manager.is_alive()
    # Waited for: nothing left for the interpreter's exit hooks to race with.
    assert not manager.is_alive() and not any(_alive(pid) for pid in pids)
    assert storage.work.started_file_workers() is None
    storage.close()  # again: nothing to do
    storage.catalog.engine.dispose()


def test_a_daemonic_process_ingests_without_worker_processes(tmp_path: Path) -> None:
    """A Celery prefork worker runs each task in a daemonic process, which may start no
    children: ingest (the cluster's `blobs` steps) does the per-file work in-process there."""
    src = write_tree(tmp_path / "src", {f"f{i}": f"{i}".encode() for i in range(9)})
    done = subprocess.run(
        [sys.executable, "-m", "tests.storage.file_workers_daemonic", str(tmp_path / "data"),
         str(src)],
        capture_output=True, text=True, timeout=120, check=False,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    # Every file stored, no worker process; WARC imports and exports start none there either.
    assert done.stdout.split() == ["9", "0", "0", "False"]
    assert may_start_processes()  # here, in pytest's process
