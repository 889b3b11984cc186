"""Blob stores for the tests: local raw/zstd in a temp dir, S3 raw/zstd on the moto_server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, S3BlobStore
from tests.helpers.blobstores import STORE_KINDS, MakeStore, store_kind_params


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """`make_store("s3-zstd", writable=False)`: every call of one kind shares the same place."""

    def make(kind: str, **options: Any) -> BlobStore:
        backend, codec = kind.split("-")
        if backend == "local":
            return LocalBlobStore(tmp_path / "store", name="primary", codec=codec, **options)
        return S3BlobStore(
            bucket=request.getfixturevalue("s3_bucket"), prefix="/replica/one/", name="replica",
            codec=codec, endpoint_url=request.getfixturevalue("s3_endpoint_url"), **options)

    return make


@pytest.fixture(params=store_kind_params(STORE_KINDS))
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(make_store: MakeStore, store_kind: str) -> BlobStore:
    return make_store(store_kind)


@pytest.fixture(params=store_kind_params(["local-zstd", "s3-zstd"]))
def zstd_store(request: pytest.FixtureRequest, make_store: MakeStore) -> BlobStore:
    return make_store(request.param)


@pytest.fixture
def local_store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "store", codec="raw")
