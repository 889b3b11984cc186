"""An ingest is all or resumable: its snapshot is incomplete until the last file is committed,
and an interrupted ingest is finished (by id, or by the same URL and folder) exactly."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.snapshot_ingest import (
    IngestRefused,
    SnapshotIngest,
    SnapshotIngestReport,
    check_extractor,
    find_incomplete,
    open_ingest,
    resume_ingest,
    run_ingest,
)
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.storage import sha, write_tree

URL = "https://resume.test/page"
FILES = {f"d{i % 3}/f{i}.txt": f"file {i}\n".encode() * (i + 1) for i in range(12)}


class Interrupted(Exception):
    """Stands for the catalog going away mid-ingest."""


def start(storage: StorageParts, source: Path, *, url: str = URL, extractor: str = "wget",
          timestamp: str | None = None) -> SnapshotIngest:
    when = datetime(2026, 11, 25, 8, 31, 2, tzinfo=UTC)
    return open_ingest(storage.catalog, url=url, extractor=extractor, source=source,
                       timestamp=timestamp, created_at=when, created_by="alice")


def run(storage: StorageParts, ingest: SnapshotIngest,
        progress: Callable[[int], object] | None = None) -> SnapshotIngestReport:
    return run_ingest(storage.catalog, storage.primary, storage.views, work=storage.work, ingest=ingest,
                      batch_size=4, progress=progress)


def interrupt_after(batches: int) -> Callable[[int], object]:
    """A progress callback that stops the ingest once `batches` batches are committed."""
    done = []

    def progress(_count: int) -> None:
        done.append(1)
        if len(done) >= batches:
            raise Interrupted
    return progress


def snapshot_files(storage: StorageParts, snapshot_id: str) -> dict[str, str]:
    with storage.catalog.reading() as tx:
        return {rel: sha256 for _id, _blob, _ext, rel, sha256
                in tx.files.snapshot_file_rows(snapshot_id)}


def is_complete(storage: StorageParts, snapshot_id: str) -> bool:
    with storage.catalog.reading() as tx:
        state = tx.snapshots.ingest_state(snapshot_id)
    assert state is not None
    return state.complete


def snapshot_count(storage: StorageParts) -> int:
    with storage.catalog.reading() as tx:
        return int(tx.session.scalar(select(func.count()).select_from(Snapshot)) or 0)


def expected(files: dict[str, bytes], extractor: str = "wget") -> dict[str, str]:
    return {f"{extractor}/{rel}": sha(data) for rel, data in files.items()}


def test_a_snapshot_is_incomplete_until_its_ingest_commits_the_last_file(
        storage: StorageParts, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", FILES)
    ingest = start(storage, src)
    assert not ingest.resumed and ingest.source == src.resolve()
    assert not is_complete(storage, ingest.snapshot_id)
    assert find_incomplete(storage.catalog).count == 1
    report = run(storage, ingest)
    assert report.files.files == len(FILES) and report.skipped == 0
    assert is_complete(storage, ingest.snapshot_id)
    assert find_incomplete(storage.catalog).count == 0
    assert snapshot_files(storage, ingest.snapshot_id) == expected(FILES)


def test_an_interrupted_ingest_is_resumed_by_id_exactly(storage: StorageParts,
                                                        tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", FILES)
    ingest = start(storage, src)
    with pytest.raises(Interrupted):
        run(storage, ingest, progress=interrupt_after(1))
    committed = snapshot_files(storage, ingest.snapshot_id)
    assert 0 < len(committed) < len(FILES)
    assert not is_complete(storage, ingest.snapshot_id)
    verdict = verify_storage(storage.catalog, storage.primary, storage.views, scan_store=False)
    assert verdict.found["incomplete_snapshots"] == 1 and verdict.problems >= 1
    assert "ingest --resume " + ingest.snapshot_id in verdict.examples["incomplete_snapshots"][0]

    resumed = resume_ingest(storage.catalog, ingest.snapshot_id)
    assert resumed.resumed and resumed.snapshot_id == ingest.snapshot_id
    assert (resumed.source, resumed.extractor) == (src.resolve(), "wget")
    report = run(storage, resumed)
    assert report.skipped == len(committed)  # not read again
    assert report.files.added == len(FILES) - len(committed) and not report.files.errors
    assert is_complete(storage, ingest.snapshot_id)
    assert snapshot_files(storage, ingest.snapshot_id) == expected(FILES)
    assert snapshot_count(storage) == 1
    final = verify_storage(storage.catalog, storage.primary, storage.views, deep=True)
    assert final.problems == 0, final.examples


def test_the_same_command_again_finds_the_incomplete_snapshot(storage: StorageParts,
                                                              tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", FILES)
    ingest = start(storage, src)
    with pytest.raises(Interrupted):
        run(storage, ingest, progress=interrupt_after(1))
    again = start(storage, tmp_path / "." / "site")  # the same folder, however it is named
    assert again.resumed and again.snapshot_id == ingest.snapshot_id
    assert (again.timestamp, again.created_at) == (ingest.timestamp, ingest.created_at)
    run(storage, again)
    assert snapshot_count(storage) == 1 and is_complete(storage, ingest.snapshot_id)
    assert snapshot_files(storage, ingest.snapshot_id) == expected(FILES)


def test_a_complete_snapshots_folder_ingested_again_gets_a_new_snapshot(
        storage: StorageParts, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", FILES)
    first = start(storage, src)
    run(storage, first)
    second = start(storage, src)
    assert not second.resumed and second.snapshot_id != first.snapshot_id
    assert second.created_at > first.created_at  # after it: by_timestamp stays the first's
    run(storage, second)
    assert snapshot_count(storage) == 2
    assert snapshot_files(storage, second.snapshot_id) == expected(FILES)


def test_another_folder_or_extractor_never_mixes_into_an_incomplete_snapshot(
        storage: StorageParts, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", FILES)
    other = write_tree(tmp_path / "other", {"x.txt": b"x"})
    ingest = start(storage, src, timestamp="1700000000.5")
    # Another folder of the same URL without --timestamp: a snapshot of its own.
    elsewhere = start(storage, other)
    assert elsewhere.snapshot_id != ingest.snapshot_id and not elsewhere.resumed
    # The same folder as another extractor, or the same --timestamp from another folder:
    # refused, naming the command that finishes the incomplete one.
    with pytest.raises(IngestRefused, match=f"ingest --resume {ingest.snapshot_id}"):
        start(storage, src, extractor="singlefile")
    with pytest.raises(IngestRefused, match="is incomplete"):
        start(storage, other, timestamp="1700000000.5")
    again = start(storage, src, timestamp="1700000000.5")  # the same command: resumed
    assert again.resumed and again.snapshot_id == ingest.snapshot_id


def test_resume_refuses_what_it_cannot_finish(storage: StorageParts, tmp_path: Path) -> None:
    with pytest.raises(IngestRefused, match="no snapshot 'nope'"):
        resume_ingest(storage.catalog, "nope")
    src = write_tree(tmp_path / "site", FILES)
    done = start(storage, src)
    run(storage, done)
    with pytest.raises(IngestRefused, match="is complete: nothing to resume"):
        resume_ingest(storage.catalog, done.snapshot_id)
    gone = write_tree(tmp_path / "gone", {"a.txt": b"a"})
    left = start(storage, gone)
    for path in gone.iterdir():
        path.unlink()
    gone.rmdir()
    with pytest.raises(IngestRefused, match=r"its source folder .* is gone"):
        resume_ingest(storage.catalog, left.snapshot_id)


def test_an_ingest_into_a_complete_snapshot_marks_it_incomplete_and_resumes_exactly(
        storage: StorageParts, tmp_path: Path) -> None:
    """More files into an existing snapshot (the same --timestamp): incomplete meanwhile; a
    resume re-checks the files recorded before that ingest began (one changed since)."""
    src = write_tree(tmp_path / "site", {"a.txt": b"one", "b.txt": b"b"})
    first = start(storage, src, timestamp="1700000000")
    run(storage, first)
    changed = {**FILES, "a.txt": b"two"}
    (src / "a.txt").unlink()  # a hard-linked source is read-only: replace it
    write_tree(src, changed)
    more = start(storage, src, timestamp="1700000000")
    assert more.snapshot_id == first.snapshot_id and not more.resumed
    assert not is_complete(storage, first.snapshot_id)
    with pytest.raises(Interrupted):
        run(storage, more, progress=interrupt_after(1))
    resumed = resume_ingest(storage.catalog, first.snapshot_id)
    report = run(storage, resumed)
    assert is_complete(storage, first.snapshot_id)
    assert snapshot_files(storage, first.snapshot_id) == expected({**changed, "b.txt": b"b"})
    assert report.skipped < len(changed)
    final = verify_storage(storage.catalog, storage.primary, storage.views)
    assert final.problems == 0, final.examples


def test_a_resume_makes_the_links_an_interrupted_ingest_had_not_made(
        sqlite_storage: StorageParts, tmp_path: Path) -> None:
    """Killed between a batch's commit and its links: the resume skips those files but
    makes their links."""
    storage = sqlite_storage
    src = write_tree(tmp_path / "site", FILES)
    ingest = start(storage, src)
    with pytest.raises(Interrupted):
        run(storage, ingest, progress=interrupt_after(2))
    folder = storage.layout.archive / "by_timestamp" / ingest.timestamp
    removed = [path for path in folder.rglob("*") if path.is_symlink()]
    for path in removed:
        path.unlink()
    assert removed
    report = run(storage, resume_ingest(storage.catalog, ingest.snapshot_id))
    assert report.skipped > 0
    assert all(path.is_symlink() for path in removed)
    final = verify_storage(storage.catalog, storage.primary, storage.views)
    assert final.problems == 0, final.examples


@pytest.mark.unit
@pytest.mark.parametrize("extractor", ["../../etc", "wget/../x", "..", ".", "", "a/b", "a\\b",
                                       ".hidden", "-rf", "x" * 65, "wget\n", "new..name",
                                       "wg et", "wget\x00"])
def test_an_extractor_that_is_not_a_plain_name_is_refused_before_a_snapshot_is_made(
        sqlite_storage: StorageParts, tmp_path: Path, extractor: str) -> None:
    src = write_tree(tmp_path / "site", FILES)
    with pytest.raises(IngestRefused, match="is not a plain name"):
        start(sqlite_storage, src, extractor=extractor)
    assert snapshot_count(sqlite_storage) == 0


@pytest.mark.unit
@pytest.mark.parametrize("extractor", ["wget", "singlefile", "archive_org", "media.v2",
                                       "git@2", "x" * 64])
def test_plain_extractor_names_are_taken(extractor: str) -> None:
    assert check_extractor(extractor) == extractor


FLAT = {f"f{i:02d}.txt": f"flat file {i}\n".encode() * (i + 1) for i in range(16)}


def test_a_file_not_stored_keeps_the_snapshot_incomplete_until_a_resume_stores_it(
        storage: StorageParts, tmp_path: Path) -> None:
    """f00.txt, listed with the rest (one folder), is away when its batch, the fourth, is
    stored: it was moved once the first batch committed (while the third was stored)."""
    src = write_tree(tmp_path / "site", FLAT)
    away = tmp_path / "away.txt"
    ingest = start(storage, src)

    def move_it_away(_count: int) -> None:
        if not away.exists():
            (src / "f00.txt").rename(away)

    report = run(storage, ingest, progress=move_it_away)

    assert not report.complete and not is_complete(storage, ingest.snapshot_id)
    assert report.files.errors == [f"{src / 'f00.txt'}: No such file or directory"]
    assert snapshot_files(storage, ingest.snapshot_id) == {
        rel: digest for rel, digest in expected(FLAT).items() if rel != "wget/f00.txt"}
    away.rename(src / "f00.txt")
    finished = run(storage, resume_ingest(storage.catalog, ingest.snapshot_id))
    assert finished.complete and finished.files.errors == []
    assert (finished.skipped, finished.files.added) == (len(FLAT) - 1, 1)
    assert snapshot_files(storage, ingest.snapshot_id) == expected(FLAT)


def test_a_snapshot_with_no_file_stored_is_never_complete(storage: StorageParts,
                                                          tmp_path: Path) -> None:
    src = write_tree(tmp_path / "site", {"only.txt": b"the one file"})
    ingest = start(storage, src)
    (src / "only.txt").unlink()  # gone before the ingest reads it
    (src / "link").symlink_to("/etc/hostname")

    report = run(storage, ingest)

    assert not report.complete and not is_complete(storage, ingest.snapshot_id)
    assert report.files.errors == [] and report.left_out == [
        f"{src / 'link'}: skipped (symlink or special file)"]
    assert snapshot_files(storage, ingest.snapshot_id) == {}
