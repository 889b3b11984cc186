"""The data disk fills up mid-ingest (issue 18): a 4 MiB tmpfs holds the data dir, and a
source folder of ~5 MiB of distinct files does not fit.

The ingest stops with one line saying the disk is full and exit status 2, after printing
the snapshot's resume command; nothing the catalog records present is missing or wrong on
the disk, and the snapshot stays incomplete. Once the tmpfs is grown, the printed resume
command finishes the ingest: `verify --deep` is healthy and every source file reads back
through the snapshot's view with its exact bytes.

Twice: the SQLite catalog on the full disk too (whichever write fails first, blob or
catalog), and a PostgreSQL catalog elsewhere (every commit fits; only the blob writes fail).
"""

from __future__ import annotations

import errno
import random
import re
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from sqlalchemy import text

from archive_pipelines.catalog import make_engine
from archive_pipelines.catalog.errors import clear_catalog_errors
from archive_pipelines.cli.group_runner import run_group
from archive_testkit.tmpfs import resize_tmpfs
from tests.helpers.cli import run_cli
from tests.helpers.storage import recorded_present, sha

pytestmark = pytest.mark.faults

TIMESTAMP = "1764059462.5"
URL = "https://full.test/page"
FILES = 600  # 8-9 KiB each: the first batch (256) fits the disk, the second does not


@pytest.fixture
def small_disk(tmpfs: Callable[[str], Path]) -> Path:
    """A 4 MiB tmpfs (see the `tmpfs` fixture)."""
    return tmpfs("4m")


@pytest.fixture(params=["sqlite-on-the-full-disk", "postgresql-elsewhere"])
def catalog_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The CLI's environment: no DATABASE_URL (SQLite in the data dir) or a PostgreSQL one."""
    if request.param == "sqlite-on-the-full-disk":
        return {}
    return {"DATABASE_URL": str(request.getfixturevalue("postgres_url"))}


def source_tree(root: Path) -> dict[str, bytes]:
    """Distinct incompressible files under `root`: {relative path: bytes}."""
    rng = random.Random(18)
    files = {f"d{i % 6}/f{i:03d}.bin": rng.randbytes(8 * 1024 + i) for i in range(FILES)}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_a_full_data_disk_stops_the_ingest_in_one_line_and_a_resume_finishes_it(
        small_disk: Path, catalog_env: dict[str, str], tmp_path: Path) -> None:
    data = small_disk / "data"
    files = source_tree(tmp_path / "src")  # on another filesystem: copied, never hard-linked
    assert sum(map(len, files.values())) > 4_800_000  # > 4 MiB
    where = ("--data-dir", str(data))
    init = run_cli(*where, "init", env=catalog_env)
    assert init.returncode == 0, init.stderr

    full = run_cli(*where, "ingest", "--url", URL, "--timestamp", TIMESTAMP, "warc",
                   str(tmp_path / "src"), env=catalog_env)

    # One line says what happened; the line before it how to finish.
    assert full.returncode == 2, full.stdout + full.stderr
    assert "Traceback" not in full.stderr
    errors = [line for line in full.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("archive-pipelines: error: data disk full: "), \
        full.stderr
    snapshot_id = re.search(r"resume with `archive-pipelines ingest --resume (\S+)`",
                            full.stdout).group(1)  # type: ignore[union-attr]
    assert f"snapshot {snapshot_id} is incomplete: resume with " \
           f"`archive-pipelines ingest --resume {snapshot_id}`" in full.stderr

    # Nothing recorded present is absent or wrong; the snapshot is incomplete.
    catalog_url = catalog_env.get("DATABASE_URL", f"sqlite:///{data / 'catalog.sqlite3'}")
    present = recorded_present(catalog_url)
    by_hash = {sha(body): body for body in files.values()}
    assert len(present) < len(files), "the disk held the whole source: nothing was tested"
    for sha256, size in present.items():
        stored = data / "cas" / "sha256" / sha256[:2] / sha256[2:4] / sha256
        assert stored.read_bytes() == by_hash[sha256] and size == len(by_hash[sha256]), sha256
    halfway = run_cli(*where, "verify", "--deep", env=catalog_env)
    assert halfway.returncode == 1
    assert "incomplete_snapshots   1" in halfway.stdout
    assert snapshot_id in halfway.stdout
    for kind in ("missing_blob_files", "corrupt_blob_files"):
        assert kind not in halfway.stdout, halfway.stdout

    # Space again: the printed command finishes it.
    resize_tmpfs(small_disk, "64m")
    resumed = run_cli(*where, "ingest", "--resume", snapshot_id, env=catalog_env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"snapshot {snapshot_id} ({URL} @ {TIMESTAMP}) complete" in resumed.stdout
    healthy = run_cli(*where, "verify", "--deep", env=catalog_env)
    assert healthy.returncode == 0, healthy.stdout
    assert f"checked {len(files)} referenced blobs (hashed), {len(files)} files" in healthy.stdout
    view = data / "archive" / "by_timestamp" / TIMESTAMP / "warc"
    for rel, expected in files.items():
        assert (view / rel).read_bytes() == expected, rel
    assert recorded_present(catalog_url) == {sha(d): len(d) for d in files.values()}


def _full_sqlite(path: Path) -> None:
    """An insert into a SQLite database that may not grow: SQLITE_FULL, as on a full disk."""
    engine = make_engine(f"sqlite:///{path}")
    try:
        with clear_catalog_errors(), engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (x BLOB)"))
            connection.execute(text("PRAGMA max_page_count = 3"))
            connection.execute(text("INSERT INTO t VALUES (randomblob(100000))"))
    finally:
        engine.dispose()


@pytest.mark.unit
@pytest.mark.parametrize(("fault", "line"), [
    (lambda _: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device", "/d/x")),
     "data disk full: no space left on device (/d/x)"),
    (lambda _: (_ for _ in ()).throw(OSError(errno.EDQUOT, "Disk quota exceeded")),
     "data disk full: disk quota exceeded"),
    (_full_sqlite, "data disk full: catalog error: database or disk is full"),
], ids=["ENOSPC", "EDQUOT", "SQLITE_FULL"])
def test_a_full_disk_is_one_line_and_exit_status_2(
        fault: Callable[[Path], None], line: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    @click.command()
    def write() -> None:
        fault(tmp_path / "catalog.sqlite3")

    group = click.Group(commands={"write": write})
    assert run_group(group, "archive-pipelines", ["write"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"archive-pipelines: error: {line}"]


@pytest.mark.unit
def test_other_os_errors_are_not_called_a_full_disk() -> None:
    @click.command()
    def write() -> None:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError, match="Input/output error"):
        run_group(click.Group(commands={"write": write}), "archive-pipelines", ["write"])
