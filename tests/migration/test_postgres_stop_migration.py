"""PostgreSQL stops mid-migration (issue 18): `update --import-orphans --migrate-fs` adopts
an ArchiveBox 0.7 collection into a PostgreSQL catalog, and the server is shut down
(immediate, as a crash) just before the migration records its second batch of snapshot
files: a step counted, so the fault lands at the same point every run.

`update` fails with exit status 2 and one line naming the catalog's lost connection, no
traceback. ArchiveBox's files are untouched: every original path opens the same bytes and
index.sqlite3, sources/, ArchiveBox.conf and logs/ are byte-identical. Once PostgreSQL is
back (same port and data folder, recovered), every blob the catalog records present is on
disk with its bytes, and the same command again ends as an uninterrupted adoption of the
same collection: the same snapshots, files, blobs and store, `verify --deep` healthy.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotFile
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.archivebox import Aged07, generate_collection
from archive_testkit.forkserver import ForkServer
from archive_testkit.manifest import check_manifest, manifest
from archive_testkit.servers import LocalPostgres
from tests.forked_runs import run
from tests.helpers.ingest_crashes import store_files
from tests.helpers.migration import top_level_files
from tests.helpers.storage import recorded_present

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

ROOT = Path(__file__).resolve().parents[2]
STOPPING = [sys.executable, "-m", "tests.storage.stop_postgres_cli"]
CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]
UPDATE = ["update", "--import-orphans", "--migrate-fs", "--batch-size", "2"]
SNAPSHOTS = 6


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The module's `python -m` runs, each a fork of one process that imported the app once."""
    with ForkServer(preload=["tests.storage.stop_postgres_cli", "archive_pipelines.cli.*"],
                    cwd=ROOT) as server:
        yield server


def collection_on(forks: ForkServer, server: LocalPostgres, root: Path) -> Path:
    """The same ArchiveBox 0.7 collection each time, initialized with its catalog in a new
    database of `server`; no worker processes (the counted steps are the command's)."""
    data = root / "data"
    generate_collection(data, Aged07(files_per_snapshot=10), snapshots=SNAPSHOTS, seed=11)
    (data / "archive.toml").write_text(f'[catalog]\nurl = "{server.create_database()}"\n'
                                       "[storage]\ningest_processes = 0\n")
    init = run(forks, [*CLI, "--data-dir", str(data), "init"])
    assert init.returncode == 0, init.stdout + init.stderr
    return data


def catalog_state(data: Path) -> tuple[dict[str, str], dict[tuple[str, str], str],
                                       dict[str, int]]:
    """Each snapshot's fs_version (by timestamp), every recorded file's sha256 (by timestamp
    and path), every blob's ref_count."""
    with open_storage(load_settings(data, environ={})) as parts, \
            parts.catalog.read_session() as session:
        versions = dict(session.execute(select(Snapshot.timestamp, Snapshot.fs_version)).all())
        files = {(ts, rel): digest for ts, rel, digest in session.execute(
            select(Snapshot.timestamp, SnapshotFile.relative_path, Blob.sha256)
            .join(SnapshotFile, SnapshotFile.snapshot_id == Snapshot.id)
            .join(Blob, Blob.id == SnapshotFile.blob_id))}
        blobs = dict(session.execute(select(Blob.sha256, Blob.ref_count)).all())
    parts.catalog.engine.dispose()
    return versions, files, blobs


def test_postgres_stopped_mid_migration_fails_in_one_line_and_the_same_command_converges(
        tmp_path: Path, forks: ForkServer) -> None:
    # Commits durable once acknowledged, as a real server's (the kit's default, off, lets an
    # immediate shutdown forget the last ones): what the catalog said stays said.
    server = LocalPostgres(settings=["synchronous_commit=on"]).start()
    try:
        baseline = collection_on(forks, server, tmp_path / "baseline")
        done = run(forks, [*CLI, "--data-dir", str(baseline), *UPDATE])
        assert done.returncode == 0, done.stdout + done.stderr
        expected = catalog_state(baseline)
        assert set(expected[0].values()) == {"cas"} and len(expected[0]) == SNAPSHOTS
        expected_store = store_files(baseline)

        data = collection_on(forks, server, tmp_path / "faulted")
        originals = manifest(data, "archive")
        collection_files = top_level_files(data)
        failed = run(forks, [*STOPPING, str(server.data_dir), "sql:INSERT INTO snapshot_file", "2",
                      "--data-dir", str(data), *UPDATE])

        assert "(postgres stopped here)" in failed.stdout, failed.stdout
        assert not server.running()
        assert failed.returncode == 2, failed.stdout + failed.stderr
        assert "Traceback" not in failed.stderr, failed.stderr
        errors = [line for line in failed.stderr.splitlines() if "error" in line]
        assert len(errors) == 1, failed.stderr
        assert errors[0].startswith("archive-pipelines: error: catalog error: "), errors[0]
        assert "server closed the connection" in errors[0], errors[0]
        # ArchiveBox's files are sacred: every original path opens the same bytes.
        assert check_manifest(data, originals) == []
        assert top_level_files(data) == collection_files

        server.start()  # the same cluster on the same port, recovered
        versions, _files, _blobs = catalog_state(data)
        assert len(versions) == SNAPSHOTS  # imported, then stopped while migrating
        assert 0 < list(versions.values()).count("cas") < SNAPSHOTS, versions
        present = recorded_present(load_settings(data, environ={}).catalog_url)
        assert present
        for digest, size in present.items():
            stored = data / "cas" / "sha256" / digest[:2] / digest[2:4] / digest
            assert sha256_file(stored) == (digest, size), digest
        check = run(forks, [*CLI, "--data-dir", str(data), "verify", "--deep"])
        for kind in ("missing_blob_files", "corrupt_blob_files"):
            assert kind not in check.stdout, check.stdout

        again = run(forks, [*CLI, "--data-dir", str(data), *UPDATE])
        assert again.returncode == 0, again.stdout + again.stderr
        healthy = run(forks, [*CLI, "--data-dir", str(data), "verify", "--deep"])
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert catalog_state(data) == expected
        assert store_files(data) == expected_store
        assert check_manifest(data, originals) == []
        assert top_level_files(data) == collection_files
    finally:
        server.stop()
