"""Turn botocore failures into one clear line naming the store, bucket and blob.

Failures of the store itself (every request would fail alike) raise an `S3StoreError`:
`S3Unavailable` when the endpoint is unreachable, timed out, throttled or failing (5xx)
even after the client's own bounded retries; `S3Refused` when S3 said no (access denied,
no such bucket, rejected credentials, another 4xx), which no retry can change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    FlexibleChecksumError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as S3ConnectionError,
)

from archive_pipelines.blobstore.store_errors import BlobIntegrityError, BlobStoreError

_CREDENTIALS_REJECTED = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch",
                                   "ExpiredToken", "InvalidToken", "TokenRefreshRequired"})
_CHECKSUM_REJECTED = frozenset({"BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"})
# Worth retrying: what botocore's standard retry mode retries, and S3's own spellings.
_TRANSIENT_CODES = frozenset({
    "RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete", "SlowDown",
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled",
    "RequestThrottledException", "TooManyRequestsException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "ServiceUnavailable", "InternalError", "OperationAborted",
})
# Refusals about one object, not the store: the other blobs can still be read or written.
_OBJECT_CODES = frozenset({"NoSuchKey", "NoSuchVersion", "InvalidObjectState",
                           "PreconditionFailed", "InvalidRange", "EntityTooLarge",
                           "EntityTooSmall", "KeyTooLongError"})


class S3StoreError(BlobStoreError):
    """The store itself failed, not one blob: the next request would most likely fail too.

    `writing`: it failed on a write (a store refusing writes may still serve reads).
    """

    transient = False

    def __init__(self, message: str, *, store: str, writing: bool = False) -> None:
        super().__init__(message)
        self.store = store
        self.writing = writing


class S3Unavailable(S3StoreError):
    """Unreachable, timed out, throttled or failing (5xx), still so after the retries."""

    transient = True


class S3Refused(S3StoreError):
    """Access denied, no such bucket, rejected credentials, another 4xx: never retried."""


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def is_transient(exc: ClientError) -> bool:
    """Whether an S3 error response may go away by itself (throttling, timeouts, 5xx)."""
    status = http_status(exc)
    return error_code(exc) in _TRANSIENT_CODES or status >= 500 or status == 429


def describe_client_error(exc: ClientError, *, bucket: str) -> str:
    code = error_code(exc)
    if code == "NoSuchBucket":
        return f"bucket {bucket!r} does not exist"
    if code in _CREDENTIALS_REJECTED:  # also 403s: named before the generic denial
        return f"S3 rejected the credentials ({code}) for bucket {bucket!r}"
    if code in ("AccessDenied", "AllAccessDisabled", "403") or http_status(exc) == 403:
        return f"access denied to bucket {bucket!r}"
    message = str(exc.response.get("Error", {}).get("Message", "")).strip()
    first_line = message.splitlines()[0] if message else ""
    return f"S3 error {code or http_status(exc)} on bucket {bucket!r}" + (
        f": {first_line}" if first_line else "")


def _transport_problem(exc: BotoCoreError) -> str:
    url = urlsplit(str(getattr(exc, "kwargs", {}).get("endpoint_url", "") or ""))
    at = f" {url.scheme}://{url.netloc}" if url.netloc else ""  # not the object's path
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach the S3 endpoint{at}"
    if isinstance(exc, ReadTimeoutError):
        return f"the S3 endpoint{at} did not answer in time"
    if isinstance(exc, S3ConnectionError):
        return f"cannot connect to the S3 endpoint{at}"
    return f"connection to the S3 endpoint{at} failed ({type(exc).__name__})"


@contextmanager
def s3_errors(*, store: str, bucket: str, action: str, writing: bool = False,
              attempts: int = 0) -> Iterator[None]:
    """Re-raise botocore errors as BlobStoreError: `store 'x': <what> while <action>`.

    `attempts`: how many tries the client makes, named when transient errors outlived them.
    """
    try:
        yield
    except BlobStoreError:
        raise
    except (BotoCoreError, ClientError, S3UploadFailedError) as exc:
        raise translate(exc, store=store, bucket=bucket, action=action, writing=writing,
                        attempts=attempts) from exc


def translate(exc: BaseException, *, store: str, bucket: str, action: str,
              writing: bool = False, attempts: int = 0) -> BlobStoreError:
    """The BlobStoreError (integrity, store-level or plain) that a botocore error means."""
    where = f"store {store!r}"
    tries = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
    if isinstance(exc, S3UploadFailedError):  # boto3's managed upload hides the real error
        inner = exc.__cause__ or exc.__context__
        if isinstance(inner, (BotoCoreError, ClientError)):
            return translate(inner, store=store, bucket=bucket, action=action,
                             writing=writing, attempts=attempts)
        return BlobStoreError(f"{where}: {str(exc).splitlines()[0]} while {action}")
    if isinstance(exc, FlexibleChecksumError):
        detail = "s3: checksum mismatch on download"
        return BlobIntegrityError(f"{where}: {detail} while {action}", detail=detail)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return S3Refused(
            f"{where}: no usable AWS credentials for bucket {bucket!r} while {action} "
            "(configure the standard AWS chain: environment, ~/.aws, or an instance role)",
            store=store, writing=writing)
    if isinstance(exc, (S3ConnectionError, HTTPClientError)):
        return S3Unavailable(f"{where}: {_transport_problem(exc)} for bucket {bucket!r} "
                             f"while {action}{tries}", store=store, writing=writing)
    if isinstance(exc, ClientError):
        code = error_code(exc)
        if code in _CHECKSUM_REJECTED:
            detail = f"s3: upload checksum rejected ({code})"
            return BlobIntegrityError(f"{where}: {detail} while {action}", detail=detail)
        problem = describe_client_error(exc, bucket=bucket)
        if code in _OBJECT_CODES:
            return BlobStoreError(f"{where}: {problem} while {action}")
        if is_transient(exc):
            return S3Unavailable(f"{where}: {problem} while {action}{tries}", store=store,
                                 writing=writing)
        return S3Refused(f"{where}: {problem} while {action}", store=store, writing=writing)
    return BlobStoreError(f"{where}: S3 failure on bucket {bucket!r} while {action}: {exc}")
