"""`ingest` never reports a success it did not have: a file that changed or vanished while it
ran makes it exit 1 with the snapshot left incomplete, and `ingest --resume ID` finishes it;
an EXTRACTOR that is not a plain name, or a folder with no file, is refused before anything
is created."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_testkit.forkserver import ForkServer
from tests.forked_runs import ROOT, run
from tests.helpers.cli import CLI
from tests.helpers.ingest_crashes import catalog_state
from tests.helpers.storage import sha, write_tree

URL = "https://changing.test/"
FILES = {f"f{i:02d}.txt": f"file {i}\n".encode() * (i + 1) for i in range(12)}
CHANGING = [sys.executable, "-m", "tests.cli.changing_files_cli"]


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once."""
    with ForkServer(preload=["tests.cli.changing_files_cli", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def cli(server: ForkServer, *args: str) -> subprocess.CompletedProcess[str]:
    return run(server, [*CLI, *args])


def data_dir(server: ForkServer, tmp_path: Path) -> list[str]:
    """An initialized data dir whose ingests take 4 files per batch, on threads only (so the
    batches, and which files a change can reach, are fixed): its --data-dir option."""
    data = tmp_path / "data"
    assert cli(server, "--data-dir", str(data), "init").returncode == 0
    toml = data / "archive.toml"
    text = re.sub(r"(?m)^ingest_batch_size = \d+", "ingest_batch_size = 4", toml.read_text())
    toml.write_text(text.replace("# ingest_processes = 2", "ingest_processes = 0"))
    return ["--data-dir", str(data)]


def test_files_that_change_or_vanish_mid_ingest_leave_it_incomplete_until_resumed(
        tmp_path: Path, forks: ForkServer) -> None:
    where = data_dir(forks, tmp_path)
    src = write_tree(tmp_path / "site", FILES)
    vanish = src / "f00.txt"  # listed with the rest, removed before its batch is stored

    done = run(forks, [*CHANGING, str(src), str(vanish), *where,
                       "ingest", "--url", URL, "wget", str(src)])

    assert done.returncode == 1, (done.stdout, done.stderr)
    changed = re.search(r"^changed (.+)$", done.stderr, re.MULTILINE)
    assert changed is not None, done.stderr
    assert "changed during ingest; nothing stored" in done.stderr
    assert f"{vanish}: No such file or directory" in done.stderr
    snapshot_id = re.search(r"snapshot ([0-9a-f-]{36}) ", done.stdout)
    assert snapshot_id is not None, done.stdout
    resume = f"archive-pipelines ingest --resume {snapshot_id.group(1)}"
    assert f"snapshot {snapshot_id.group(1)} ({URL} @ " in done.stdout
    assert ") incomplete\n" in done.stdout and " complete\n" not in done.stdout
    assert f"2 file(s) not stored (listed on stderr); once they are readable and no longer " \
           f"changing, finish with `{resume}`" in done.stdout
    [(state, stored)] = catalog_state(Path(where[1]))[0]
    assert (state, stored) == (None, len(FILES) - 2)  # incomplete: everything else stored
    verify = cli(forks, *where, "verify")
    assert verify.returncode == 1 and resume in verify.stdout, verify.stdout

    finished = cli(forks, *where, "ingest", "--resume", snapshot_id.group(1))

    assert finished.returncode == 0, (finished.stdout, finished.stderr)
    assert ") complete\n" in finished.stdout and finished.stderr == ""
    assert f"skipped {len(FILES) - 2} files the interrupted ingest had stored" in finished.stdout
    [(state, stored)], files, _blobs = catalog_state(Path(where[1]))
    assert (state, stored) == ("complete", len(FILES) - 1)
    # Every file the folder holds now, with its bytes now (the changed one as it ended up).
    assert files == {f"wget/{p.name}": sha(p.read_bytes()) for p in src.iterdir()}
    assert Path(changed.group(1)).read_bytes() != FILES[Path(changed.group(1)).name]
    healthy = cli(forks, *where, "verify", "--deep")
    assert healthy.returncode == 0, healthy.stdout


@pytest.mark.parametrize("extractor", ["../../etc", ""])  # the rest: test_ingest_resume
def test_an_extractor_that_is_not_a_plain_name_is_refused_before_anything_is_made(
        tmp_path: Path, forks: ForkServer, extractor: str) -> None:
    where = data_dir(forks, tmp_path)
    src = write_tree(tmp_path / "site", FILES)

    done = cli(forks, *where, "ingest", "--url", "http://x/", "--", extractor, str(src))

    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a plain name" in lines[0], lines
    assert done.stdout == ""
    assert catalog_state(Path(where[1]))[0] == []  # no snapshot


def test_a_folder_without_a_file_is_refused_and_left_out_entries_exit_1(
        tmp_path: Path, forks: ForkServer) -> None:
    where = data_dir(forks, tmp_path)
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "link").symlink_to("/etc/hostname")

    refused = cli(forks, *where, "ingest", "--url", URL, "wget", str(empty))

    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"archive-pipelines: error: {empty} holds no regular "
                                      "file: nothing to ingest")
    assert catalog_state(Path(where[1]))[0] == []
    (empty / "page.html").write_bytes(b"<html>stored</html>")

    done = cli(forks, *where, "ingest", "--url", URL, "wget", str(empty))

    assert done.returncode == 1, (done.stdout, done.stderr)
    assert ") complete\n" in done.stdout  # every regular file is stored...
    assert f"{empty / 'link'}: skipped (symlink or special file)" in done.stderr
    assert "1 symlink(s) or special file(s) left out (only regular files are stored)" \
        in done.stdout  # ...and what was not is said, with exit status 1
    assert catalog_state(Path(where[1]))[0] == [("complete", 1)]
