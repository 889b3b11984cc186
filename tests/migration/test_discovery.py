"""import_orphans on generated legacy collections: every fingerprint, reconcile, invalid/, resume."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.migration import discovery as discovery_module
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.folders import invalid_day
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.migration import ALL_RELEASES, snapshots, tree_hashes
from tests.legacy.index_docs import result, v04

URL = "https://example.com/post"


def test_every_fingerprint_is_adopted_with_its_version(storage: StorageParts) -> None:
    root = storage.settings.data_dir
    manifest = generate_collection(root, ReleaseMix(releases=ALL_RELEASES), snapshots=16, seed=3)
    before = tree_hashes(root / "archive")

    report = import_orphans(storage.catalog, storage.layout)

    assert (report.processed, report.imported, report.invalid, report.error_count) == (16, 16, 0, 0)
    found = snapshots(storage)
    for entry in manifest.snapshots:
        snapshot = found[entry.folder.split("/")[1]]
        assert snapshot.url == entry.url
        assert snapshot.fs_version == entry.fs_version
        assert snapshot.title == entry.title
        assert sorted(tag.name for tag in snapshot.tags) == sorted(entry.tags)
        assert Catalog(storage.catalog.engine).snapshots.results_for(snapshot.id)
    assert {s.fs_version for s in found.values()} == {"0.4", "0.6", "0.8", "0.8.3", "0.9"}
    # The import only reads the folders.
    assert tree_hashes(root / "archive") == before

    again = import_orphans(storage.catalog, storage.layout)
    assert (again.processed, again.imported, again.reconciled) == (16, 0, 16)
    assert len(snapshots(storage)) == 16
    assert tree_hashes(root / "archive") == before


def test_reconcile_merges_into_the_catalog_and_never_writes_index_json(storage: StorageParts) -> None:
    repo = Catalog(storage.catalog.engine)
    ts = "1593690397"
    folder = storage.layout.archive / ts
    doc = v04(title="A much longer title from index.json", tags="news,python", custom_key=[1, 2])
    doc["history"]["screenshot"] = [result("screenshot.png", start_ts="2020-07-02T11:48:00")]
    folder.mkdir()
    (folder / "index.json").write_text(json.dumps(doc))
    original = (folder / "index.json").read_bytes()
    snapshot = repo.snapshots.add_snapshot(url=URL, timestamp=ts, title="Short", tags=["news",
                                                                                       "catalog-only"],
                                 fs_version="0.4")
    # The catalog already has the dom run (same start time) with another status: catalog wins.
    dom_start = datetime(2020, 7, 2, 11, 46, 37, 906467, tzinfo=UTC)
    repo.snapshots.add_result(snapshot.id, extractor="dom", status="failed", output="output.html",
                    start_ts=dom_start)
    repo.snapshots.add_result(snapshot.id, extractor="pdf", output="output.pdf",
                    start_ts=datetime(2020, 7, 2, 11, 50, tzinfo=UTC))

    report = import_orphans(storage.catalog, storage.layout)

    assert (report.reconciled, report.imported) == (1, 0)
    merged = snapshots(storage)[ts]
    assert merged.id == snapshot.id
    assert merged.title == "A much longer title from index.json"
    assert sorted(t.name for t in merged.tags) == ["catalog-only", "news", "python"]
    results = {(r.extractor, r.status) for r in repo.snapshots.results_for(snapshot.id)}
    assert results == {("dom", "failed"), ("pdf", "succeeded"), ("title", "succeeded"),
                       ("screenshot", "succeeded")}
    # The reconciled values live in the catalog; the original index.json is never touched.
    assert (folder / "index.json").read_bytes() == original
    assert list(folder.iterdir()) == [folder / "index.json"]
    # Converged: a second pass changes nothing.
    again = import_orphans(storage.catalog, storage.layout)
    assert again.reconciled == 1
    assert len(repo.snapshots.results_for(snapshot.id)) == 4
    assert (folder / "index.json").read_bytes() == original


def test_missing_index_json_is_adopted_from_index_sqlite3_else_moved_to_invalid(
        storage: StorageParts) -> None:
    root = storage.settings.data_dir
    manifest = generate_collection(root, ReleaseMix(releases=("0.6", "0.8"), broken=3, with_sqlite=True),
                                   snapshots=60, seed=5)
    # One snapshot only index.sqlite3 knows: its folder is gone altogether.
    gone = next(s for s in manifest.snapshots if s.in_sqlite and s.has_index)
    aside = root.parent / "aside"
    shutil.move(root / gone.folder, aside)
    sqlite_before = (root / "index.sqlite3").read_bytes()
    broken = [s for s in manifest.snapshots if s.broken]

    report = import_orphans(storage.catalog, storage.layout)

    found = snapshots(storage)
    assert report.invalid == len(broken) == 3
    assert report.sqlite_only == 1
    assert found[gone.timestamp].fs_version == "0.x"
    assert found[gone.timestamp].title == gone.title
    for entry in (s for s in manifest.snapshots if not s.has_index and not s.broken):
        name = entry.folder.split("/")[1]
        assert found[name].fs_version == "0.4"
        assert found[name].url == entry.url
        assert not (root / entry.folder / "index.json").exists()  # nothing written into it
    day = root / "invalid" / invalid_day()
    for entry in broken:
        name = entry.folder.split("/")[1]
        assert name not in found
        assert not (root / entry.folder).exists()
        moved = {rel: f for rel, f in manifest.files.items() if rel.startswith(entry.folder + "/")}
        assert moved
        for rel, expected in moved.items():
            assert tree_hashes(day / name)[rel.split("/", 2)[2]] == expected.sha256  # nothing deleted
    assert (root / "index.sqlite3").read_bytes() == sqlite_before  # read-only, never modified
    # The folder turns up again: the 0.x record gets it, and its version.
    shutil.move(aside, root / gone.folder)
    assert import_orphans(storage.catalog, storage.layout).imported == 0
    back = snapshots(storage)[gone.timestamp]
    assert (back.id, back.fs_version) == (found[gone.timestamp].id, gone.fs_version)


def _folder(archive: Path, name: str, content: object, files: dict[str, bytes] | None = None) -> Path:
    folder = archive / name
    folder.mkdir()
    if content is not None:
        data = content if isinstance(content, bytes) else json.dumps(content).encode()
        (folder / "index.json").write_bytes(data)
    for rel, body in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(body)
    return folder


HOSTILE: dict[str, tuple[object, str | None]] = {
    # name: (index.json content, None if adopted else the reason it goes to invalid/)
    "1600000001": ([v04()], "not_object"),
    "1600000002": (json.dumps(v04()).encode()[:100], "not_json"),
    "1600000003": (b"[" * 100_000 + b"]" * 100_000, "not_json"),  # nesting deeper than the parser
    "1600000004": (v04(url="javascript:alert(1)"), "bad_url"),
    "1600000005": (v04(url=""), "bad_url"),
    "1600000006": (v04(url=12345), "bad_url"),
    "1600000007": (v04(timestamp={"x": 1}, title=["not", "text"], tags={"a": 1}, history=[1, 2]), None),
    "1600000008": (v04(history={"dom": [result("../../../../etc/passwd")],
                                "wget": [result("/etc/shadow")],
                                "../escape": [result("x")]}), None),
    "1600000009": (v04(title="nul\u0000 and \ud800 lone surrogate", tags="ok,\u0000bad"), None),
    "1600000010": (v04(url="https://example.com/" + "a" * 40_000), "bad_url"),
}


def test_hostile_index_json_is_adopted_safely_or_moved(storage: StorageParts) -> None:
    archive = storage.layout.archive
    for name, (content, _reason) in HOSTILE.items():
        _folder(archive, name, content, {"output.html": b"<html>" + name.encode()})
    huge = _folder(archive, "1600000011", None, {"output.html": b"x"})
    with open(huge / "index.json", "wb") as handle:
        handle.truncate(33 * 1024 * 1024)  # sparse, over the 32 MiB limit
    _folder(archive, "not-a-timestamp", v04())
    (archive / "1600000012").symlink_to("/etc", target_is_directory=True)  # never followed
    before = tree_hashes(archive)

    report = import_orphans(storage.catalog, storage.layout)

    found = snapshots(storage)
    adopted = {name for name, (_c, reason) in HOSTILE.items() if reason is None}
    assert set(found) == adopted
    assert report.invalid == len(HOSTILE) - len(adopted) + 2  # + huge, + not-a-timestamp
    assert (archive / "1600000012").is_symlink() and "1600000012" not in found
    assert found["1600000009"].title == "nul and ? lone surrogate"
    assert sorted(t.name for t in found["1600000009"].tags) == ["bad", "ok"]  # NUL dropped
    assert found["1600000007"].title is None
    assert any(w.startswith("1600000007: timestamp") for w in report.warnings)  # repaired, reported
    repo = Catalog(storage.catalog.engine)
    outputs = {r.extractor: r.output for r in repo.snapshots.results_for(found["1600000008"].id)}
    assert outputs == {"dom": None, "wget": None}  # unsafe paths dropped, never followed
    # Nothing deleted: every file is where it was or under invalid/.
    after = tree_hashes(archive) | {
        str(p.relative_to(storage.layout.invalid / invalid_day())): h
        for p, h in ((storage.layout.invalid / invalid_day() / k, v)
                     for k, v in tree_hashes(storage.layout.invalid / invalid_day()).items())}
    for rel, digest in before.items():
        assert after.get(rel) == digest, rel  # index.json included: nothing is rewritten
    assert (archive / "1600000008").is_dir()  # the adopted folder is still a folder


@pytest.mark.unit
def test_name_collisions_in_invalid_get_a_suffix(sqlite_storage: StorageParts) -> None:
    archive = sqlite_storage.layout.archive
    for round_ in range(3):
        _folder(archive, "1600000100", b"{broken", {"file.txt": f"round {round_}".encode()})
        assert import_orphans(sqlite_storage.catalog, sqlite_storage.layout).invalid == 1
    day = sqlite_storage.layout.invalid / invalid_day()
    names = sorted(p.name for p in day.iterdir())
    assert names == ["1600000100", "1600000100_1", "1600000100_2"]
    reasons = day.with_name(day.name + ".reasons.txt").read_text().splitlines()
    assert [line.split("\t")[0] for line in reasons] == names
    assert all("not_json" in line for line in reasons)
    assert sorted((day / n / "file.txt").read_text() for n in names) == ["round 0", "round 1", "round 2"]


@pytest.mark.unit
def test_a_folder_the_catalog_knows_is_never_moved_even_if_its_index_is_gone(
        sqlite_storage: StorageParts) -> None:
    Catalog(sqlite_storage.catalog.engine).snapshots.add_snapshot(url=URL, timestamp="1600000200",
                                                                  fs_version="0.4")
    folder = _folder(sqlite_storage.layout.archive, "1600000200", None, {"output.html": b"x"})
    report = import_orphans(sqlite_storage.catalog, sqlite_storage.layout)
    assert (report.invalid, report.skipped) == (0, 1)
    assert (folder / "output.html").read_bytes() == b"x"


@pytest.mark.unit
def test_duplicate_folders_become_their_own_snapshots(sqlite_storage: StorageParts) -> None:
    root = sqlite_storage.settings.data_dir
    manifest = generate_collection(root, ReleaseMix(releases=("0.7", "0.9"), duplicates=6),
                                   snapshots=30, seed=11)
    report = import_orphans(sqlite_storage.catalog, sqlite_storage.layout)
    found = snapshots(sqlite_storage)
    copies = [s for s in manifest.snapshots if s.duplicate_of]
    assert report.imported == len(found) == len(manifest.snapshots)
    for copy in copies:
        name = copy.folder.split("/")[1]
        assert found[name].url == copy.url
    # Each pair is counted once, on the second folder (name order), when it is recognisable:
    # by crawl id (0.9), or by an index.json timestamp naming the folder adopted first.
    expected = sum(1 for c in copies
                   if c.release == "0.9" or c.duplicate_of.split("/")[1] < c.folder.split("/")[1])
    assert report.duplicates == expected > 0


@pytest.mark.unit
def test_resume_from_and_batches(sqlite_storage: StorageParts, monkeypatch: pytest.MonkeyPatch) -> None:
    root = sqlite_storage.settings.data_dir
    generate_collection(root, ReleaseMix(), snapshots=20, seed=2)
    names = sorted(p.name for p in sqlite_storage.layout.archive.iterdir())
    middle = names[12]
    seen: list[str] = []

    report = import_orphans(sqlite_storage.catalog, sqlite_storage.layout,
                            resume_from=middle, batch_size=3, progress=seen.append)

    assert seen == names[12:]
    assert (report.processed, report.imported, report.last_timestamp) == (8, 8, names[-1])
    assert set(snapshots(sqlite_storage)) == set(names[12:])
    # One bad record fails alone; the rest of its batch is still adopted.
    real = discovery_module.adopt_batch

    def failing(session, records, *, created_by):  # type: ignore[no-untyped-def]
        if any(r.timestamp == names[4] for r in records):
            raise RuntimeError("simulated catalog failure")
        return real(session, records, created_by=created_by)

    monkeypatch.setattr(discovery_module, "adopt_batch", failing)
    second = import_orphans(sqlite_storage.catalog, sqlite_storage.layout, batch_size=5)
    assert second.error_count == 1 and names[4] in second.errors[0]
    assert set(snapshots(sqlite_storage)) == set(names) - {names[4]}
