"""PostgreSQL stops mid-ingest (issue 18): the catalog server is shut down (immediate, as a
crash) halfway through an ingest's batches, at a step chosen by counting the ingest's
catalog statements, so the fault lands at the same point every run.

The ingest fails with exit status 2 and one line naming the unreachable catalog, no
traceback; once PostgreSQL is back (same port, same data folder, recovered), every blob
the catalog records present is on disk with its bytes (`verify --deep` finds only the
incomplete snapshot), the source files are unchanged, and `ingest --resume ID` ends
exactly as an uninterrupted ingest: the same files, blobs and store, `verify --deep` healthy.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.forkserver import ForkServer
from archive_testkit.servers import LocalPostgres
from tests.forked_runs import run
from tests.helpers.ingest_crashes import complete_files_and_ref_counts, store_files
from tests.helpers.storage import recorded_present, sha, write_tree

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

ROOT = Path(__file__).resolve().parents[2]
STOPPING = [sys.executable, "-m", "tests.storage.stop_postgres_cli"]
CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]
URL = "https://pg-stop.test/page"
FILES = {f"d{i % 3}/f{i}.txt": f"file {i}\n".encode() * (40 * i + 1) for i in range(24)}
FILES["d0/same-as-f1.txt"] = FILES["d1/f1.txt"]  # one blob, two references


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once."""
    with ForkServer(preload=["tests.storage.stop_postgres_cli", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def data_dir_on(forks: ForkServer, server: LocalPostgres, root: Path) -> tuple[Path, Path]:
    """An initialized data dir whose catalog is a new database of `server` (batches of 4
    files, no worker processes: the counted steps are this process's), and a source tree."""
    data = root / "data"
    init = run(forks, [*CLI, "--data-dir", str(data), "init"])
    assert init.returncode == 0, init.stderr
    toml = data / "archive.toml"
    text = toml.read_text().replace('url = ""', f'url = "{server.create_database()}"', 1)
    text = re.sub(r"(?m)^ingest_batch_size = \d+", "ingest_batch_size = 4", text)
    toml.write_text(text.replace("# ingest_processes = 2", "ingest_processes = 0"))
    init = run(forks, [*CLI, "--data-dir", str(data), "init"])  # the schema, in PostgreSQL
    assert init.returncode == 0, init.stderr
    return data, write_tree(root / "site", FILES)


def catalog_state(data: Path) -> tuple[list[bool], dict[str, str], dict[str, int]]:
    """(each snapshot: complete?), the complete one's files (path -> sha256), every blob's
    ref_count; and checks that ref counts are exact."""
    with open_storage(load_settings(data, environ={})) as parts, \
            parts.catalog.read_session() as session:
        snapshots = [done is not None for done in session.scalars(select(Snapshot.completed_at))]
        files, blobs = complete_files_and_ref_counts(session)
    parts.catalog.engine.dispose()
    return snapshots, files, blobs


def test_postgres_stopped_mid_ingest_fails_in_one_line_and_a_resume_converges(
        tmp_path: Path, forks: ForkServer) -> None:
    # Commits durable once acknowledged, as a real server's (the kit's default, off, lets an
    # immediate shutdown forget the last ones): what the catalog said stays said.
    server = LocalPostgres(settings=["synchronous_commit=on"]).start()
    try:
        baseline, source = data_dir_on(forks, server, tmp_path / "baseline")
        ingest = ["--data-dir", str(baseline), "ingest", "--url", URL, "wget", str(source)]
        done = run(forks, [*STOPPING, str(server.data_dir), "none", "0", *ingest])
        assert done.returncode == 0, done.stderr
        counted = re.search(r"steps sql=(\d+)", done.stdout)
        assert counted is not None, done.stdout
        expected = catalog_state(baseline)
        assert expected[0] == [True] and len(expected[1]) == len(FILES)
        expected_store = store_files(baseline)

        data, source = data_dir_on(forks, server, tmp_path / "faulted")
        ingest = ["--data-dir", str(data), "ingest", "--url", URL, "wget", str(source)]
        halfway = int(counted.group(1)) // 2  # past the snapshot's creation, batches to go
        failed = run(forks, [*STOPPING, str(server.data_dir), "sql", str(halfway), *ingest])

        assert "(postgres stopped here)" in failed.stdout, failed.stdout
        assert not server.running()
        assert failed.returncode == 2, failed.stdout + failed.stderr
        assert "Traceback" not in failed.stderr, failed.stderr
        errors = [line for line in failed.stderr.splitlines() if "error" in line]
        assert len(errors) == 1, failed.stderr
        assert errors[0].startswith("archive-pipelines: error: catalog"), errors[0]
        assert "server closed the connection" in errors[0], errors[0]
        started = re.search(r"ingest --resume ([0-9a-f-]{36})", failed.stdout)
        assert started is not None, failed.stdout
        assert {rel: (source / rel).read_bytes() for rel in FILES} == FILES  # sources untouched

        server.start()  # the same cluster on the same port, recovered
        settings = load_settings(data, environ={})
        present = recorded_present(settings.catalog_url)
        by_hash = {sha(body): body for body in FILES.values()}
        assert 0 < len(present) < len(by_hash), "the stop fell outside the ingest's batches"
        for digest, size in present.items():
            stored = data / "cas" / "sha256" / digest[:2] / digest[2:4] / digest
            assert stored.read_bytes() == by_hash[digest] and size == len(by_hash[digest])
        check = run(forks, [*CLI, "--data-dir", str(data), "verify", "--deep"])
        assert check.returncode == 1, check.stdout + check.stderr
        assert "incomplete_snapshots   1" in check.stdout, check.stdout
        for kind in ("missing_blob_files", "corrupt_blob_files"):
            assert kind not in check.stdout, check.stdout

        resumed = run(forks, [*CLI, "--data-dir", str(data), "ingest", "--resume", started.group(1)])
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert resumed.stdout.startswith("resuming snapshot "), resumed.stdout
        healthy = run(forks, [*CLI, "--data-dir", str(data), "verify", "--deep"])
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert catalog_state(data) == expected
        assert store_files(data) == expected_store
        assert {rel: (source / rel).read_bytes() for rel in FILES} == FILES
    finally:
        server.stop()
