"""Aliases with the file's extension: a data dir whose links and aliases an earlier version
made (plain aliases only) is upgraded by `rebuild-views` or `verify --fix`, nothing lost;
gc removes every alias of a blob."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.removal import delete_snapshot
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views
from archive_pipelines.views.paths import alias_extension
from tests.helpers.storage import add_snapshot, sha, write_tree

pytestmark = pytest.mark.unit

PAGE = b"<html><title>archived</title></html>"
FILES = {"index.html": PAGE, "copy.HTM": PAGE, "app.js": b"js", "LICENSE": b"MIT",
         "data/page.php": b"<p>php</p>"}


def _ingested(storage: StorageParts, tmp_path: Path) -> str:
    sid = add_snapshot(storage)
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                     snapshot_id=sid, extractor="wget", directory=write_tree(tmp_path / "src", FILES),
                     hardlink=False)
    return sid


def _file_links(storage: StorageParts) -> dict[str, str]:
    return dict(storage.views.farm.iter_links("by_timestamp"))


def _as_the_previous_version_made_it(storage: StorageParts) -> int:
    """Every file link points at its blob's plain alias, and no alias has an extension.
    Returns how many links had an extension."""
    farm = storage.views.farm
    changed = 0
    for link, target in _file_links(storage).items():
        ext = alias_extension(link)
        if ext:
            os.unlink(farm.archive_root / link)
            os.symlink(target.removesuffix(ext), farm.archive_root / link)
            changed += 1
    for name in {sha(data) for data in FILES.values()}:
        for ext in farm.aliases.extensions(name):
            if ext:
                os.unlink(farm.aliases.path(name, ext))
    return changed


def _blob_files(storage: StorageParts) -> dict[str, tuple[int, bytes]]:
    store = storage.primary.store
    return {name: (os.stat(store.local_path(name)).st_ino, store.local_path(name).read_bytes())
            for name in {sha(data) for data in FILES.values()}}


def test_new_links_point_at_aliases_with_their_extension(sqlite_storage: StorageParts,
                                                         tmp_path: Path) -> None:
    _ingested(sqlite_storage, tmp_path)
    farm = sqlite_storage.views.farm
    folder = farm.archive_root / "by_timestamp" / "1735142400.1" / "wget"
    assert os.path.realpath(folder / "index.html") == farm.aliases.path(sha(PAGE), ".html")
    assert os.path.realpath(folder / "copy.HTM") == farm.aliases.path(sha(PAGE), ".htm")
    assert os.path.realpath(folder / "LICENSE") == farm.aliases.path(sha(b"MIT"))
    assert os.path.realpath(folder / "data" / "page.php") == farm.aliases.path(sha(b"<p>php</p>"))
    # One blob shown under two extensions: its plain alias and one per extension.
    assert farm.aliases.extensions(sha(PAGE)) == ["", ".html", ".htm"]
    assert verify_storage(sqlite_storage.catalog, sqlite_storage.primary,
                          sqlite_storage.views).problems == 0


@pytest.mark.parametrize("repair", ["rebuild-views", "verify --fix"])
def test_a_data_dir_of_the_previous_version_is_upgraded(sqlite_storage: StorageParts,
                                                        tmp_path: Path, repair: str) -> None:
    storage = sqlite_storage
    _ingested(storage, tmp_path)
    before = _blob_files(storage)
    assert _as_the_previous_version_made_it(storage) == 3  # index.html, copy.HTM, app.js
    archive = storage.views.farm.archive_root
    shown = {link: (archive / link).read_bytes() for link in _file_links(storage)}
    assert shown[next(link for link in shown if link.endswith("index.html"))] == PAGE

    found = verify_storage(storage.catalog, storage.primary, storage.views)
    assert found.found["wrong_links"] == 3 and found.problems == 3
    assert found.found["missing_aliases"] == 0  # the plain ones are all there

    if repair == "rebuild-views":
        rebuilt = rebuild_views(storage.catalog, storage.primary, storage.views, work=storage.work)
        assert rebuilt.links_fixed == 3
    else:
        fixed = verify_storage(storage.catalog, storage.primary, storage.views, fix=True)
        assert fixed.fixed["wrong_links"] == 3 and fixed.problems == 0

    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
    aliases = storage.views.farm.aliases
    for link, data in shown.items():
        assert os.path.realpath(archive / link) == aliases.path(sha(data), alias_extension(link))
        assert (archive / link).read_bytes() == data
    assert aliases.extensions(sha(PAGE)) == ["", ".html", ".htm"]
    assert _blob_files(storage) == before  # the same files, the same bytes


def test_gc_removes_every_alias_of_a_blob_and_frees_its_bytes(sqlite_storage: StorageParts,
                                                             tmp_path: Path) -> None:
    storage = sqlite_storage
    sid = _ingested(storage, tmp_path)
    blob = storage.primary.store.local_path(sha(PAGE))
    assert os.stat(blob).st_nlink == 4  # the store's name, the plain, .html and .htm aliases
    delete_snapshot(storage.catalog, storage.views, sid)
    dry = collect_garbage(storage.catalog, storage.primary, storage.views.farm,
                          layout=storage.layout, grace_hours=0, dry_run=True)
    done = collect_garbage(storage.catalog, storage.primary, storage.views.farm,
                           layout=storage.layout, grace_hours=0)
    total = sum(len(data) for data in {sha(d): d for d in FILES.values()}.values())
    assert (dry.removed, dry.bytes_freed, dry.blobs.held) == (4, total, 0)
    assert (done.removed, done.bytes_freed, done.blobs.held) == (4, total, 0)
    assert not blob.exists()
    assert all(storage.views.farm.aliases.extensions(sha(data)) == [] for data in FILES.values())
    assert list(storage.views.farm.aliases) == []
