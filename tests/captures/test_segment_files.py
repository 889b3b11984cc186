"""Segment files on disk: found where the crawler writes them, odd entries skipped (never
followed), whole lines read with their offsets, a cut tail counted."""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pytest

from archive_pipelines.captures.segment_files import (
    canonical_session_id,
    find_journals,
    find_segments,
    read_segment,
)
from tests.helpers.crawls import Crawled


def segment_files(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("sessions/*/*/*.jsonl"))


def test_finds_every_segment_of_the_crawl_in_write_order(crawled: Crawled) -> None:
    found, skipped = find_segments(crawled.data_dir)
    on_disk = segment_files(crawled.data_dir)
    assert skipped == []
    assert len(found) == len(on_disk) == crawled.report.segments >= 2
    # the crawler numbers its segments: _000001, _000002, ...
    assert [s.relative.rsplit("_", 1)[1] for s in found] == [
        f"{n:06d}.jsonl" for n in range(1, len(found) + 1)]
    assert {s.path for s in found} == set(on_disk)
    for segment in found:
        assert segment.session_id == crawled.report.session_id
        assert segment.relative == f"sessions/{segment.day}/{segment.session_id}/{segment.path.name}"
    assert find_segments(crawled.data_dir, str(uuid.uuid4())) == ([], [])
    assert find_segments(crawled.data_dir / "nowhere") == ([], [])


def test_odd_entries_are_skipped_and_symlinks_never_followed(crawl_data: Path,
                                                             tmp_path: Path) -> None:
    real, _ = find_segments(crawl_data)
    segment = real[0]
    day_dir = segment.path.parent.parent
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(segment.path, outside / segment.path.name)
    other = str(uuid.uuid4())
    (outside / other).mkdir()
    shutil.copy(segment.path, outside / other / segment.path.name)

    def plant(folder: Path) -> None:
        folder.mkdir()
        shutil.copy(segment.path, folder / segment.path.name)

    plant(day_dir / "not-a-session")
    plant(day_dir / segment.session_id.upper())
    plant(crawl_data / "sessions" / "yesterday")
    (day_dir / str(uuid.uuid4())).symlink_to(outside / other)  # a symlinked session folder
    (crawl_data / "sessions" / "2020-01-01").symlink_to(outside)  # a symlinked day folder
    session_dir = segment.path.parent
    (session_dir / "20991231T235959000000Z_000099.jsonl").symlink_to(outside / segment.path.name)
    (session_dir / "notes.txt").write_text("a person's notes")
    (session_dir / ".20991231T235959000000Z_000100.jsonl.tmp").write_bytes(b"half")  # writer's temp
    (session_dir / "20991231T235959000000Z_000101.jsonl").mkdir()  # a folder with a segment's name

    found, skipped = find_segments(crawl_data)
    assert found == real
    expected = {
        f"sessions/{segment.day}/not-a-session",
        f"sessions/{segment.day}/{segment.session_id.upper()}",
        "sessions/yesterday",
        "sessions/2020-01-01",
        f"{segment.relative.rsplit('/', 1)[0]}/20991231T235959000000Z_000099.jsonl",
        f"{segment.relative.rsplit('/', 1)[0]}/notes.txt",
        f"{segment.relative.rsplit('/', 1)[0]}/20991231T235959000000Z_000101.jsonl",
    }
    assert len(skipped) == len(expected) + 1  # and the symlinked session folder
    for entry in expected:
        assert any(line.startswith(entry + ":") for line in skipped), (entry, skipped)
    assert all(".tmp" not in line for line in skipped)


@pytest.mark.unit
def test_canonical_session_id_accepts_only_the_crawlers_form() -> None:
    value = str(uuid.uuid4())
    assert canonical_session_id(value) == value
    for bad in (value.upper(), "{" + value + "}", value.replace("-", ""), "../../../etc", "",
                f"{value}/..", "x" * 36):
        assert canonical_session_id(bad) is None, bad


def test_read_segment_gives_whole_lines_with_offsets(crawled: Crawled) -> None:
    path = segment_files(crawled.data_dir)[0]
    data = path.read_bytes()
    content = read_segment(path)
    assert content.data == data and content.sha256 == hashlib.sha256(data).hexdigest()
    assert content.cut_bytes == 0 and content.whole == len(data)
    lines = list(content.lines())
    assert [line for _offset, line in lines] == data.splitlines()
    for offset, line in lines:
        assert data[offset:offset + len(line) + 1] == line + b"\n"


def test_a_cut_tail_and_blank_lines_are_not_records(crawled: Crawled, tmp_path: Path) -> None:
    data = segment_files(crawled.data_dir)[0].read_bytes()
    first, second = data.splitlines()[:2]
    path = tmp_path / "20991231T235959000000Z_000001.jsonl"
    path.write_bytes(first + b"\n\n  \n" + second + b"\n" + second[:40])
    content = read_segment(path)
    assert content.cut_bytes == 40
    assert list(content.lines()) == [(0, first), (len(first) + 5, second)]


def test_read_segment_does_not_follow_a_symlink(crawled: Crawled, tmp_path: Path) -> None:
    link = tmp_path / "20991231T235959000000Z_000001.jsonl"
    link.symlink_to(segment_files(crawled.data_dir)[0])
    with pytest.raises(OSError):
        read_segment(link)


def test_find_journals_lists_only_the_crawlers_journal_files(crawl_data: Path,
                                                            tmp_path: Path) -> None:
    journals = crawl_data / "sessions" / ".journals"
    journals.mkdir(exist_ok=True)
    session = str(uuid.uuid4())
    wanted = [journals / f"{session}.1.journal", journals / f"{session}.12.journal"]
    for path in wanted:
        path.write_bytes(b"{}\n")
    (journals / f"{session}.lock").write_bytes(b"")
    (journals / "notes.journal").write_bytes(b"")
    (journals / f"{session}.x.journal").write_bytes(b"")
    (tmp_path / "elsewhere.journal").write_bytes(b"{}\n")
    os.symlink(tmp_path / "elsewhere.journal", journals / f"{uuid.uuid4()}.1.journal")
    assert sorted(find_journals(crawl_data)) == wanted
