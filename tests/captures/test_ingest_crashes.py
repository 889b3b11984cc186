"""kill -9 an `ingest-crawl` at 26 points chosen by counting its steps (catalog statements and
file operations), rerun it: the catalog, the store and `verify --deep` end exactly as after
an ingest that was never interrupted."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from archive_pipelines.catalog.models import CrawlSegment
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.forkserver import ForkServer
from tests.forked_runs import run
from tests.helpers.captures import catalog_state, parts_of
from tests.helpers.crawls import Crawled

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, "-m", "tests.captures.crash_ingest_crawl"]
CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once
    (a real process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.captures.crash_ingest_crawl", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def store_files(data_dir: Path) -> dict[str, int]:
    """Blob files and their aliases (path -> size); not the writers' temp files."""
    found = {}
    for dirpath, _dirs, files in os.walk(data_dir / "cas"):
        for name in files:
            path = Path(dirpath, name)
            relative = path.relative_to(data_dir).as_posix()
            if not relative.startswith("cas/tmp/"):
                found[relative] = path.lstat().st_size
    return found


def spread(total: int, count: int) -> list[int]:
    """`count` step numbers from 1 to `total`, evenly apart."""
    return sorted({1 + round(i * (total - 1) / (count - 1)) for i in range(count)})


@pytest.mark.slow
def test_kill_9_at_any_step_of_an_ingest_then_a_rerun_ends_exact(
        crawled: Crawled, tmp_path: Path, forks: ForkServer) -> None:
    baseline_dir = tmp_path / "baseline"
    shutil.copytree(crawled.data_dir, baseline_dir, symlinks=True)
    done = run(forks, [*SCRIPT, str(baseline_dir), "none", "0"])
    assert done.returncode == 0, done.stderr
    counted = re.search(r"steps sql=(\d+) file=(\d+)", done.stdout)
    assert counted is not None, done.stdout
    sql_steps, file_steps = int(counted.group(1)), int(counted.group(2))
    assert sql_steps > 30 and file_steps > 100
    with parts_of(baseline_dir) as parts:
        expected = catalog_state(parts.catalog)
        segments = len(expected["crawl_segment"])
    expected_files = store_files(baseline_dir)

    # Every catalog statement region and the first segment's put (temp file, fsyncs,
    # publish), then aliases and later puts along the way.
    points = [("sql", n) for n in spread(sql_steps, 14)]
    points += [("file", n) for n in sorted({1, 2, 3, 4, *spread(file_steps, 9)})]
    assert len(points) >= 20

    def kill_then_rerun(point: tuple[str, int]) -> tuple[Path, int]:
        kind, step = point
        data_dir = tmp_path / f"{kind}-{step}"
        shutil.copytree(crawled.data_dir, data_dir, symlinks=True)
        killed = run(forks, [*SCRIPT, str(data_dir), kind, str(step)])
        assert killed.returncode == -signal.SIGKILL, (point, killed.stdout, killed.stderr)
        with parts_of(data_dir) as parts, parts.catalog.read_session() as session:
            ledger = session.scalar(select(func.count()).select_from(CrawlSegment)) or 0
        rerun = run(forks, [*CLI, "--data-dir", str(data_dir), "ingest-crawl", "--all"])
        assert rerun.returncode == 0, (point, rerun.stdout, rerun.stderr)
        return data_dir, ledger

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(kill_then_rerun, points))
    # The kills fell before, between and after the segments' transactions.
    interrupted = [ledger for _dir, ledger in results]
    assert min(interrupted) == 0 and any(0 < n < segments for n in interrupted)

    for (data_dir, _ledger), point in zip(results, points, strict=True):
        with parts_of(data_dir) as parts:
            assert catalog_state(parts.catalog) == expected, point
            report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                                    data_dir=data_dir)
            assert report.problems == 0, (point, report.examples)
            assert report.found["crawl_pending"] == 0, point
            with parts.catalog.reading() as tx:
                assert list(tx.blobs.count_references()) == [], point
        assert store_files(data_dir) == expected_files, point
