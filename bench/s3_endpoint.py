"""An S3 bucket for a benchmark: on `S3_ENDPOINT_URL` if set, else on a throwaway moto_server."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

from archive_testkit.servers import LocalMotoServer


@contextlib.contextmanager
def bench_bucket(prefix: str) -> Iterator[tuple[str, str]]:
    """(endpoint URL, a new bucket named `prefix-<random>`); a moto_server started here is
    stopped on exit. Credentials default to dummies (moto checks none)."""
    endpoint = os.environ.get("S3_ENDPOINT_URL")
    moto = None if endpoint else LocalMotoServer().start()
    try:
        endpoint = endpoint or (moto.url if moto else "")
        for var, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench"),
                           ("AWS_DEFAULT_REGION", "us-east-1")):
            os.environ.setdefault(var, value)
        import boto3

        bucket = f"{prefix}-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=bucket)
        yield endpoint, bucket
    finally:
        if moto is not None:
            moto.stop()
