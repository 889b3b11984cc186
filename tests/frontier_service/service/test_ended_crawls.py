"""A finished crawl's frontier folder is removed: renamed first, so that a crash in between
leaves a folder the next serve deletes, never a half-deleted one under the crawl's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_service.service.ended_crawls import remove_crawl_folder, remove_leftovers

pytestmark = pytest.mark.unit  # files only: no server, no process


def _crawl(crawls: Path, crawl_id: str) -> Path:
    folder = crawls / crawl_id / "frontiers" / "ab"
    folder.mkdir(parents=True)
    (folder / "a.test.frontier").write_bytes(b"x" * 10_000)
    (folder / "a.test.frontier.seen").write_bytes(b"y" * 16)
    return crawls / crawl_id


def test_a_crawl_folder_is_removed_and_counted(tmp_path: Path) -> None:
    crawls = tmp_path / "crawls"
    _crawl(crawls, "docs-1")
    kept = _crawl(crawls, "docs-2")
    removed = remove_crawl_folder(crawls, "docs-1")
    assert removed is not None and removed.files == 2 and removed.bytes >= 10_000
    assert sorted(p.name for p in crawls.iterdir()) == ["docs-2"]
    assert (kept / "frontiers" / "ab" / "a.test.frontier").stat().st_size == 10_000
    assert remove_crawl_folder(crawls, "docs-1") is None  # gone already


def test_names_outside_the_crawls_folder_are_refused(tmp_path: Path) -> None:
    crawls = tmp_path / "crawls"
    _crawl(crawls, "docs-1")
    (tmp_path / "keep").mkdir()
    for name in ("", "..", "../keep", ".ended-docs-1", "docs-1/frontiers"):
        assert remove_crawl_folder(crawls, name) is None
    assert (tmp_path / "keep").is_dir() and (crawls / "docs-1").is_dir()


def test_a_crash_between_rename_and_delete_is_finished_by_the_next_start(tmp_path: Path) -> None:
    crawls = tmp_path / "crawls"
    _crawl(crawls, "docs-1").rename(crawls / ".ended-docs-1")  # where the crash left it
    _crawl(crawls, "docs-2")
    assert remove_leftovers(crawls) == 1
    assert sorted(p.name for p in crawls.iterdir()) == ["docs-2"]
    assert remove_leftovers(tmp_path / "none") == 0
