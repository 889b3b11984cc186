"""Frontier lines with and without an asset's kind: written, read back, and read from files
written before kinds existed."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import (
    FrontierRecord,
    LineEnds,
    Queued,
    ResourceType,
    format_line,
    parse_line,
)
from frontier_service.recovery.disk_frontier import scan_file

pytestmark = pytest.mark.unit

R = ResourceType


@pytest.mark.parametrize("kind", list(ResourceType))
def test_every_kind_round_trips(kind: ResourceType) -> None:
    line = format_line("http://a.example/x|y", 2, 0.5, added_at=1_700_000_000, kind=kind)
    record = parse_line(line.rstrip("\n").encode())
    assert record == FrontierRecord("http://a.example/x%7Cy", 2, 0.5, 1_700_000_000, kind)


def test_a_documents_line_is_the_old_four_field_line() -> None:
    assert format_line("http://a.example/", 1, 1.0, added_at=5) == "http://a.example/|1|1|5\n"
    assert format_line("http://a.example/f.woff2", 1, 1.0, added_at=5, kind=R.FONT) == \
        "http://a.example/f.woff2|1|1|5|font\n"


@pytest.mark.parametrize(("line", "record"), [
    # Lines as earlier versions wrote them: documents.
    (b"http://a.example/|0|1|1700000000", FrontierRecord("http://a.example/", 0, 1.0, 1_700_000_000)),
    (b"http://a.example/p?q=1|3|0.5|7", FrontierRecord("http://a.example/p?q=1", 3, 0.5, 7)),
    # A kind a later version may add reads as `other`, not as a corrupt line.
    (b"http://a.example/w|1|1|7|worklet", FrontierRecord("http://a.example/w", 1, 1.0, 7, R.OTHER)),
    (b"http://a.example/s|1|1|7|stylesheet",
     FrontierRecord("http://a.example/s", 1, 1.0, 7, R.STYLESHEET)),
])
def test_reading_lines(line: bytes, record: FrontierRecord) -> None:
    assert parse_line(line) == record


@pytest.mark.parametrize("line", [
    b"http://a.example/|1|1|7|", b"http://a.example/|1|1|7|f0nt", b"http://a.example/|1|1|7|font|x",
    b"http://a.example/|1|1|font", b"http://a.example/|x|1|7|font", b"font", b"|font",
    b"http://a.example/|1|1|7|\xc3\xa9",
])
def test_corrupt_lines(line: bytes) -> None:
    assert parse_line(line) is None


def mixed_file(tmp_path: Path) -> tuple[FrontierFiles, list[FrontierRecord]]:
    """A domain file with old document lines, then lines with kinds, as a crawl that was
    upgraded midway leaves it."""
    old = [FrontierRecord(f"http://a.example/p{n}", 1, 1.0, 10 + n) for n in range(3)]
    new = [FrontierRecord("http://a.example/s.css", 1, 1.0, 20, R.STYLESHEET),
           FrontierRecord("http://a.example/p3", 2, 1.0, 21),
           FrontierRecord("http://a.example/f.woff2", 1, 1.0, 22, R.FONT)]
    files = FrontierFiles(tmp_path)
    files.append_lines("a.example", b"".join(
        f"{r.url}|{r.depth}|{r.priority:g}|{r.added_at}\n".encode() for r in old))
    files.append("a.example", new)
    return files, old + new


def test_a_file_of_old_and_new_lines_reads_whole(tmp_path: Path) -> None:
    files, records = mixed_file(tmp_path)
    try:
        got, end = files.read_from("a.example", 0, 100)
        assert got == records and end == files.size("a.example")
        assert files.corrupt_lines == 0
    finally:
        files.close()


def test_a_rebuild_scan_counts_every_line_of_a_mixed_file(tmp_path: Path) -> None:
    files, records = mixed_file(tmp_path)
    files.close()
    with open(files.path_for("a.example"), "ab") as handle:
        handle.write(b"http://a.example/torn|1|1|9|font|extra\nhttp://a.example/t|1|1|9|ima")
    scan = scan_file(files.path_for("a.example"))
    assert (scan.urls, scan.torn_lines, len(scan.fingerprints)) == (len(records), 1, len(records))


@pytest.mark.parametrize("kind", [None, *ResourceType])
@pytest.mark.parametrize(("depth", "priority"), [(0, 1.0), (3, 0.5), (12, 2.0)])
def test_line_ends_make_the_formatted_line(kind: ResourceType | None, depth: int,
                                           priority: float) -> None:
    ends = LineEnds(priority, added_at=1_700_000_000)
    found = ("https://a.example/x?y=1", "a.example", b"f" * 16)
    entry: Queued = (found, depth) if kind is None else (found, depth, kind)
    expected = format_line(found[0], depth, priority, added_at=1_700_000_000,
                           kind=kind or ResourceType.DOCUMENT)
    assert found[0] + ends.of(entry) == expected
    if kind is None:
        assert found[0] + ends[depth] == expected
