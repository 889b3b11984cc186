from pathlib import Path

import pytest

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore, open_store
from archive_pipelines.settings import Settings, StoreSettings


@pytest.mark.unit
def test_the_default_primary(settings: Settings) -> None:
    store = open_store(settings.primary_store, settings.data_dir)
    assert isinstance(store, LocalBlobStore)
    assert (store.name, store.codec, store.writable) == ("primary", "raw", True)
    assert store.root == settings.data_dir / "cas"
    sha256 = store.put_bytes(b"x").sha256
    assert (settings.data_dir / "cas" / store.key(sha256)).read_bytes() == b"x"


@pytest.mark.unit
def test_an_absolute_local_path(tmp_path: Path, data_dir: Path) -> None:
    settings = StoreSettings(name="cold", path=str(tmp_path / "cold"), codec="zstd",
                             zstd_level=9, writable=False)
    store = open_store(settings, data_dir)
    assert isinstance(store, LocalBlobStore)
    assert store.root == tmp_path / "cold"
    assert (store.codec, store.zstd_level, store.writable) == ("zstd", 9, False)


def test_an_s3_store(s3_bucket: str, s3_endpoint_url: str, data_dir: Path) -> None:
    settings = StoreSettings(name="replica", kind="s3", bucket=s3_bucket, prefix="copies/",
                             endpoint_url=s3_endpoint_url, region="us-east-1")
    store = open_store(settings, data_dir)
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store.codec, store.endpoint_url) == (
        s3_bucket, "copies", "zstd", s3_endpoint_url)
    assert store.check(store.put_bytes(b"x").sha256).ok


def test_an_empty_endpoint_means_the_aws_default(data_dir: Path) -> None:
    settings = StoreSettings(name="aws", kind="s3", bucket="b", endpoint_url="")
    store = open_store(settings, data_dir)
    assert isinstance(store, S3BlobStore)
    assert store.endpoint_url is None
