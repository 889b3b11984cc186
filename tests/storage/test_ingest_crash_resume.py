"""kill -9 an `ingest` at points chosen by counting its steps (catalog statements and file
operations): it leaves no snapshot or an incomplete one, never a partial snapshot that
looks whole, and `ingest --resume ID` (or the same command again) ends exactly as an
ingest that was never interrupted: the same files, the same bytes, one snapshot."""

from __future__ import annotations

import re
import shutil
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.forkserver import ForkServer
from tests.forked_runs import run
from tests.helpers.ingest_crashes import FILES, ROOT, catalog_state, store_files
from tests.helpers.storage import write_tree

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

CRASH = [sys.executable, "-m", "tests.storage.crash_cli"]
CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]
URL = "https://crash.test/page"


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once
    (a real process that SIGKILL ends, without a new interpreter's seconds of imports)."""
    with ForkServer(preload=["tests.storage.crash_cli", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def spread(total: int, count: int) -> list[int]:
    """`count` step numbers from 1 to `total`, evenly apart."""
    return sorted({1 + round(i * (total - 1) / (count - 1)) for i in range(count)})


@pytest.mark.slow
def test_kill_9_at_any_step_of_an_ingest_then_resume_ends_exact(
        tmp_path: Path, forks: ForkServer) -> None:
    template = tmp_path / "template"
    initialize(Settings(data_dir=template))
    toml = template / "archive.toml"
    text = re.sub(r"(?m)^ingest_batch_size = \d+", "ingest_batch_size = 4", toml.read_text())
    # In this process: its steps are the ones counted (a large ingest's workers are others).
    toml.write_text(text.replace("# ingest_processes = 2", "ingest_processes = 0"))

    def prepared(name: str) -> tuple[Path, list[str]]:
        data_dir = tmp_path / name / "data"
        shutil.copytree(template, data_dir, symlinks=True)
        src = write_tree(tmp_path / name / "site", FILES)  # hard-linked by the ingest
        return data_dir, ["--data-dir", str(data_dir), "ingest", "--url", URL, "wget", str(src)]

    baseline_dir, command = prepared("baseline")
    done = run(forks, [*CRASH, "none", "0", *command])
    assert done.returncode == 0, done.stderr
    counted = re.search(r"steps sql=(\d+) file=(\d+)", done.stdout)
    assert counted is not None, done.stdout
    sql_steps, file_steps = int(counted.group(1)), int(counted.group(2))
    assert sql_steps > 15 and file_steps > 40
    expected = catalog_state(baseline_dir)
    assert expected[0] == [("complete", len(FILES))]
    expected_files = store_files(baseline_dir)

    # The snapshot's creation, each batch's commit, the completion; puts, links, aliases.
    points = [("sql", n) for n in spread(sql_steps, 7)]
    points += [("file", n) for n in spread(file_steps, 5)]

    def kill_then_resume(point: tuple[str, int]) -> tuple[Path, list[tuple[str | None, int]]]:
        kind, step = point
        data_dir, command = prepared(f"{kind}-{step}")
        killed = run(forks, [*CRASH, kind, str(step), *command])
        assert killed.returncode == -signal.SIGKILL, (point, killed.stdout, killed.stderr)
        left, _files, _blobs = catalog_state(data_dir)
        # No snapshot, or an incomplete one: never a partial one that looks whole.
        assert len(left) <= 1 and all(done is None for done, _count in left), (point, left)
        started = re.search(r"ingest --resume ([0-9a-f-]{36})", killed.stdout)
        # Half the points resume by id (when the id was printed), half run the same command.
        if started and left and step % 2:
            again = run(forks, [*CLI, "--data-dir", str(data_dir), "ingest", "--resume",
                                started.group(1)])
        else:
            again = run(forks, [*CLI, *command])
        assert again.returncode == 0, (point, again.stdout, again.stderr)
        if left:  # found by id or by URL and folder, never a second snapshot
            assert again.stdout.startswith("resuming snapshot "), (point, again.stdout)
        return data_dir, left

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(kill_then_resume, points))
    # The kills fell before the snapshot existed and while it was partial.
    left = [state for _dir, state in results]
    assert [] in left and any(state and 0 < state[0][1] < len(FILES) for state in left)

    for (data_dir, _left), point in zip(results, points, strict=True):
        assert catalog_state(data_dir) == expected, point
        assert store_files(data_dir) == expected_files, point
        with open_storage(Settings(data_dir=data_dir)) as parts:
            report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                                    data_dir=data_dir)
            parts.catalog.engine.dispose()
        assert report.problems == 0, (point, report.examples)
        assert report.found["untracked_blob_files"] == 0, point
