"""`update` accounts for every entry of archive/ and says what failed; `show` finds a snapshot
by its ArchiveBox id."""

from __future__ import annotations

import json
import os
from pathlib import Path

from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.cli import run_cli
from tests.legacy.index_docs import v04


def _collection(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    generate_collection(data, ReleaseMix(releases=("0.4", "0.8")), snapshots=4, seed=11)
    archive = data / "archive"
    dot = archive / "..foo"  # a dot-name folder: never skipped silently
    dot.mkdir()
    (dot / "index.json").write_text(json.dumps(v04()))
    (archive / "stray.txt").write_text("a file where snapshot folders are")
    (archive / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    good = sorted(p for p in archive.iterdir() if p.name[0].isdigit())[0]
    (good / "latest.html").symlink_to("index.html")  # a symlink inside: kept, migrates
    os.mkfifo(sorted(p for p in archive.iterdir() if p.name[0].isdigit())[1] / "pipe")
    return data


def test_update_lists_every_failure_and_exits_non_zero(tmp_path: Path) -> None:
    data = _collection(tmp_path)

    result = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")

    assert result.returncode == 1, result.stderr
    assert "archive/..foo: bad_folder_name (folder name is not a timestamp); moved to invalid/" \
        in result.stdout  # accounted for, with the reason
    assert list((data / "invalid").glob("*/..foo"))
    assert "archive/stray.txt: a file; not a snapshot folder" in result.stderr
    assert "archive/elsewhere: a symlink to" in result.stderr
    assert "pipe: FIFO" in result.stderr  # the snapshot with a FIFO, by folder, with why
    assert "Traceback" not in result.stderr


def test_update_json_report(tmp_path: Path) -> None:
    data = _collection(tmp_path)

    result = run_cli("--data-dir", str(data), "update", "--json")

    assert result.returncode == 1
    report = json.loads(result.stdout)
    where = {failure["where"].split(" ")[0] for failure in report["failures"]}
    assert {"archive/stray.txt", "archive/elsewhere"} <= where
    assert any("FIFO" in failure["reason"] for failure in report["failures"])
    assert [m["where"] for m in report["moved_to_invalid"]] == ["archive/..foo"]
    assert report["migrate"]["migrated"] == 3 and report["migrate"]["failed"] == 1
    assert report["import"]["imported"] == 4


def test_show_finds_a_snapshot_by_its_archivebox_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    manifest = generate_collection(data, ReleaseMix(releases=("0.8",), with_sqlite=True), snapshots=3, seed=2)
    assert run_cli("--data-dir", str(data), "update").returncode == 0
    entry = manifest.snapshots[0]
    index = json.loads((data / entry.folder / "index.json").read_text())
    abx_id = index.get("snapshot_id") or index["id"]

    for ref in (abx_id, abx_id.replace("-", "").upper(), entry.folder.split("/")[1]):
        shown = run_cli("--data-dir", str(data), "show", "--json", ref)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["id"] == abx_id
    missing = run_cli("--data-dir", str(data), "show", "00000000-0000-0000-0000-000000000000")
    assert missing.returncode == 1 and "no snapshot" in missing.stderr
