"""One (snapshot, path) given twice in one ingest batch: one file row, one reference, the
blob it points to kept; the later file wins (the earlier one with `replace=False`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from archive_pipelines.catalog.models import Blob, SnapshotFile
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import IngestItem, IngestReport, ingest_files
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.storage import add_snapshot, sha

FIRST = b"<html>the first file given for this path</html>"
SECOND = b"<html>the second file given for the same path</html>"
EARLIER = b"<html>what an earlier ingest recorded there</html>"
PATH = "page/index.html"


def references(storage: StorageParts) -> tuple[dict[str, int], dict[str, int]]:
    """({sha256: ref_count} of every blob, {sha256: file rows pointing at it})."""
    with storage.catalog.reading() as tx:
        counts = {digest: n for digest, n in tx.session.execute(select(Blob.sha256, Blob.ref_count))}
        rows = {digest: n for digest, n in tx.session.execute(
            select(Blob.sha256, func.count(SnapshotFile.id))
            .join(SnapshotFile, SnapshotFile.blob_id == Blob.id).group_by(Blob.sha256))}
    return counts, rows


def recorded(storage: StorageParts, sid: str) -> list[tuple[str, str]]:
    with storage.catalog.reading() as tx:
        return [(rel, digest) for rel, digest in tx.session.execute(
            select(SnapshotFile.relative_path, Blob.sha256)
            .join(Blob, Blob.id == SnapshotFile.blob_id)
            .where(SnapshotFile.snapshot_id == sid))]


def twice(storage: StorageParts, tmp_path: Path, sid: str, first: bytes, second: bytes, *,
          replace: bool = True) -> IngestReport:
    """Ingest `first` and then `second` at PATH of `sid`, in one batch."""
    items = []
    for name, data in (("first", first), ("second", second)):
        source = tmp_path / name
        source.write_bytes(data)
        items.append(IngestItem(sid, "wget", PATH, source))
    report = ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work, items=items,
                          replace=replace)
    assert report.files == 2, report
    return report


def assert_sound(storage: StorageParts) -> None:
    """Ref counts equal the file rows; after a gc with no grace every recorded blob is
    still stored and the store verifies clean."""
    counts, rows = references(storage)
    assert {h: n for h, n in counts.items() if n} == rows, \
        f"ref counts {counts} disagree with the file rows {rows}"
    collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                    grace_hours=0)
    assert all(storage.primary.store.exists(h) for h in rows), "gc removed a referenced blob"
    report = verify_storage(storage.catalog, storage.primary, storage.views, deep=True)
    assert report.problems == 0, report.examples


@pytest.mark.parametrize(("first", "second"), [(FIRST, FIRST), (FIRST, SECOND)],
                         ids=["same-bytes", "other-bytes"])
def test_a_new_path_given_twice_in_one_batch_is_one_reference(
        storage: StorageParts, tmp_path: Path, first: bytes, second: bytes) -> None:
    sid = add_snapshot(storage)

    twice(storage, tmp_path, sid, first, second)

    assert_sound(storage)
    assert recorded(storage, sid) == [(PATH, sha(second))]  # the later file wins
    assert references(storage)[0][sha(second)] == 1
    link = storage.layout.archive / "by_timestamp" / "1735142400.1" / PATH
    assert link.read_bytes() == second


def test_a_recorded_path_given_twice_in_one_batch_moves_its_one_reference(
        storage: StorageParts, tmp_path: Path) -> None:
    sid = add_snapshot(storage)
    earlier = tmp_path / "earlier"
    earlier.write_bytes(EARLIER)
    ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                 items=[IngestItem(sid, "wget", PATH, earlier)])

    twice(storage, tmp_path, sid, FIRST, SECOND)

    assert recorded(storage, sid) == [(PATH, sha(SECOND))]
    counts, _rows = references(storage)
    assert (counts[sha(EARLIER)], counts[sha(FIRST)], counts[sha(SECOND)]) == (0, 0, 1)
    assert_sound(storage)


def test_without_replace_the_first_file_given_stays_and_the_second_is_reported(
        storage: StorageParts, tmp_path: Path) -> None:
    sid = add_snapshot(storage)

    report = twice(storage, tmp_path, sid, FIRST, SECOND, replace=False)

    assert len(report.errors) == 1 and report.errors[0].startswith(f"{tmp_path / 'second'}: "), \
        report.errors
    assert recorded(storage, sid) == [(PATH, sha(FIRST))]
    assert references(storage)[0][sha(FIRST)] == 1
    assert_sound(storage)
    link = storage.layout.archive / "by_timestamp" / "1735142400.1" / PATH
    assert link.read_bytes() == FIRST
