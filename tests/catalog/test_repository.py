from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from archive_pipelines.archive_error import CatalogError
from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.catalog.models import Blob, BlobCopy, SnapshotFile, Store


def test_snapshot_round_trip_with_tags_and_results(catalog: Catalog) -> None:
    created = datetime(2024, 12, 25, 12, 0, tzinfo=UTC)
    snap = catalog.snapshots.add_snapshot(url="https://example.com/", timestamp="1735142400.123",
                                title="Example", created_at=created, created_by="squash",
                                tags=["news", "b", "news"])
    catalog.snapshots.add_result(snap.id, extractor="wget", output="example.com/index.html",
                       cmd=["wget", "-p"], status="succeeded")

    loaded = catalog.snapshots.get_snapshot(snap.id)
    assert loaded is not None
    assert (loaded.url, loaded.timestamp, loaded.title, loaded.created_by) == (
        "https://example.com/", "1735142400.123", "Example", "squash")
    assert loaded.created_at == created
    assert sorted(t.name for t in loaded.tags) == ["b", "news"]
    [result] = catalog.snapshots.results_for(snap.id)
    assert (result.extractor, result.cmd) == ("wget", ["wget", "-p"])
    found = catalog.snapshots.find_snapshot(url="https://example.com/", timestamp="1735142400.123")
    assert found is not None and found.id == snap.id
    assert catalog.snapshots.known_timestamps(["1735142400.123", "1"]) == {"1735142400.123"}
    assert catalog.snapshots.set_tags(snap.id, ["x"]) == ["x"]
    assert catalog.status().snapshots == 1
    assert catalog.snapshots.delete_snapshot(snap.id)
    assert catalog.snapshots.get_snapshot(snap.id) is None


def _blob(catalog: Catalog, sha: str = "a" * 64, refs: int = 0) -> int:
    with catalog.transaction() as tx:
        blob = Blob(sha256=sha, size=3, ref_count=refs)
        tx.session.add(blob)
        tx.session.flush()
        return blob.id


def test_duplicate_snapshot_file_path_is_a_clear_error(catalog: Catalog) -> None:
    snap = catalog.snapshots.add_snapshot(url="https://example.com/", timestamp="1")
    blob_id = _blob(catalog)
    with catalog.transaction() as tx:
        tx.session.add(SnapshotFile(snapshot_id=snap.id, blob_id=blob_id, extractor="wget",
                                 relative_path="index.html"))
    with pytest.raises(CatalogError, match=r"\(snapshot, relative_path\)"), \
            catalog.session() as session:
        session.add(SnapshotFile(snapshot_id=snap.id, blob_id=blob_id, extractor="wget",
                                 relative_path="index.html"))


def test_negative_ref_count_is_refused(catalog: Catalog) -> None:
    blob_id = _blob(catalog)
    with pytest.raises(CatalogError, match="ref_count cannot go below 0"), \
            catalog.session() as session:
        session.execute(update(Blob).where(Blob.id == blob_id).values(ref_count=-1))
    with catalog.transaction() as tx:
        assert tx.session.scalar(select(Blob.ref_count).where(Blob.id == blob_id)) == 0


def test_duplicate_blob_and_copy_are_refused(catalog: Catalog) -> None:
    blob_id = _blob(catalog)
    with pytest.raises(CatalogError, match="sha256 already exists"):
        _blob(catalog)
    with catalog.transaction() as tx:
        store = Store(name="primary", kind="local", location="cas", codec="raw")
        tx.session.add(store)
        tx.session.flush()
        tx.session.add(BlobCopy(blob_id=blob_id, store_id=store.id, status="present"))
        store_id = store.id
    with pytest.raises(CatalogError, match=r"\(blob, store\) copy already exists"), \
            catalog.session() as session:
        session.add(BlobCopy(blob_id=blob_id, store_id=store_id, status="present"))
    with pytest.raises(CatalogError, match="copy status must be"), catalog.session() as session:
        session.execute(update(BlobCopy).values(status="lost"))


def test_referenced_blob_cannot_be_deleted(catalog: Catalog) -> None:
    snap = catalog.snapshots.add_snapshot(url="https://example.com/", timestamp="1")
    blob_id = _blob(catalog, refs=1)
    with catalog.transaction() as tx:
        tx.session.add(SnapshotFile(snapshot_id=snap.id, blob_id=blob_id, extractor="wget",
                                 relative_path="a"))
    with pytest.raises(CatalogError, match="referenced"), catalog.session() as session:
        session.delete(session.get(Blob, blob_id))


@pytest.mark.unit
def test_unreachable_catalog_is_one_clear_line() -> None:
    with pytest.raises(CatalogError, match="is unreachable") as info:
        make_engine("postgresql://nobody@127.0.0.1:1/nothing")
    assert "\n" not in str(info.value)
