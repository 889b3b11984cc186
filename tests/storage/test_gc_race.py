"""gc against an ingest that references a blob while gc is collecting it.

gc claims an unreferenced blob (its primary copy marked `missing`), moves the file to its
trash, then checks the ref count again and puts the file back if an ingest referenced the
blob meanwhile. The ingest here commits in the worst moment of that window: after the
claim, while the file is still in place, so it records the blob without rewriting it;
only gc's second look keeps the bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from archive_pipelines.catalog import CatalogTransaction
from archive_pipelines.catalog.models import Blob, BlobCopy
from archive_pipelines.storage import gc
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import IngestReport, ingest_file
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.removal import remove_file
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.storage import add_snapshot, sha, write_tree

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

DATA = b"<html>a page gc is collecting while a crawl finds it again</html>"


class _OsSeenFromGc:
    """`os` as gc's module sees it, with `replace` into the trash running `before` first;
    every other module keeps the real `os`."""

    def __init__(self, before: Any) -> None:
        self._before = before

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def replace(self, src: Any, dst: Any) -> None:
        if gc.TRASH in Path(dst).parts:
            self._before(Path(src))
        os.replace(src, dst)


def test_an_ingest_committing_between_claim_and_recheck_revives_the_blob(
        storage: StorageParts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digest = sha(DATA)
    old = add_snapshot(storage, url="https://example.com/old", timestamp="1.0")
    ingest_file(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=old,
                extractor="wget", relative_path="page.html",
                source=write_tree(tmp_path / "old", {"page.html": DATA}) / "page.html",
                hardlink=False)
    remove_file(storage.catalog, storage.views, old, relative_path="wget/page.html")  # garbage from now on
    final = storage.primary.store.local_path(digest)
    inode = os.stat(final).st_ino
    new = add_snapshot(storage, url="https://example.com/new", timestamp="2.0")
    source = write_tree(tmp_path / "new", {"page.html": DATA}) / "page.html"
    ingests: list[IngestReport] = []

    def ingest_in_the_window(moving: Path) -> None:
        assert moving == final and not ingests  # one blob, one move
        with storage.catalog.reading() as tx:  # gc has claimed it...
            assert _primary_status(tx, digest) == "missing"
        # ...and the same bytes arrive: the ingest finds the file in place and commits.
        ingests.append(ingest_file(storage.catalog, storage.primary, storage.views,
                                   work=storage.work, snapshot_id=new, extractor="wget",
                                   relative_path="page.html", source=source,
                                   hardlink=False))
        assert final.exists()  # so the ingest did not write it again

    monkeypatch.setattr(gc, "os", _OsSeenFromGc(ingest_in_the_window))
    report = collect_garbage(storage.catalog, storage.primary, storage.views.farm,
                             layout=storage.layout, grace_hours=0)
    monkeypatch.undo()

    assert len(ingests) == 1, "the ingest did not run between gc's claim and its recheck"
    assert not ingests[0].errors and ingests[0].new_blobs == 0 and ingests[0].added == 1
    assert (report.candidates, report.revived, report.removed) == (1, 1, 0)
    assert final.read_bytes() == DATA
    assert os.stat(final).st_ino == inode  # gc put its file back: nobody rewrote it
    assert not any((storage.primary.root / gc.TRASH).iterdir())
    with storage.catalog.reading() as tx:
        assert _primary_status(tx, digest) == "present"
        assert tx.session.scalar(select(Blob.ref_count).where(Blob.sha256 == digest)) == 1
    assert (storage.layout.archive / "by_timestamp" / "2.0" / "wget" / "page.html"
            ).read_bytes() == DATA
    checked = verify_storage(storage.catalog, storage.primary, storage.views)
    assert checked.problems == 0, checked.examples
    assert checked.found["missing_blob_files"] == 0 and checked.blobs_checked == 1


def _primary_status(tx: CatalogTransaction, digest: str) -> str | None:
    return tx.session.scalar(select(BlobCopy.status).join(Blob, Blob.id == BlobCopy.blob_id)
                             .where(Blob.sha256 == digest))
