"""Our CDXJ lines against cdxj-indexer's (the installed CLI, a test-time validator), and the
external sort against `sorted()`."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from archive_pipelines.warc.cdxj import (
    IndexEntry,
    cdxj_line,
    cdxj_timestamp,
    indexed_record,
    record_mime,
    sort_cdxj,
)
from tests.helpers.warcs import sample_warc_index_lines, write_sample_warc

CDXJ_INDEXER = [str(Path(sys.executable).parent / "cdxj-indexer")]  # the installed CLI


def _indexer_lines(warc: Path, *options: str) -> list[str]:
    done = subprocess.run([*CDXJ_INDEXER, *options, str(warc)], capture_output=True, text=True,
                          check=True, timeout=120)
    return done.stdout.splitlines()


def test_our_lines_are_cdxj_indexers_line_for_line(tmp_path: Path) -> None:
    warc = tmp_path / "sample.warc.gz"
    write_sample_warc(warc)
    theirs = _indexer_lines(warc)
    ours = sample_warc_index_lines(warc, warc.name)
    assert ours == theirs
    # The sample exercises what it claims to: every indexed kind, status-less and digest-less lines.
    fields = [json.loads(line.split(" ", 2)[2]) for line in theirs]
    assert {field.get("mime") for field in fields} >= {"text/html", "warc/revisit", "application/json",
                                                      "text/plain", None}
    assert {field.get("status") for field in fields} >= {"200", "404", "301", None}
    assert any(line.startswith("urn:x-archive:navigation:42 ") for line in theirs)
    assert len(theirs) == 10


def test_sorted_index_is_cdxj_indexers_sorted_index(tmp_path: Path) -> None:
    warc = tmp_path / "sample.warc.gz"
    write_sample_warc(warc)
    unsorted = tmp_path / "unsorted.cdxj"
    unsorted.write_text("".join(line + "\n" for line in sample_warc_index_lines(warc, warc.name)))
    count = sort_cdxj(unsorted, tmp_path / "index.cdxj", chunk_lines=3)
    assert count == 10
    assert (tmp_path / "index.cdxj").read_text().splitlines() == _indexer_lines(warc, "--sort")


def _entry(**changes: object) -> IndexEntry:
    fields: dict[str, object] = {
        "url": "https://www.example.com/a?b=2&a=1", "timestamp": "20240301101112", "mime": "text/html",
        "status": 200, "digest": "sha1:AAAA", "length": 123, "offset": 456, "filename": "x.warc.gz"}
    fields.update(changes)
    return IndexEntry(**fields)  # type: ignore[arg-type]


@pytest.mark.unit
def test_a_line_has_cdxj_indexers_keys_order_and_string_values() -> None:
    assert cdxj_line(_entry()) == (
        'com,example)/a?a=1&b=2 20240301101112 {"url": "https://www.example.com/a?b=2&a=1", '
        '"mime": "text/html", "status": "200", "digest": "sha1:AAAA", "length": "123", '
        '"offset": "456", "filename": "x.warc.gz"}')
    assert cdxj_line(_entry(mime=None, status=None, digest=None)) == (
        'com,example)/a?a=1&b=2 20240301101112 {"url": "https://www.example.com/a?b=2&a=1", '
        '"length": "123", "offset": "456", "filename": "x.warc.gz"}')
    assert '"url": "https://b\\u00fccher.de/"' in cdxj_line(_entry(url="https://bücher.de/"))


@pytest.mark.unit
@pytest.mark.parametrize("changes", [{"timestamp": "2024030110111"}, {"timestamp": "2024-03-01T10:11"},
                                     {"length": -1}, {"offset": -5}])
def test_an_entry_refuses_what_no_index_holds(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _entry(**changes)


@pytest.mark.unit
def test_timestamps_helpers() -> None:
    assert cdxj_timestamp(datetime(2024, 3, 1, 10, 11, 12, 999_999, tzinfo=UTC)) == "20240301101112"
    two_hours_east = timezone(timedelta(hours=2))
    assert cdxj_timestamp(datetime(2024, 3, 1, 12, 0, 0, tzinfo=two_hours_east)) == "20240301100000"
    assert indexed_record("response", "application/http; msgtype=response")
    assert indexed_record("metadata", "application/json")
    assert not indexed_record("metadata", "application/warc-fields")
    assert not indexed_record("request", "application/http; msgtype=request")
    assert not indexed_record("warcinfo", "application/warc-fields")
    assert record_mime("revisit", "text/html") == "warc/revisit"
    assert record_mime("response", "text/html; charset=utf-8") == "text/html"
    assert record_mime("response", " text/plain ") == ""
    assert record_mime("response", None) is None


def _random_lines(count: int, seed: int) -> list[bytes]:
    chooser = random.Random(seed)
    alphabet = "abc,)/ ?=&{}\"0123456789é\t\x01"
    lines = []
    for _ in range(count):
        key = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 12)))
        lines.append((key + " " + str(chooser.randint(0, 9)) * chooser.randint(0, 3)).encode())
    return lines


@pytest.mark.unit
@pytest.mark.parametrize(("count", "chunk_lines"),
                         [(0, 5), (1, 5), (7, 1), (1000, 7), (5000, 50), (300, 1000)])
def test_sort_matches_sorted_over_several_chunks(tmp_path: Path, count: int, chunk_lines: int) -> None:
    lines = _random_lines(count, seed=count)
    unsorted = tmp_path / "unsorted.cdxj"
    unsorted.write_bytes(b"".join(line + b"\n" for line in lines))
    out = tmp_path / "deep" / "sorted.cdxj"
    assert sort_cdxj(unsorted, out, chunk_lines=chunk_lines) == count
    assert out.read_bytes().split(b"\n")[:-1] == sorted(lines)
    assert [path.name for path in out.parent.iterdir()] == ["sorted.cdxj"]  # no runs left behind


@pytest.mark.unit
def test_sort_reads_a_last_line_without_break_and_prefixes_first(tmp_path: Path) -> None:
    unsorted = tmp_path / "u.cdxj"
    unsorted.write_bytes(b"a b c\na b\na\tb\nb")
    assert sort_cdxj(unsorted, tmp_path / "s.cdxj", chunk_lines=1) == 4
    assert (tmp_path / "s.cdxj").read_bytes() == b"a\tb\na b\na b c\nb\n"


@pytest.mark.unit
def test_sort_merges_more_runs_than_one_pass_opens(tmp_path: Path) -> None:
    lines = _random_lines(700, seed=1)
    unsorted = tmp_path / "unsorted.cdxj"
    unsorted.write_bytes(b"".join(line + b"\n" for line in lines))
    assert sort_cdxj(unsorted, tmp_path / "sorted.cdxj", chunk_lines=2) == 700  # 350 runs: 2 passes
    assert (tmp_path / "sorted.cdxj").read_bytes().split(b"\n")[:-1] == sorted(lines)
