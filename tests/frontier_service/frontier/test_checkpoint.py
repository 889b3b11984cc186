"""On-disk checkpoints of read offsets: atomic writes, merged loads, folding dead sessions."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from frontier_service.frontier.checkpoint import (
    DomainCheckpoint,
    OffsetCheckpoint,
    checkpoint_dir,
    load_checkpoints,
    merge_dead_sessions,
)
from frontier_service.frontier.folder_locks import live_sessions

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.unit
def test_advance_keeps_the_highest_offset_and_counts_pages(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path, "s1")
    checkpoint.advance("a.example", 100, 1)
    checkpoint.advance("a.example", 40, 1)  # a late release never moves the offset back
    checkpoint.advance("b.example:8080", 7)
    checkpoint.exclude("c.example", "host unreachable: connection refused")
    assert checkpoint.write()
    assert not checkpoint.write()  # nothing changed since
    assert load_checkpoints(tmp_path) == {
        "a.example": DomainCheckpoint(100, 2),
        "b.example:8080": DomainCheckpoint(7),
        "c.example": DomainCheckpoint(0, 0, "host unreachable: connection refused"),
    }
    checkpoint.advance("a.example", 100)  # no change: no write
    assert not checkpoint.write()
    checkpoint.close()


@pytest.mark.unit
def test_the_file_is_text_with_a_versioned_header_and_a_checked_end(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path, "s1")
    checkpoint.advance("a.example", 100, 2)
    checkpoint.exclude("a.example", "page budget reached")
    checkpoint.close()
    lines = (tmp_path / "s1.ckpt").read_text().splitlines()
    assert lines[0] == "frontier-checkpoint 1 s1"
    assert lines[1] == "a.example 100 2 page%20budget%20reached"
    assert lines[2].startswith("end 1 ")


@pytest.mark.unit
def test_a_domain_key_with_whitespace_is_refused(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path, "s1")
    with pytest.raises(ValueError, match="invalid domain key"):
        checkpoint.advance("a example", 1)
    checkpoint.close()


@pytest.mark.unit
def test_sessions_and_base_merge_max_offset_sum_pages_any_exclusion(tmp_path: Path) -> None:
    first = OffsetCheckpoint(tmp_path, "s1")
    first.advance("a.example", 100, 3)
    first.advance("b.example", 10, 1)
    first.close()
    assert merge_dead_sessions(tmp_path) == 1  # s1 -> base.ckpt
    assert not (tmp_path / "s1.ckpt").exists() and (tmp_path / "base.ckpt").exists()
    second, third = OffsetCheckpoint(tmp_path, "s2"), OffsetCheckpoint(tmp_path, "s3")
    second.advance("a.example", 250, 2)
    third.advance("a.example", 180, 1)
    third.exclude("b.example", "page budget reached")
    second.write()
    third.write()
    assert load_checkpoints(tmp_path) == {
        "a.example": DomainCheckpoint(250, 6),
        "b.example": DomainCheckpoint(10, 1, "page budget reached"),
    }
    second.close()
    third.close()


@pytest.mark.unit
def test_a_live_session_is_not_merged_a_dead_one_is(tmp_path: Path) -> None:
    live = OffsetCheckpoint(tmp_path, "live")
    live.advance("a.example", 5, 1)
    live.write()
    done = OffsetCheckpoint(tmp_path, "done")
    done.advance("a.example", 9, 1)
    done.close()
    assert live_sessions(tmp_path) == ["live"]
    assert merge_dead_sessions(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == ["base.ckpt", "live.ckpt"]
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(9, 2)}
    live.close()
    assert live_sessions(tmp_path) == []
    assert merge_dead_sessions(tmp_path) == 1
    assert [p.name for p in tmp_path.glob("*.ckpt")] == ["base.ckpt"]
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(9, 2)}


def test_a_killed_writer_leaves_its_last_whole_file_and_a_temp_file(tmp_path: Path) -> None:
    """kill -9 in the middle of a crawl: the last renamed file counts, a leftover temp file
    is ignored, and the merge folds the dead session and removes the temp file."""
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from frontier_service.frontier.checkpoint import OffsetCheckpoint\n"
        "c = OffsetCheckpoint(Path(sys.argv[1]), 'killed')\n"
        "c.advance('a.example', 300, 4)\n"
        "c.write()\n"
        "Path(sys.argv[1], '.killed.ckpt.tmp').write_text('frontier-checkpoint 1 killed\\na.exa')\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, check=False)
    assert done.returncode == -9
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(300, 4)}
    assert live_sessions(tmp_path) == []
    assert merge_dead_sessions(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.ckpt", "merge.mutex"]
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(300, 4)}


@pytest.mark.unit
def test_a_merge_that_died_before_removing_the_files_counts_pages_once(tmp_path: Path) -> None:
    session = OffsetCheckpoint(tmp_path, "s1")
    session.advance("a.example", 100, 3)
    session.close()
    kept = (tmp_path / "s1.ckpt").read_bytes()
    assert merge_dead_sessions(tmp_path) == 1
    (tmp_path / "s1.ckpt").write_bytes(kept)  # as if the merge died before the unlink
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(100, 3)}
    assert merge_dead_sessions(tmp_path) == 0
    assert not (tmp_path / "s1.ckpt").exists()
    assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(100, 3)}


@pytest.mark.unit
@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # cut short
    lambda data: data.replace(b"a.example 100", b"a.example 900"),  # checksum mismatch
    lambda data: data.replace(b"frontier-checkpoint 1", b"frontier-checkpoint 7"),  # newer format
    lambda data: b"",
])
def test_a_damaged_file_is_skipped_with_a_warning(tmp_path: Path, damage: object,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    for name, offset in (("good", 50), ("bad", 100)):
        session = OffsetCheckpoint(tmp_path, name)
        session.advance("a.example", offset, 1)
        session.close()
    path = tmp_path / "bad.ckpt"
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with caplog.at_level(logging.WARNING):
        assert load_checkpoints(tmp_path) == {"a.example": DomainCheckpoint(50, 1)}
    assert "skipping the damaged checkpoint" in caplog.text and "bad.ckpt" in caplog.text


@pytest.mark.unit
def test_write_from_a_thread_while_the_loop_advances(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path, "s1")
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        while not stop.is_set():
            try:
                checkpoint.write()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return

    thread = threading.Thread(target=writer)
    thread.start()
    for i in range(20_000):
        checkpoint.advance(f"d{i % 500}.example", i, 1)
    stop.set()
    thread.join()
    checkpoint.close()
    assert not errors
    loaded = load_checkpoints(tmp_path)
    assert len(loaded) == 500
    assert loaded["d499.example"] == DomainCheckpoint(19_999, 40)
    assert sum(c.pages for c in loaded.values()) == 20_000


@pytest.mark.unit
def test_load_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert load_checkpoints(tmp_path / "none") == {}
    assert merge_dead_sessions(tmp_path / "none") == 0


@pytest.mark.unit
@pytest.mark.parametrize(("name", "folder"), [
    ("crawl", "crawl"), ("{crawl1}", "{crawl1}"), ("a/b", "a%2Fb"), (".x", "%2Ex"),
])
def test_checkpoint_dir_is_one_safe_folder_per_crawl(tmp_path: Path, name: str, folder: str) -> None:
    assert checkpoint_dir(tmp_path, name) == tmp_path / "frontiers" / "checkpoints" / folder
