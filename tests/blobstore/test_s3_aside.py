"""Objects set aside in an S3 store (moto_server): gc's trash and scrub's quarantine, listed,
put back and deleted, never a blob's own key."""

from __future__ import annotations

import pytest

from archive_pipelines.blobstore import S3BlobStore
from archive_pipelines.blobstore.store_errors import BlobNotFound
from tests.helpers.blobstores import MakeStore

DATA = b"bytes gc moves to its trash and back"


def test_set_aside_list_put_back_and_delete(make_store: MakeStore) -> None:
    store = make_store("s3-raw")
    assert isinstance(store, S3BlobStore)
    sha = store.put_bytes(DATA).sha256
    key = store.set_aside(sha, "", folder="gc-trash")
    assert key == f"replica/one/gc-trash/{sha}"
    assert not store.exists(sha) and store.set_aside(sha, "", folder="gc-trash") is None
    listed = list(store.list_aside("gc-trash"))
    assert [(s.key, s.name, s.size) for s in listed] == [(key, sha, len(DATA))]
    assert list(store.iter_hashes()) == []  # the trash is not a blob

    store.take_request_counts()
    assert store.put_back(key, sha) and store.open(sha).read() == DATA
    assert not list(store.list_aside("gc-trash")) and not store.put_back(key, sha)

    again = store.set_aside(sha, "", folder="gc-trash")
    assert again is not None
    store.put_bytes(DATA)  # an ingest stored it again meanwhile: put_back copies nothing
    store.take_request_counts()
    assert store.put_back(again, sha)
    assert "CopyObject" not in store.take_request_counts()

    aside = [store.set_aside(store.put_bytes(f"{i}".encode()).sha256, "", folder="gc-trash")
             for i in range(3)]
    store.delete_aside([k for k in aside if k is not None])
    assert store.take_request_counts()["DeleteObjects"] == 1
    assert not list(store.list_aside("gc-trash"))
    with pytest.raises(ValueError, match="a blob's key"):
        store.delete_aside([store.object_key(sha)])
    assert store.open(sha).read() == DATA
    assert aside[0] is not None
    with pytest.raises(BlobNotFound):  # deleted from the trash: gone from its key too
        store.open(aside[0].rsplit("/", 1)[-1])
