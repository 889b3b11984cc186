"""`index-warcs` on an S3 primary: the WARCs inside adopted snapshots, blobs in the bucket
(and nowhere on the local disk), become captures; each WARC is read from a verified local copy
that is removed afterwards; a rerun sends the bucket no request.

The collection is adopted on a local primary without the indexing (as before it existed),
then the store moves to the bucket (every blob copied, the local folder taken away, the
settings pointed at the bucket): the state an adoption onto the bucket leaves."""

from __future__ import annotations

import json
from pathlib import Path

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore
from archive_pipelines.datadir import initialize
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.adopted_warcs import warc_target
from archive_pipelines.migration.collection import migrate_all
from archive_pipelines.settings import Settings, load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc.importer import ImportReport
from archive_pipelines.warc.snapshot_warcs import index_snapshot_warcs
from archive_testkit.archivebox import Aged07, generate_collection
from tests.helpers.adopted import WarcResponse, warc_responses
from tests.helpers.cli import run_cli
from tests.helpers.replay import captures_of
from tests.helpers.s3_primary import s3_primary_toml


def _adopted_then_moved_to(data: Path, *, endpoint_url: str, bucket: str, away: Path
                           ) -> list[WarcResponse]:
    """Adopt a three-snapshot collection (WARCs not indexed), copy its store into the bucket,
    move the local store to `away` and make the bucket the primary; the WARCs' responses."""
    generate_collection(data, Aged07(files_per_snapshot=5), snapshots=3, seed=31)
    responses = warc_responses(data)
    initialize(Settings(data_dir=data))
    with open_storage(Settings(data_dir=data)) as parts:
        assert import_orphans(parts.catalog, parts.layout).error_count == 0
        migrated = migrate_all(parts.catalog, parts.primary, parts.views, work=parts.work,
                               layout=parts.layout, batch_size=100, index_warcs=False)
        assert migrated.migrated == 3 and migrated.warcs_indexed == 0
        local, root = parts.primary.store, parts.primary.root
        assert isinstance(local, LocalBlobStore) and root is not None
        bucket_store = S3BlobStore(bucket=bucket, prefix="archive", name="primary", codec="raw",
                                   endpoint_url=endpoint_url)
        for sha in local.iter_hashes():
            path = local.local_path(sha)
            assert path is not None
            bucket_store.put_file(path)
    parts.catalog.engine.dispose()
    root.rename(away)
    (data / "archive.toml").write_text(s3_primary_toml(endpoint_url=endpoint_url, bucket=bucket))
    return responses


def test_index_warcs_reads_adopted_warcs_from_the_bucket(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data = tmp_path / "data"
    responses = _adopted_then_moved_to(data, endpoint_url=s3_endpoint_url, bucket=s3_bucket,
                                       away=tmp_path / "moved-away")
    assert len(responses) >= 3
    run = run_cli("--data-dir", str(data), "index-warcs", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert (report["warcs"], report["indexed"], report["refused"]) == (3, 3, 0)
    assert not [p for p in (data / "tmp").rglob("*") if p.is_file()]  # copies removed
    settings = load_settings(data, environ={})
    assert not settings.primary_is_local
    with open_storage(settings) as parts:
        for response in responses:
            found = {c.body_sha256 for c in captures_of(parts.catalog, response.url)}
            assert response.sha256 in found, response.url
        store = parts.primary.store
        assert isinstance(store, S3BlobStore)
        store.take_request_counts()
        again = ImportReport()
        done = index_snapshot_warcs(warc_target(parts.catalog, parts.primary, parts.views,
                                                layout=parts.layout), report=again)
        assert (done.found, done.indexed, again.files_done_before) == (3, 0, 3)
        assert store.take_request_counts() == {}  # known done: the bucket is not asked
    parts.catalog.engine.dispose()
