"""kill -9 a compaction right after each of its catalog statements and commits, each of its
file operations and a spread of its file writes (counted in a child process), then rerun it:
no record is ever lost, even before the rerun, and after it the catalog, the ref counts, the
store, the compacted files and `verify --deep` are exactly those of a compaction never
interrupted, with no temp file left."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.captures.compaction import compact_sessions
from archive_pipelines.storage.verify import KINDS, verify_storage
from archive_testkit.forkserver import ForkServer
from tests.helpers.captures import (
    assert_storage_clean,
    capture_primary,
    capture_rows,
    catalog_dump,
    compacted_files,
    ingest_all,
    parts_of,
    records_of,
    segment_files,
    session_ids,
)
from tests.helpers.crawls import Crawled

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, "-m", "tests.captures.crash_compact"]


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once
    (a real process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.captures.crash_compact"], cwd=ROOT) as server:
        yield server


def run(server: ForkServer, *args: str) -> subprocess.CompletedProcess[str]:
    """The crash script as subprocess.run(capture_output=True, text=True), forked by `server`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    return server.run([*SCRIPT, *args], cwd=ROOT, env=env, timeout=120)


def copy_data_dir(source: Path, target: Path) -> None:
    """A copy of a data dir that keeps its hard links (a blob file and its view alias are one
    inode, which verify checks): `cp -a`, not shutil.copytree."""
    subprocess.run(["cp", "-a", str(source), str(target)], check=True)


def store_files(data_dir: Path) -> dict[str, bytes]:
    """The primary store's blob files and their bytes; not its writers' temp files (hidden
    names, or under cas/tmp/: a put killed midway leaves one, which the store's
    `remove_stale_temp_files` sweeps once old, as after any write the store does)."""
    found = {}
    for dirpath, _dirs, files in os.walk(data_dir / "cas"):
        for name in files:
            path = Path(dirpath, name)
            relative = path.relative_to(data_dir).as_posix()
            if not relative.startswith("cas/tmp/") and not name.startswith("."):
                found[relative] = path.read_bytes()
    return found


def compacted_bytes(data_dir: Path) -> dict[str, bytes]:
    folder = data_dir / "sessions" / "compacted"
    return {name: (folder / name).read_bytes() for name in compacted_files(data_dir)}


def spread(total: int, count: int) -> list[int]:
    """`count` step numbers from 1 to `total`, evenly apart."""
    return sorted({1 + round(i * (total - 1) / (count - 1)) for i in range(count)})


@pytest.mark.slow
# ~60 kill points, each a copy, a kill, a deep verify and a rerun: 316 s beside a full suite
# on 2026-11-29, a fast day (a slow CI day is up to 2.5x that).
@pytest.mark.timeout(1200)
def test_kill_9_at_every_step_of_a_compaction_then_a_rerun_ends_exact(
        crawled: Crawled, tmp_path: Path, forks: ForkServer) -> None:
    # Ingest once (the SQLite catalog is inside the data dir); every kill starts from a copy.
    ingested = tmp_path / "ingested"
    copy_data_dir(crawled.data_dir, ingested)
    with parts_of(ingested) as parts:
        ingest_all(parts, ingested)
        (sid,) = session_ids(parts.catalog)
        rows = capture_rows(parts.catalog)
        originals = records_of(ingested, rows)
    assert len(originals) == len(rows) > 100
    segments = segment_files(ingested)

    # The compaction never interrupted, and how many steps of each kind it takes.
    reference = tmp_path / "reference"
    copy_data_dir(ingested, reference)
    done = run(forks, str(reference), "none", "0")
    assert done.returncode == 0, done.stderr
    counted = re.search(r"steps sql=(\d+) file=(\d+) write=(\d+)", done.stdout)
    assert counted is not None, done.stdout
    sql_steps, file_steps, write_steps = map(int, counted.groups())
    # Statements of the transaction, the temp files' creation, fsyncs, renames, the
    # store's puts, the segments' removal; a write per frame and per index entry.
    assert sql_steps >= 10 and file_steps >= 10 and write_steps > len(segments)
    with parts_of(reference) as parts:
        expected = catalog_dump(parts.catalog)
        assert records_of(reference, capture_rows(parts.catalog)) == originals
        assert_storage_clean(parts, reference)
    expected_store = store_files(reference)
    expected_compacted = compacted_bytes(reference)
    assert sorted(expected_compacted) == [f"{sid}.idx", f"{sid}.jsonl.zst"]

    points = [("sql", n) for n in range(1, sql_steps + 1)]
    points += [("file", n) for n in range(1, file_steps + 1)]
    points += [("write", n) for n in sorted({1, 2, 3, *spread(write_steps, 8)})]
    assert len(points) >= 20

    def kill(point: tuple[str, int]) -> Path:
        kind, step = point
        data_dir = tmp_path / f"{kind}-{step}"
        copy_data_dir(ingested, data_dir)
        killed = run(forks, str(data_dir), kind, str(step))
        assert killed.returncode == -signal.SIGKILL, (point, killed.stdout, killed.stderr)
        return data_dir

    with ThreadPoolExecutor(4) as pool:
        killed_dirs = list(pool.map(kill, points))

    seen: dict[str, int] = {"temp files": 0, "not recorded": 0, "recorded, segments left": 0,
                            "all done": 0}
    for data_dir, point in zip(killed_dirs, points, strict=True):
        with parts_of(data_dir) as parts:
            # At the kill, before any repair: every capture's record reads back as it was,
            # no reference is counted wrong, no referenced blob is missing or damaged (the
            # compacted pair may be in the store before the catalog knows it).
            assert records_of(data_dir, capture_rows(parts.catalog)) == originals, point
            report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                                    data_dir=data_dir)
            assert {k: report.found[k] for k in KINDS if report.found[k]
                    and k not in ("untracked_blob_files", "orphan_blobs")} == {}, (
                point, report.examples)
            _note_state(seen, parts, data_dir, sid)

            rerun = compact_sessions(parts.catalog, capture_primary(parts), data_dir,
                                     older_than=timedelta(0))
            assert rerun.failed == [], (point, rerun.to_dict())
            assert {s.outcome for s in rerun.sessions} <= {"compacted", "finished"}, point

            assert catalog_dump(parts.catalog) == expected, point
            assert records_of(data_dir, capture_rows(parts.catalog)) == originals, point
            assert_storage_clean(parts, data_dir)
            with parts.catalog.reading() as tx:
                assert list(tx.blobs.count_references()) == [], point
            assert compact_sessions(parts.catalog, capture_primary(parts), data_dir,
                                    older_than=timedelta(0)).sessions == [], point
        assert segment_files(data_dir) == {}, point
        assert compacted_bytes(data_dir) == expected_compacted, point  # no temp file left
        assert store_files(data_dir) == expected_store, point
        shutil.rmtree(data_dir)
    # The kills fell in every phase: writing the temp files, before the commit, after it
    # with segment files still to remove, and after everything.
    assert all(seen.values()), seen


def _note_state(seen: dict[str, int], parts: Any, data_dir: Path, sid: str) -> None:
    """Which phase the kill interrupted, judged from what it left."""
    folder = data_dir / "sessions" / "compacted"
    if folder.exists() and any(p.name.startswith(".") for p in folder.iterdir()):
        seen["temp files"] += 1
    with parts.catalog.reading() as tx:
        found = tx.captures.crawl_session(sid)
    assert found is not None
    if found.compacted_path is None:
        seen["not recorded"] += 1
    elif segment_files(data_dir):
        seen["recorded, segments left"] += 1
    else:
        seen["all done"] += 1
