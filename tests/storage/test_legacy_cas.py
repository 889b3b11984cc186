"""`migrate_to_cas`: the fs_version it writes, and a top-level `index/` folder."""

from __future__ import annotations

import json
import os

from sqlalchemy import select

from archive_pipelines.catalog.files import snapshot_file_rows
from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.legacy.versions import FS_VERSIONS
from archive_pipelines.migration import migrate_snapshot
from archive_pipelines.storage import Storage
from archive_pipelines.storage.legacy_cas import migrate_to_cas
from tests.legacy.index_docs import v04
from tests.storage.conftest import sha, write_tree

TS = "1600000000"
FOLDER = {  # organized, as migrate_to_cas expects; wget saved a path `index/` too
    "index.json": json.dumps(v04(url="https://example.com/", timestamp=TS)).encode(),
    "index.html": b"<html>ArchiveBox's index</html>",
    "dom/output.html": b"<html>dom</html>",
    "index/index.html": b"<html>the site's index/ page</html>",
}
ROWS = {
    "index/index.json": sha(FOLDER["index.json"]),
    "index/index.html": sha(FOLDER["index.html"]),
    "dom/output.html": sha(FOLDER["dom/output.html"]),
    "unknown/index/index.html": sha(FOLDER["index/index.html"]),
}


def only_snapshot(storage: Storage) -> Snapshot:
    with storage.session() as session:
        (snapshot,) = session.scalars(select(Snapshot)).all()
        return snapshot


def rows_of(storage: Storage, sid: str) -> dict[str, str]:
    with storage.session() as session:
        return {f"{r[2]}/{r[3]}": r[4] for r in snapshot_file_rows(session, sid)}


def test_without_cleanup_the_label_is_the_folders_version_and_the_chain_finishes(
        sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    folder = write_tree(storage.layout.archive / TS, FOLDER)

    report = migrate_to_cas(storage)

    snapshot = only_snapshot(storage)
    assert report.errors == [] and report.created_snapshots == 1
    assert snapshot.fs_version in FS_VERSIONS and snapshot.fs_version == "0.4"  # not "legacy"
    assert rows_of(storage, snapshot.id) == ROWS  # no name taken twice, nothing overwritten
    assert folder.is_dir() and not folder.is_symlink()  # not cleaned up: not `cas` yet
    step = migrate_snapshot(storage, snapshot.id)  # the lazy migration finishes the job
    assert (step.to_version, step.errors) == ("cas", [])
    assert rows_of(storage, snapshot.id) == ROWS  # the same names: no duplicate rows
    assert os.readlink(folder) == f"by_timestamp/{TS}"


def test_with_cleanup_the_label_is_cas_and_the_folder_a_link(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    folder = write_tree(storage.layout.archive / TS, FOLDER)

    report = migrate_to_cas(storage, cleanup_legacy=True)

    snapshot = only_snapshot(storage)
    assert (report.errors, report.cleaned_folders) == ([], 1)
    assert snapshot.fs_version == "cas"
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    assert (folder / "unknown" / "index" / "index.html").read_bytes() == FOLDER["index/index.html"]
    assert (folder / "index" / "index.html").read_bytes() == FOLDER["index.html"]
