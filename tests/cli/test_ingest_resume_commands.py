"""`ingest` as a person runs it when it is interrupted: the snapshot's id and resume command
printed at the start, `status` and `verify` naming the incomplete snapshot, and `ingest
--resume ID` or the same command again finishing it."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_testkit.forkserver import ForkServer
from tests.forked_runs import run
from tests.helpers.cli import CLI
from tests.helpers.ingest_crashes import FILES, ROOT
from tests.helpers.storage import write_tree

URL = "https://resume.test/"


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once."""
    with ForkServer(preload=["tests.storage.crash_cli", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def cli(server: ForkServer, *args: str) -> subprocess.CompletedProcess[str]:
    """tests.cli.test_cli.run_cli in a fork of `server`: `archive-pipelines ARGS`, its output."""
    return run(server, [*CLI, *args])


def interrupted(server: ForkServer, tmp_path: Path) -> tuple[list[str], list[str], str]:
    """A data dir whose ingest was killed after its first batch's commit: (the data dir
    option, the ingest command, the snapshot id it printed)."""
    data = tmp_path / "data"
    assert cli(server, "--data-dir", str(data), "init").returncode == 0
    toml = data / "archive.toml"
    text = re.sub(r"(?m)^ingest_batch_size = \d+", "ingest_batch_size = 4", toml.read_text())
    toml.write_text(text.replace("# ingest_processes = 2", "ingest_processes = 0"))
    src = write_tree(tmp_path / "site", FILES)
    where = ["--data-dir", str(data)]
    command = ["ingest", "--url", URL, "wget", str(src)]
    killed = run(server, [sys.executable, "-m", "tests.storage.crash_cli",
                          "sql:INSERT INTO snapshot_file", "2", *where, *command])
    assert killed.returncode == -9, killed.stderr
    printed = re.fullmatch(
        r"ingesting into snapshot ([0-9a-f-]{36}) \(https://resume\.test/ @ [0-9.]+, "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\); if interrupted, resume with "
        r"`archive-pipelines ingest --resume \1`\n", killed.stdout)
    assert printed is not None, killed.stdout  # said before the first file was stored
    return where, command, printed.group(1)


def test_status_and_verify_name_an_interrupted_ingest_and_resume_finishes_it(
        tmp_path: Path, forks: ForkServer) -> None:
    where, _command, snapshot_id = interrupted(forks, tmp_path)
    resume = f"`archive-pipelines ingest --resume {snapshot_id}`"
    status = cli(forks, *where, "status")
    assert status.returncode == 0, status.stderr
    assert "incomplete      1 (ingests running or interrupted)" in status.stdout
    assert f"  {snapshot_id}  {URL} @ " in status.stdout and resume in status.stdout
    verify = cli(forks, *where, "verify")
    assert verify.returncode == 1, verify.stdout
    assert "incomplete_snapshots   1" in verify.stdout and resume in verify.stdout
    assert "healthy" not in verify.stdout

    done = cli(forks, *where, "ingest", "--resume", snapshot_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"resuming snapshot {snapshot_id} ")
    assert "skipped 4 files the interrupted ingest had stored" in done.stdout
    assert f"files {len(FILES) - 4} ({len(FILES) - 4} added" in done.stdout
    assert "incomplete      0" in cli(forks, *where, "status").stdout
    healthy = cli(forks, *where, "verify", "--deep")
    assert healthy.returncode == 0 and "healthy" in healthy.stdout, healthy.stdout
    again = cli(forks, *where, "ingest", "--resume", snapshot_id)
    assert again.returncode == 2
    assert again.stderr.strip() == (f"archive-pipelines: error: snapshot {snapshot_id} "
                                    f"({URL} @ {done.stdout.split(' @ ')[1].split(',')[0]}) "
                                    "is complete: nothing to resume")


def test_the_same_command_again_resumes_instead_of_making_a_second_snapshot(
        tmp_path: Path, forks: ForkServer) -> None:
    where, command, snapshot_id = interrupted(forks, tmp_path)
    again = cli(forks, *where, *command)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"resuming snapshot {snapshot_id} ")
    assert f"snapshot {snapshot_id} ({URL} @ " in again.stdout
    # The folder's snapshot is complete now: one more run is a new snapshot, as before.
    third = cli(forks, *where, *command)
    assert third.returncode == 0 and third.stdout.startswith("ingesting into snapshot ")
    assert snapshot_id not in third.stdout
    status = cli(forks, *where, "status").stdout
    assert "snapshots       2" in status and "incomplete      0" in status


def test_resume_arguments_are_checked_in_one_line(tmp_path: Path,
                                                  forks: ForkServer) -> None:
    data = tmp_path / "data"
    assert cli(forks, "--data-dir", str(data), "init").returncode == 0
    cases = {
        ("ingest", "--resume", "nope"): "no snapshot 'nope' in the catalog",
        ("ingest", "--resume", "x", "--url", URL): "--resume takes no --url",
        ("ingest", "wget"): "ingest needs --url URL EXTRACTOR DIRECTORY (or --resume ID)",
    }
    for args, message in cases.items():
        done = cli(forks, "--data-dir", str(data), *args)
        assert done.returncode == 2, (args, done.stdout)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, lines)


def test_help_shows_resume(forks: ForkServer) -> None:
    done = forks.run([sys.executable, "-m", "archive_pipelines.cli.main", "ingest",
                      "--help"], cwd=ROOT, timeout=60)
    assert "--resume ID" in done.stdout and "incomplete" in done.stdout
