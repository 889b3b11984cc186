"""Per-domain frontier files: byte offsets, torn lines, safe names, concurrent appends."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from frontier_service.frontier.frontier_files import FrontierFiles, frontier_file_name
from frontier_service.frontier.frontier_record import FrontierRecord, format_records


def records(prefix: str, n: int, depth: int = 1) -> list[FrontierRecord]:
    return [FrontierRecord(f"https://a.example/{prefix}{i}", depth, 1.0, 1_700_000_000)
            for i in range(n)]


@pytest.mark.unit
def test_append_returns_byte_offsets_and_read_from_resumes(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    first = records("a", 3)
    start, end = files.append("a.example", first)
    assert start == 0
    assert end == files.size("a.example") == 1 + len(format_records(first))
    start2, end2 = files.append("a.example", records("b", 2))
    assert start2 == end and end2 == files.size("a.example")

    got, offset = files.read_from("a.example", 0, 2)
    assert [r.url for r in got] == [r.url for r in first[:2]]
    rest, offset = files.read_from("a.example", offset, 10)
    assert [r.url for r in rest] == [first[2].url, "https://a.example/b0", "https://a.example/b1"]
    assert offset == end2
    assert files.read_from("a.example", offset, 10) == ([], offset)
    files.close()


@pytest.mark.unit
def test_offsets_are_bytes_not_characters(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    record = FrontierRecord("https://a.example/é", 0, 1.0, 1)
    _, end = files.append("a.example", [record])
    assert end == len(("\n" + "https://a.example/é|0|1|1\n").encode())
    assert files.read_from("a.example", 0, 5) == ([record], end)
    files.close()


@pytest.mark.unit
def test_a_torn_last_line_is_not_read_until_complete(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    _, end = files.append("a.example", records("x", 2))
    path = files.path_for("a.example")
    with path.open("ab") as handle:  # a writer died half way through a line
        handle.write(b"https://a.example/torn|1|1")
    got, offset = files.read_from("a.example", 0, 10)
    assert len(got) == 2 and offset == end  # the torn tail stays unread
    assert files.read_from("a.example", offset, 10) == ([], offset)

    files.append("a.example", records("y", 1))  # the next append terminates the torn line
    got, offset = files.read_from("a.example", offset, 10)
    assert [r.url for r in got] == ["https://a.example/y0"]
    assert files.corrupt_lines == 1
    assert offset == files.size("a.example")
    files.close()


@pytest.mark.unit
def test_a_completed_line_is_read(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    path = files.path_for("b.example")
    files.append("b.example", records("x", 1))
    with path.open("ab") as handle:
        handle.write(b"https://b.example/slow|2|1")
    got, offset = files.read_from("b.example", 0, 10)
    assert len(got) == 1
    with path.open("ab") as handle:
        handle.write(b"|5\n")
    got, offset = files.read_from("b.example", offset, 10)
    assert got == [FrontierRecord("https://b.example/slow", 2, 1.0, 5)]
    files.close()


@pytest.mark.unit
def test_read_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    assert files.read_from("nowhere.example", 0, 5) == ([], 0)
    assert files.size("nowhere.example") == 0
    assert not files.path_for("nowhere.example").exists()


@pytest.mark.unit
def test_file_layout_and_safe_names(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    path = files.path_for("example.com")
    assert path.parent.parent == tmp_path / "frontiers"
    assert len(path.parent.name) == 2 and path.name == "example.com.frontier"
    hostile = ["../../etc", "..", "a/b", "[::1]:8080", "x" * 300, "UPPER.example", "%2F"]
    names = {frontier_file_name(d) for d in hostile}
    assert len(names) == len(hostile)
    for domain in hostile:
        resolved = files.path_for(domain).resolve()
        assert resolved.parent.parent == (tmp_path / "frontiers").resolve()
        assert "/" not in resolved.name and not resolved.name.startswith(".")
        assert len(resolved.name) < 255
    files.append("../../etc", records("z", 1))
    assert files.read_from("../../etc", 0, 5)[0][0].url == "https://a.example/z0"
    with pytest.raises(ValueError):
        frontier_file_name("")
    files.close()


@pytest.mark.unit
def test_lru_of_open_files_closes_the_oldest(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path, max_open_files=4)
    for i in range(10):
        files.append(f"d{i}.example", records("u", 1))
    assert len(files._fds) == 4
    for i in range(10):
        assert len(files.read_from(f"d{i}.example", 0, 5)[0]) == 1
    files.close()
    assert not files._fds


def _append_many(root: str, writer: int, batches: int) -> None:
    files = FrontierFiles(Path(root))
    for batch in range(batches):
        files.append("shared.example", [
            FrontierRecord(f"https://shared.example/w{writer}/b{batch}/{i}", writer, 1.0, batch)
            for i in range(50)])
    files.close()


def test_concurrent_process_appends_never_interleave(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), w, 40)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    files = FrontierFiles(tmp_path)
    got, offset = files.read_from("shared.example", 0, 100_000)
    assert offset == os.path.getsize(files.path_for("shared.example"))
    assert files.corrupt_lines == 0
    assert len(got) == len({r.url for r in got}) == 4 * 40 * 50
    assert all(r.url.split("/")[3] == f"w{r.depth}" for r in got)
    files.close()
