"""The ArchiveBox 0.7 collection generator, the manifest and the link checker of archive_testkit."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import statistics
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_testkit.archivebox import METHODS_07, Aged07, Collection07, generate_collection
from archive_testkit.links import (
    html_files,
    link_resolves,
    relative_links,
    resolving_links,
    stays_inside,
)
from archive_testkit.manifest import check_manifest, file_sha256, manifest, symlinks

DJANGO_DATETIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Collection07:
    return generate_collection(tmp_path_factory.mktemp("plain") / "data", Aged07(), snapshots=12, seed=1)


@pytest.fixture(scope="module")
def aged(tmp_path_factory: pytest.TempPathFactory) -> Collection07:
    return generate_collection(
        tmp_path_factory.mktemp("aged") / "data", Aged07(orphans=2), snapshots=16, seed=5
    )


def _rows(collection: Collection07, sql: str) -> list[tuple]:
    conn = sqlite3.connect(collection.sqlite_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _columns(collection: Collection07, table: str) -> list[str]:
    return [row[1] for row in _rows(collection, f'PRAGMA table_info("{table}")')]


def _folders(collection: Collection07) -> set[str]:
    return {entry.name for entry in collection.archive_dir.iterdir() if entry.is_dir()}


@pytest.mark.unit
def test_sqlite_has_the_07_tables_and_columns(plain: Collection07) -> None:
    tables = {row[0] for row in _rows(plain, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "core_snapshot",
        "core_tag",
        "core_snapshot_tags",
        "core_archiveresult",
        "django_migrations",
    } <= tables
    assert _columns(plain, "core_snapshot") == ["id", "timestamp", "title", "added", "updated", "url"]
    assert _columns(plain, "core_tag") == ["name", "slug", "id"]
    assert _columns(plain, "core_snapshot_tags") == ["id", "snapshot_id", "tag_id"]
    assert set(_columns(plain, "core_archiveresult")) == {
        "id",
        "uuid",
        "snapshot_id",
        "extractor",
        "cmd",
        "pwd",
        "cmd_version",
        "output",
        "start_ts",
        "end_ts",
        "status",
    }
    last = _rows(plain, "SELECT name FROM django_migrations WHERE app = 'core' ORDER BY id DESC LIMIT 1")
    assert last == [("0022_auto_20231023_2008",)]


@pytest.mark.unit
def test_rows_match_folders_and_results(plain: Collection07) -> None:
    rows = _rows(plain, "SELECT id, timestamp, url, title, added, updated FROM core_snapshot")
    assert len(rows) == len(plain.snapshots) == len(_folders(plain))
    assert {row[1] for row in rows} == _folders(plain)
    by_ts = plain.by_timestamp()
    for snapshot_id, timestamp, url, title, added, updated in rows:
        snapshot = by_ts[timestamp]
        assert len(snapshot_id) == 32 and str(uuid.UUID(hex=snapshot_id)) == snapshot.snapshot_id
        assert (url, title) == (snapshot.url, snapshot.title)
        assert DJANGO_DATETIME.match(added) and DJANGO_DATETIME.match(updated)
        assert datetime.fromisoformat(added).replace(tzinfo=UTC) == snapshot.added
    results = _rows(
        plain, "SELECT id, uuid, extractor, status, output, cmd, start_ts FROM core_archiveresult"
    )
    expected = {r["id"]: r for snapshot in plain.snapshots for r in snapshot.results}
    assert len(results) == len(expected)
    for row_id, row_uuid, extractor, status, output, cmd, start_ts in results:
        result = expected[row_id]
        assert (uuid.UUID(hex=row_uuid), extractor, status, output) == (
            uuid.UUID(result["uuid"]),
            result["extractor"],
            result["status"],
            result["output"],
        )
        assert json.loads(cmd) == result["cmd"]
        assert datetime.fromisoformat(start_ts).replace(tzinfo=UTC) == result["start_ts"]
    statuses = {row[3] for row in results}
    assert {"succeeded", "failed"} <= statuses
    tagged = sum(1 for snapshot in plain.snapshots if snapshot.tags)
    assert 0 < tagged < len(plain.snapshots)
    links = _rows(plain, "SELECT count(*) FROM core_snapshot_tags")[0][0]
    assert links == sum(len(snapshot.tags) for snapshot in plain.snapshots)


@pytest.mark.unit
def test_orphans_repeat_a_url_without_a_row(aged: Collection07) -> None:
    orphans = aged.orphans()
    assert len(orphans) == 2
    indexed = {snapshot.url: snapshot for snapshot in aged.indexed()}
    rows = {row[0] for row in _rows(aged, "SELECT timestamp FROM core_snapshot")}
    assert rows == {snapshot.timestamp for snapshot in aged.indexed()}
    assert len(_folders(aged)) == len(aged.snapshots) == len(rows) + 2
    for orphan in orphans:
        twin = indexed[orphan.url]
        assert orphan.timestamp not in rows and float(orphan.timestamp) < float(twin.timestamp)
        assert all(result["id"] is None for result in orphan.results)


@pytest.mark.unit
def test_index_json_matches_sqlite(aged: Collection07) -> None:
    rows = {row[1]: row for row in _rows(aged, "SELECT id, timestamp, url FROM core_snapshot")}
    for snapshot in aged.snapshots:
        document = json.loads((aged.root / snapshot.folder / "index.json").read_text("utf-8"))
        assert document["schema"] == "Link"
        assert (document["url"], document["timestamp"]) == (snapshot.url, snapshot.timestamp)
        assert document["snapshot_id"] == snapshot.snapshot_id
        if snapshot.in_sqlite:
            row_id, _, url = rows[snapshot.timestamp]
            assert url == document["url"] and uuid.UUID(hex=row_id) == uuid.UUID(document["snapshot_id"])
            assert set(METHODS_07) <= set(document["history"])
        entries = [entry for entries in document["history"].values() for entry in entries]
        assert len(entries) == len(snapshot.results)
        assert {entry["schema"] for entry in entries} == {"ArchiveResult"}
        assert (
            document["tags"] is None
            if not snapshot.tags
            else set(document["tags"].split(",")) == set(snapshot.tags)
        )
        assert document["link_dir"] == f"/data/archive/{snapshot.timestamp}"
        assert document["canonical"]["wget_path"] == snapshot.wget_path
    # Some timestamps are integers, some fractional; two legacy ones are `T` and `T.0`.
    stamps = [snapshot.timestamp for snapshot in aged.snapshots]
    assert any("." not in stamp for stamp in stamps) and any(re.search(r"\.\d{3,}$", s) for s in stamps)
    assert any(f"{stamp}.0" in stamps for stamp in stamps)


@pytest.mark.unit
def test_files_per_snapshot_are_near_the_target(aged: Collection07) -> None:
    on_disk = manifest(aged.root)
    for snapshot in aged.snapshots:
        prefix = snapshot.folder + "/"
        listed = {path[len(prefix) :] for path in on_disk if path.startswith(prefix)}
        assert listed == set(snapshot.files)
    counts = [len(snapshot.files) for snapshot in aged.snapshots if snapshot.wget_path]
    assert abs(statistics.median(counts) - 50) <= 5


@pytest.mark.unit
def test_snapshot_pages_link_to_their_outputs(aged: Collection07) -> None:
    for snapshot in aged.snapshots:
        folder = aged.root / snapshot.folder
        links = relative_links(folder / "index.html")
        good = [link for link in links if link_resolves(folder, "index.html", link)]
        assert len(good) > 10, snapshot.timestamp
        assert "../../index.html" in links  # 0.7 writes no top-level index.html
        assert not link_resolves(folder, "index.html", "../../index.html")
        assert not stays_inside("index.html", "../../index.html")
        assert stays_inside("index.html", "readability/content.html")
        pairs = resolving_links(folder)
        assert ("index.html", "index.json") in pairs
        assert ("index.html", "../../static/archive.png") not in pairs


@pytest.mark.unit
def test_wget_pages_link_each_other_relatively(plain: Collection07) -> None:
    checked = 0
    for snapshot in plain.snapshots:
        if not snapshot.wget_path or not snapshot.wget_path.endswith(".html"):
            continue
        folder = plain.root / snapshot.folder
        page = snapshot.wget_path
        links = relative_links(folder / page)
        css = next(link for link in links if link.endswith("css/site.css"))
        assert link_resolves(folder, page, css) and stays_inside(page, css)
        assert link_resolves(folder, page, "embed/page2.html")
        assert "old-posts/missing-page.html" in links
        assert not link_resolves(folder, page, "old-posts/missing-page.html")
        assert any(" " in link for link in links)  # images/figure%2001.png, unquoted
        assert (page, "embed/page2.html") in resolving_links(folder)
        embed = page.rsplit("/", 1)[0] + "/embed/page2.html"
        assert (embed, "../" + page.rsplit("/", 1)[1]) in resolving_links(folder)
        checked += 1
    assert checked >= 3


@pytest.mark.unit
def test_shared_assets_are_byte_identical_across_snapshots(plain: Collection07) -> None:
    by_host: dict[str, list[str]] = {}
    for snapshot in plain.snapshots:
        if snapshot.wget_path and f"{snapshot.host}/css/site.css" in snapshot.files:
            by_host.setdefault(snapshot.host, []).append(snapshot.folder)
    host, folders = next((host, folders) for host, folders in by_host.items() if len(folders) >= 2)
    for asset in (
        f"{host}/css/site.css",
        f"{host}/static/jquery.min.js",
        "cdn.jsdelivr.net/npm/normalize.css@8.0.1/normalize.css",
    ):
        digests = {file_sha256(plain.root / folder / asset) for folder in folders}
        assert len(digests) == 1, asset
    pages = {file_sha256(plain.root / folder / "index.html") for folder in folders}
    assert len(pages) == len(folders)


@pytest.mark.unit
def test_check_manifest_reports_changed_and_missing_files(tmp_path: Path) -> None:
    collection = generate_collection(tmp_path / "data", Aged07(files_per_snapshot=20), snapshots=3, seed=2)
    before = manifest(collection.root)
    assert before and all(path.startswith("archive/") for path in before)
    assert check_manifest(collection.root, before) == []
    changed, missing, linked = sorted(before)[:3]
    path = collection.root / changed
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    (collection.root / missing).unlink()
    # A file replaced by a symlink to an identical copy elsewhere still reads the same bytes.
    store = tmp_path / "store"
    store.mkdir()
    (store / "blob").write_bytes((collection.root / linked).read_bytes())
    (collection.root / linked).unlink()
    os.symlink(store / "blob", collection.root / linked)
    problems = check_manifest(collection.root, before)
    assert problems == [
        f"changed: {changed} ({before[changed][:12]} -> {file_sha256(path)[:12]})",
        f"missing: {missing}",
    ]
    assert symlinks(collection.root) == {linked: str(store / "blob")}
    assert linked not in manifest(collection.root)


@pytest.mark.unit
def test_same_seed_same_collection(tmp_path: Path) -> None:
    first = generate_collection(tmp_path / "a", Aged07(), snapshots=5, seed=9)
    second = generate_collection(tmp_path / "b", Aged07(), snapshots=5, seed=9)
    assert manifest(first.root) == manifest(second.root)
    dumps = []
    for collection in (first, second):
        conn = sqlite3.connect(collection.sqlite_path)
        try:
            dumps.append(list(conn.iterdump()))
        finally:
            conn.close()
    assert dumps[0] == dumps[1]
    other = generate_collection(tmp_path / "c", Aged07(), snapshots=5, seed=10)
    assert manifest(other.root) != manifest(first.root)


@pytest.mark.unit
def test_without_sqlite_and_index_json(tmp_path: Path) -> None:
    collection = generate_collection(
        tmp_path / "data", Aged07(with_sqlite=False, write_index_json=False), snapshots=4, seed=3
    )
    assert not collection.sqlite_path.exists()
    assert not collection.write_index_json and not collection.with_sqlite
    for snapshot in collection.snapshots:
        folder = collection.root / snapshot.folder
        assert not (folder / "index.json").exists() and (folder / "index.html").is_file()
        assert all(result["id"] is None for result in snapshot.results)
    assert (collection.root / "ArchiveBox.conf").is_file()
    assert any((collection.root / "sources").iterdir()) and any((collection.root / "logs").iterdir())


@pytest.mark.unit
def test_relative_links_keeps_only_relative_paths(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        '<a href="./a.html?x=1#top">a</a><a href="#frag">f</a><a href="https://x.org/">x</a>'
        '<a href="//cdn.x.org/y.js">y</a><a href="mailto:a@b.c">m</a><img src="data:image/png;base64,AA">'
        '<script src="javascript:void(0)"></script><link href="css/s%20p.css" rel="stylesheet">'
        '<iframe src="../up.html"></iframe><source src="media/v.mp4"><a href="/root.html">r</a>'
        '<div href="not-a-link.html"></div><a href="?only-query">q</a><img src="img/a.png"/>',
        "utf-8",
    )
    assert relative_links(page) == ["./a.html", "css/s p.css", "../up.html", "media/v.mp4", "img/a.png"]


@pytest.mark.unit
def test_resolving_links_follow_symlinks_but_resolve_dotdot_textually(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "blobs").mkdir(parents=True)
    (store / "page.html").write_text(
        '<a href="../site.css">c</a><a href="sub/">d</a><a href="gone.html">g</a>'
    )
    (store / "site.css").write_text("store css")  # what a symlink-first resolution would find
    folder = tmp_path / "snap"
    (folder / "host" / "sub").mkdir(parents=True)
    (folder / "host" / "page.html").symlink_to(store / "page.html")
    (folder / "site.css").write_text("folder css")
    os.symlink(folder / "host", folder / "alias")  # a symlinked folder is walked too
    os.symlink(folder, folder / "host" / "loop")  # a cycle is not walked forever
    assert html_files(folder) == ["alias/page.html", "host/page.html"]
    assert resolving_links(folder) == {
        ("host/page.html", "../site.css"),
        ("host/page.html", "sub/"),
        ("alias/page.html", "../site.css"),
        ("alias/page.html", "sub/"),
    }
    assert stays_inside("host/page.html", "../site.css") and not stays_inside("host/page.html", "../../x")
