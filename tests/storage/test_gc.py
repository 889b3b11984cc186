from pathlib import Path

from sqlalchemy import select

from archive_pipelines.catalog.models import Blob, BlobCopy
from archive_pipelines.storage import Storage
from archive_pipelines.storage.files import remove_file
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.ingest import ingest_directory, ingest_file
from tests.storage.conftest import add_snapshot, sha, write_tree


def test_gc_removes_only_unreferenced_blobs_past_grace(storage: Storage, tmp_path: Path) -> None:
    sid = add_snapshot(storage)
    src = write_tree(tmp_path / "src", {"keep": b"keep", "drop": b"drop"})
    ingest_directory(storage, sid, "wget", src)
    remove_file(storage, sid, "wget", "drop")

    within_grace = collect_garbage(storage, grace_hours=1)
    assert within_grace.removed == 0
    assert storage.primary.exists(sha(b"drop"))

    dry = collect_garbage(storage, grace_hours=0, dry_run=True)
    assert dry.candidates == 1 and storage.primary.exists(sha(b"drop"))

    done = collect_garbage(storage, grace_hours=0)
    assert done.removed == 1 and done.bytes_freed == 4
    assert not storage.primary.exists(sha(b"drop"))
    assert storage.primary.exists(sha(b"keep"))
    with storage.session() as session:
        status = session.scalar(select(BlobCopy.status).join(Blob, Blob.id == BlobCopy.blob_id)
                                .where(Blob.sha256 == sha(b"drop")))
    assert status == "missing"

    # the same bytes ingested again revive the blob and its file
    ingest_file(storage, sid, "wget", "again", src / "drop")
    assert storage.primary.exists(sha(b"drop"))
    assert (storage.layout.archive / "by_timestamp" / "1735142400.1" / "wget" /
            "again").read_bytes() == b"drop"


def test_gc_removes_old_untracked_files_only(sqlite_storage: Storage) -> None:
    put = sqlite_storage.primary.put_bytes(b"orphan file from a crashed ingest")
    assert collect_garbage(sqlite_storage, grace_hours=0).untracked_removed == 0  # opt-in
    assert sqlite_storage.primary.exists(put.sha256)
    assert collect_garbage(sqlite_storage, grace_hours=1, untracked=True).untracked_removed == 0
    assert collect_garbage(sqlite_storage, grace_hours=0, untracked=True).untracked_removed == 1
    assert not sqlite_storage.primary.exists(put.sha256)
