"""Page-fetch index segments: batching, atomic publication, reading back, safe paths."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path

import pytest

from frontier_service.archiving import PageIndexWriter, iter_records, list_segments, validate_session_id

pytestmark = pytest.mark.unit

SESSION = "0f8b6c1e-3a52-4d7e-9c1a-2b3c4d5e6f70"
NOON = dt.datetime(2024, 5, 17, 12, 0, tzinfo=dt.UTC).timestamp()


def records(count: int, start: int = 0) -> list[dict[str, object]]:
    return [
        {"session_id": SESSION, "page_url": f"http://h.test/p{n}", "n": n}
        for n in range(start, start + count)
    ]


def test_a_batch_of_records_is_one_segment_file(tmp_path: Path) -> None:
    writer = PageIndexWriter(tmp_path, SESSION)
    for record in records(250):
        writer.add(record)
    assert writer.pending == 250
    assert list_segments(tmp_path) == []  # nothing on disk before the flush
    segment = writer.flush(now=NOON)
    assert segment is not None and segment.records == 250 and writer.pending == 0
    assert segment.date == "2024-05-17"
    assert segment.path.parent == tmp_path.resolve() / "sessions" / "2024-05-17" / SESSION
    assert segment.path.name == "20240517T120000000000Z_000001.jsonl"
    assert segment.bytes == segment.path.stat().st_size
    assert list_segments(tmp_path) == [segment.path]
    assert list(iter_records(segment.path)) == records(250)
    assert os.listdir(segment.path.parent) == [segment.path.name]  # no temp file left behind


def test_segments_accumulate_in_order_and_span_days(tmp_path: Path) -> None:
    writer = PageIndexWriter(tmp_path, SESSION)
    written = []
    for batch, moment in enumerate([NOON, NOON + 60, NOON + 86_400]):
        for record in records(10, start=batch * 10):
            writer.add(record)
        segment = writer.flush(now=moment)
        assert segment is not None
        written.append(segment)
    assert writer.flush(now=NOON) is None  # nothing buffered: no empty file
    assert [s.date for s in written] == ["2024-05-17", "2024-05-17", "2024-05-18"]
    assert list_segments(tmp_path) == [s.path for s in written]
    assert [r["n"] for r in iter_records(tmp_path)] == list(range(30))


def test_a_restarted_writer_never_overwrites_a_segment(tmp_path: Path) -> None:
    first, second = PageIndexWriter(tmp_path, SESSION), PageIndexWriter(tmp_path, SESSION)
    first.add({"n": 1})
    second.add({"n": 2})
    a, b = first.flush(now=NOON), second.flush(now=NOON)  # same second, same segment number
    assert a is not None and b is not None and a.path != b.path
    assert sorted(r["n"] for r in iter_records(tmp_path)) == [1, 2]


def test_partial_writes_are_never_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = PageIndexWriter(tmp_path, SESSION)
    writer.add({"n": 1})
    assert writer.flush(now=NOON) is not None
    # A crashed writer's leftover temp file, half written.
    directory = writer.session_dir("2024-05-17")
    (directory / ".20240517T120100000000Z_000002.999.tmp").write_bytes(b'{"n": 2}\n{"n": ')
    # A write that fails before publication leaves nothing behind.
    writer.add({"n": 3})

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        writer.flush(now=NOON + 120)
    monkeypatch.undo()
    assert [r["n"] for r in iter_records(tmp_path)] == [1]
    assert len(list_segments(tmp_path)) == 1


def test_records_are_utf8_json_lines(tmp_path: Path) -> None:
    writer = PageIndexWriter(tmp_path, SESSION)
    writer.add({"page_url": "http://b\u00fccher.test/\u00e9", "headers": [["X", "\u2603"]]})
    segment = writer.flush(now=NOON)
    assert segment is not None
    raw = segment.path.read_bytes()
    assert raw.count(b"\n") == 1 and "b\u00fccher".encode() in raw
    assert next(iter_records(segment.path))["headers"] == [["X", "\u2603"]]


@pytest.mark.parametrize(
    "session_id",
    ["", "../../etc", "not-a-uuid", f"{{{SESSION}}}", f"urn:uuid:{SESSION}", f"{SESSION}/..", SESSION + "0"],
)
def test_session_ids_must_be_uuids(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ValueError, match="UUID"):
        PageIndexWriter(tmp_path, session_id)


def test_uppercase_uuid_is_normalised(tmp_path: Path) -> None:
    session = str(uuid.uuid4())
    assert validate_session_id(session.upper()) == session
    assert PageIndexWriter(tmp_path, session.upper()).session_id == session


@pytest.mark.parametrize("date", ["../2024-05-17", "2024-5-17x", "2024-13-01"])
def test_dates_cannot_escape_the_data_dir(tmp_path: Path, date: str) -> None:
    with pytest.raises(ValueError):
        PageIndexWriter(tmp_path, SESSION).session_dir(date)
