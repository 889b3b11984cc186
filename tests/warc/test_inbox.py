"""The inbox's files and the decision which to import: settled (unchanged between two looks
`settle_seconds` apart), once per version of a file, a few at a time, oldest first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archive_pipelines.warc.inbox import InboxFile, InboxState, list_inbox, plan_inbox_runs

pytestmark = pytest.mark.unit

SETTLE = 60.0


def _file(path: str, size: int = 100, mtime_ns: int = 1) -> InboxFile:
    return InboxFile(Path(path), size, mtime_ns)


def test_list_inbox_finds_warc_and_wacz_files_at_any_depth_and_nothing_else(tmp_path: Path) -> None:
    for name in ("a.warc", "b.warc.gz", "sub/c.wacz", "sub/deeper/d.warc.gz", "notes.txt",
                 "e.warc.gz.part", ".f.warc.gz", ".hidden/g.warc", "h.cdxj"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"WARC/1.1\r\n")
    (tmp_path / "folder.warc").mkdir()  # a folder named like a file is not one
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    outside.mkdir()
    (outside / "x.warc").write_bytes(b"x")
    (tmp_path / "linked").symlink_to(outside, target_is_directory=True)
    found = list_inbox(tmp_path)
    assert [f.path.relative_to(tmp_path).as_posix() for f in found] == [
        "a.warc", "b.warc.gz", "sub/c.wacz", "sub/deeper/d.warc.gz"]
    stat = (tmp_path / "a.warc").stat()
    assert (found[0].size, found[0].mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def test_a_missing_inbox_lists_nothing(tmp_path: Path) -> None:
    assert list_inbox(tmp_path / "absent") == []


def test_a_file_is_taken_once_it_was_seen_unchanged_for_the_settle_time() -> None:
    file = _file("/in/a.warc.gz")
    first = plan_inbox_runs([file], InboxState(), now=1000.0, settle_seconds=SETTLE, limit=4)
    assert first.runs == [] and first.settling == 1
    early = plan_inbox_runs([file], first.state, now=1059.0, settle_seconds=SETTLE, limit=4)
    assert early.runs == []
    settled = plan_inbox_runs([file], early.state, now=1060.0, settle_seconds=SETTLE, limit=4)
    assert settled.runs == [file] and settled.settling == 0
    again = plan_inbox_runs([file], settled.state, now=2000.0, settle_seconds=SETTLE, limit=4)
    assert again.runs == [] and again.requested_before == 1


def test_a_file_that_grows_settles_again_and_a_changed_file_is_a_new_run() -> None:
    small, bigger = _file("/in/a.warc", size=100), _file("/in/a.warc", size=200, mtime_ns=2)
    seen = plan_inbox_runs([small], InboxState(), now=0.0, settle_seconds=SETTLE, limit=4)
    growing = plan_inbox_runs([bigger], seen.state, now=100.0, settle_seconds=SETTLE, limit=4)
    assert growing.runs == []  # first seen at this size now
    assert small.key not in growing.state.first_seen  # the old version is forgotten
    settled = plan_inbox_runs([bigger], growing.state, now=160.0, settle_seconds=SETTLE, limit=4)
    assert settled.runs == [bigger]
    assert bigger.run_key != small.run_key
    assert bigger.run_key == "/in/a.warc:200:2"
    touched = _file("/in/a.warc", size=200, mtime_ns=3)
    first = plan_inbox_runs([touched], settled.state, now=200.0, settle_seconds=SETTLE, limit=4)
    later = plan_inbox_runs([touched], first.state, now=260.0, settle_seconds=SETTLE, limit=4)
    assert later.runs == [touched]


def test_no_settle_time_takes_a_file_at_first_sight() -> None:
    file = _file("/in/a.wacz")
    assert plan_inbox_runs([file], InboxState(), now=5.0, settle_seconds=0, limit=1).runs == [file]


def test_at_most_limit_per_look_oldest_first_the_rest_on_the_next_looks() -> None:
    old = [_file(f"/in/old{i}.warc") for i in range(3)]
    new = _file("/in/a-new.warc")
    state = plan_inbox_runs(old, InboxState(), now=0.0, settle_seconds=SETTLE, limit=2).state
    state = plan_inbox_runs([*old, new], state, now=30.0, settle_seconds=SETTLE, limit=2).state
    taken: list[InboxFile] = []
    for now in (100.0, 101.0, 102.0):
        plan = plan_inbox_runs([*old, new], state, now=now, settle_seconds=SETTLE, limit=2)
        taken.extend(plan.runs)
        state = plan.state
    assert taken == [*old, new]  # seen first, taken first (not by name)


def test_files_gone_are_forgotten_and_the_state_survives_its_cursor() -> None:
    a, b = _file("/in/a.warc"), _file("/in/b.warc")
    plan = plan_inbox_runs([a, b], InboxState(), now=0.0, settle_seconds=0, limit=1)
    assert plan.runs == [a]
    state = InboxState.from_cursor(plan.state.to_cursor())
    assert state == plan.state
    later = plan_inbox_runs([b], state, now=1.0, settle_seconds=0, limit=1)
    assert later.runs == [b]
    assert later.state == InboxState({}, frozenset({b.key}))


@pytest.mark.parametrize("cursor", [None, "", "not json", "[1, 2]", '{"seen": {"k": "x"}}'])
def test_a_blank_or_unreadable_cursor_remembers_nothing(cursor: str | None) -> None:
    assert InboxState.from_cursor(cursor) == InboxState()


def test_the_run_key_is_the_path_size_and_mtime_of_the_file_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "a.warc.gz"
    path.write_bytes(b"x" * 10)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    [file] = list_inbox(tmp_path)
    assert file.run_key == f"{path}:10:1000000000"
    assert list_inbox(tmp_path) == [file]


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        plan_inbox_runs([], InboxState(), now=0.0, settle_seconds=0, limit=0)
