"""Count the HTTP requests an S3 client sends, by S3 operation: S3 bills per request.

botocore emits `before-send.s3.<Operation>` once per HTTP attempt, after signing, so a
retried request counts once per try, as S3 bills it, and a managed multipart upload
counts its CreateMultipartUpload, each UploadPart and the CompleteMultipartUpload.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# S3 Standard list prices (us-east-1), USD per request: PUT, COPY, POST and LIST are one
# tier, GET, HEAD and the rest the other; DELETE is free. Prices seen 2026-11-28 (see
# bench/s3_requests_bench.py for the sources).
WRITE_TIER_PRICE = 0.005 / 1000
READ_TIER_PRICE = 0.0004 / 1000
FREE_OPERATIONS = frozenset({"DeleteObject", "DeleteObjects", "AbortMultipartUpload"})
WRITE_TIER_OPERATIONS = frozenset({
    "PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
    "CompleteMultipartUpload", "ListObjects", "ListObjectsV2", "ListObjectVersions",
    "ListMultipartUploads", "ListParts", "ListBuckets", "CreateBucket", "PutBucketVersioning",
    "PutObjectTagging", "PutObjectAcl", "PutBucketPolicy", "PutBucketLifecycleConfiguration",
})


class S3RequestCounter:
    """Thread-safe counts of the requests sent through the clients it is attached to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def attach(self, client: S3Client) -> None:
        """Count every request `client` sends from now on (a client counts once per counter)."""
        client.meta.events.register("before-send.s3", self._sent,
                                    unique_id=f"archive-request-counter-{id(self)}")

    def _sent(self, *, event_name: str, **_kwargs: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self._counts[operation] += 1
        # Returning None lets botocore send the request as usual.

    def counts(self) -> dict[str, int]:
        """Requests sent so far, by operation (`PutObject`, `HeadObject`, ...)."""
        with self._lock:
            return dict(self._counts)

    def take(self) -> dict[str, int]:
        """The counts so far, and start again from zero (atomically)."""
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
        return counts


def request_cost(counts: dict[str, int]) -> float:
    """What these requests cost at S3 Standard list prices, in USD (transfer not included)."""
    total = 0.0
    for operation, count in counts.items():
        if operation in FREE_OPERATIONS:
            continue
        total += count * (WRITE_TIER_PRICE if operation in WRITE_TIER_OPERATIONS
                          else READ_TIER_PRICE)
    return total
