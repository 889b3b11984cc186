"""`captures URL --screenshot/--dom` with an S3 primary: the rendering is streamed from the
bucket into the file asked for (byte for byte, checked against its sha256); a rendering the
bucket lacks is a clear error and leaves no file behind."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import S3BlobStore
from archive_pipelines.captures.renderings import save_rendering
from archive_pipelines.catalog import Capture


def _rendering(sha256: str, size: int) -> Capture:
    return Capture(id=2, kind="screenshot", url="https://example.com/", fetched_ms=1_700_000_000_000,
                   status_code=200, body_sha256=sha256, body_size=size, stored=True,
                   truncated=False, error=None, session_id="s", final_url=None,
                   content_type="image/png", index_path="sessions/s/x.jsonl", record_offset=0,
                   title=None, urlkey="com,example)/", request_index=0)


def test_a_rendering_is_written_from_the_bucket(tmp_path: Path, s3_endpoint_url: str,
                                                s3_bucket: str) -> None:
    store = S3BlobStore(bucket=s3_bucket, name="primary", codec="raw",
                        endpoint_url=s3_endpoint_url)
    png = b"\x89PNG\r\n\x1a\n" + hashlib.sha512(b"pixels").digest() * 40_000  # 2.5 MiB
    put = store.put_bytes(png)
    out = tmp_path / "page.png"
    assert save_rendering(store, _rendering(put.sha256, len(png)), out) == len(png)
    assert out.read_bytes() == png
    missing = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(ArchiveError, match="cannot read sha256:"):
        save_rendering(store, _rendering(missing, 12), tmp_path / "gone.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.png"]
