"""The page journal: records of a session killed before its segment was written become a
segment, once, on the next start."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from frontier_service.archiving import iter_records
from frontier_service.archiving.page_journal import JournaledIndexWriter, recover_journals


def record(n: int) -> dict[str, object]:
    return {"page_url": f"http://site0001.test/p{n}", "navigation_id": f"nav-{n}", "requests": []}


@pytest.mark.unit
def test_records_of_a_crashed_session_become_a_segment_once(tmp_path: Path) -> None:
    writer = JournaledIndexWriter(tmp_path, str(uuid.uuid4()))
    for n in range(3):
        writer.add(record(n))
    writer.write_segment(writer.detach())  # records 0-2: in a segment, journal dropped
    for n in range(3, 6):
        writer.add(record(n))
    writer.journal.sync()  # records 3-5: only in the journal when the process dies
    assert recover_journals(tmp_path) == []  # the session is alive: left alone
    writer.journal._lock.close()  # the process is gone: its flock with it
    (segment,) = recover_journals(tmp_path)
    assert segment.records == 3
    urls = sorted(str(r["page_url"]) for r in iter_records(tmp_path / "sessions"))
    assert urls == [f"http://site0001.test/p{n}" for n in range(6)]
    assert recover_journals(tmp_path) == [] and not list((tmp_path / "sessions" / ".journals").iterdir())
