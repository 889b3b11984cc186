import os
from pathlib import Path

import pytest

from archive_pipelines.views import ViewFarm

pytestmark = pytest.mark.unit

SNAPSHOT = "by_domain/example.com/20241225/sid"
TARGET = "../../../by_timestamp/1.0"


def farm_with_files(tmp_path: Path) -> ViewFarm:
    farm = ViewFarm(tmp_path / "archive", tmp_path / "cas")
    (tmp_path / "archive" / "by_timestamp" / "1.0" / "wget").mkdir(parents=True)
    (tmp_path / "archive" / "by_timestamp" / "1.0" / "wget" / "index.html").write_text("hi")
    return farm


def test_a_folder_link_is_created_checked_and_repointed(tmp_path: Path) -> None:
    farm = farm_with_files(tmp_path)
    assert farm.inspect_target(SNAPSHOT, TARGET).status == "missing"
    assert farm.ensure_folder_link(SNAPSHOT, TARGET) == "created"
    assert farm.ensure_folder_link(SNAPSHOT, TARGET) == "ok"
    assert (farm.archive_root / SNAPSHOT / "wget" / "index.html").read_text() == "hi"
    assert farm.inspect_target(SNAPSHOT, TARGET).status == "ok"
    assert farm.inspect_target(SNAPSHOT, "../../../by_timestamp/2.0").status == "wrong"
    assert farm.ensure_folder_link(SNAPSHOT, "../../../by_timestamp/2.0") == "fixed"
    assert farm.inspect_target(SNAPSHOT, "../../../by_timestamp/2.0").status == "broken"


def test_an_earlier_per_file_folder_is_replaced_by_the_folder_link(tmp_path: Path) -> None:
    farm = farm_with_files(tmp_path)
    old = farm.archive_root / SNAPSHOT / "wget" / "css"
    old.mkdir(parents=True)
    os.symlink("../../../../../.s/ab/whatever", old / "site.css")
    os.symlink("nowhere", old.parent / "index.html")
    assert farm.inspect_target(SNAPSHOT, TARGET).status == "conflict"
    assert farm.ensure_folder_link(SNAPSHOT, TARGET) == "created"
    assert os.readlink(farm.archive_root / SNAPSHOT) == TARGET


def test_a_folder_holding_a_real_file_is_never_replaced(tmp_path: Path) -> None:
    farm = farm_with_files(tmp_path)
    mine = farm.archive_root / SNAPSHOT / "wget" / "notes.txt"
    mine.parent.mkdir(parents=True)
    os.symlink("nowhere", mine.parent / "index.html")
    mine.write_text("user data")
    assert farm.ensure_folder_link(SNAPSHOT, TARGET) == "conflict"
    assert mine.read_text() == "user data" and (mine.parent / "index.html").is_symlink()
