"""The WARC files both ArchiveBox collection generators leave in `warc/`: valid, and the crawl's."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from urllib.parse import quote

import pytest

from archive_testkit.archivebox import Aged07, Collection07, Manifest, ReleaseMix, generate_collection
from archive_testkit.warc_reading import read_warc, warcio_check

_KINDS_AROUND = ("warcinfo", "metadata", "resource", "resource")


@pytest.fixture(scope="module")
def collection07(tmp_path_factory: pytest.TempPathFactory) -> Collection07:
    return generate_collection(
        tmp_path_factory.mktemp("ab07") / "data", Aged07(orphans=1), snapshots=10, seed=4
    )


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return generate_collection(
        tmp_path_factory.mktemp("legacy"),
        ReleaseMix(
            releases=("0.4", "0.6", "0.7", "0.8", "0.9"),
            files_per_snapshot=12,
            shared_asset_fraction=0.5,
            duplicates=1,
        ),
        snapshots=12,
        seed=6,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.unit
def test_archivebox07_warcs_pass_warcio_check(collection07: Collection07) -> None:
    warcs = sorted(collection07.archive_dir.glob("*/warc/*.warc.gz"))
    with_wget = [s for s in collection07.snapshots if s.wget_path]
    assert len(warcs) == len(with_wget) >= 5
    assert warcio_check(warcs) == 0


@pytest.mark.unit
def test_archivebox07_warc_holds_the_wget_run_of_its_snapshot(collection07: Collection07) -> None:
    checked = 0
    for snapshot in collection07.snapshots:
        if not snapshot.wget_path:
            assert not any(rel.startswith("warc/") for rel in snapshot.files)
            continue
        folder = collection07.root / snapshot.folder
        (warc,) = [rel for rel in snapshot.files if rel.startswith("warc/")]
        records = read_warc((folder / warc).read_bytes())
        kinds = [r.kind for r in records]
        assert (kinds[0], *kinds[-3:]) == _KINDS_AROUND
        assert kinds[1:-3] == ["request", "response"] * ((len(kinds) - 4) // 2)
        history = json.loads((folder / "index.json").read_text())["history"]["wget"]
        run = next(entry for entry in history if entry["status"] == "succeeded")
        # The file is named for the run that wrote it, with the arguments the index records.
        (warc_file,) = [argument for argument in run["cmd"] if argument.startswith("--warc-file=")]
        assert warc_file.endswith(f"/{snapshot.timestamp}/{warc.removesuffix('.warc.gz')}")
        quoted = "".join(f'"{argument}" ' for argument in run["cmd"][1:])
        assert f"wget-arguments: {quoted}\r\n" in records[0].payload.decode()
        assert records[0].payload.startswith(f"software: Wget/{run['cmd_version'].split()[-1]} ".encode())
        responses = [r for r in records if r.kind == "response"]
        assert responses[0].header("WARC-Target-URI") == snapshot.url
        page = folder / snapshot.wget_path
        orig = page.with_name(page.name + ".orig")
        # The server's bytes: the .orig backup where --convert-links rewrote the saved copy.
        assert responses[0].payload == (orig if orig.exists() else page).read_bytes()
        on_disk = {_sha((folder / rel).read_bytes()) for rel in snapshot.files}
        assert all(_sha(r.payload) in on_disk for r in responses)
        started = datetime.fromisoformat(run["start_ts"]).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert records[1].header("WARC-Date") == started
        checked += 1
    assert checked >= 5


@pytest.mark.unit
def test_legacy_warcs_pass_warcio_check_and_record_the_wget_page(legacy: Manifest) -> None:
    warcs = [path for path, f in legacy.files.items() if f.extractor == "warc"]
    assert len(warcs) >= 5
    assert warcio_check([legacy.root / path for path in warcs]) == 0
    for path in warcs:
        folder = path.split("/warc/")[0]
        records = read_warc((legacy.root / path).read_bytes())
        responses = [r for r in records if r.kind == "response"]
        snapshot = next(s for s in legacy.snapshots if s.folder == folder)
        assert responses[0].header("WARC-Target-URI") == quote(snapshot.url, safe=":/")  # as wget sends it
        wget_files = {
            f.sha256
            for rel, f in legacy.files.items()
            if rel.startswith(folder + "/") and f.extractor == "wget"
        }
        # The page and any shared requisites, byte for byte the files wget saved.
        assert {_sha(r.payload) for r in responses} == wget_files
        assert path.removeprefix(folder + "/warc/") == f"{snapshot.timestamp.split('.')[0]}.warc.gz"


@pytest.mark.unit
def test_legacy_duplicates_copy_the_warc_byte_for_byte(legacy: Manifest) -> None:
    (duplicate,) = [s for s in legacy.snapshots if s.duplicate_of]
    mine = [f.sha256 for p, f in legacy.files.items() if p.startswith(duplicate.folder + "/warc/")]
    theirs = [f.sha256 for p, f in legacy.files.items() if p.startswith(f"{duplicate.duplicate_of}/warc/")]
    assert mine == theirs and len(mine) == 1
