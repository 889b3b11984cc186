"""Turn botocore failures into one clear line naming the store, bucket and blob."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    FlexibleChecksumError,
    NoCredentialsError,
    PartialCredentialsError,
)

from archive_pipelines.blobstore.errors import BlobIntegrityError, BlobStoreError

_CREDENTIALS_REJECTED = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch",
                                   "ExpiredToken", "InvalidToken", "TokenRefreshRequired"})
_CHECKSUM_REJECTED = frozenset({"BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"})


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def describe_client_error(exc: ClientError, *, bucket: str) -> str:
    code = error_code(exc)
    if code == "NoSuchBucket":
        return f"bucket {bucket!r} does not exist"
    if code in ("AccessDenied", "AllAccessDisabled", "403") or http_status(exc) == 403:
        return f"access denied to bucket {bucket!r}"
    if code in _CREDENTIALS_REJECTED:
        return f"S3 rejected the credentials ({code}) for bucket {bucket!r}"
    message = str(exc.response.get("Error", {}).get("Message", "")).strip()
    first_line = message.splitlines()[0] if message else ""
    return f"S3 error {code or http_status(exc)} on bucket {bucket!r}" + (
        f": {first_line}" if first_line else "")


@contextmanager
def s3_errors(*, store: str, bucket: str, action: str) -> Iterator[None]:
    """Re-raise botocore errors as BlobStoreError: `store 'x': <what> while <action>`."""
    where = f"store {store!r}"
    try:
        yield
    except BlobStoreError:
        raise
    except FlexibleChecksumError as exc:
        detail = "s3: checksum mismatch on download"
        raise BlobIntegrityError(f"{where}: {detail} while {action}", detail=detail) from exc
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise BlobStoreError(
            f"{where}: no usable AWS credentials for bucket {bucket!r} while {action} "
            "(configure the standard AWS chain: environment, ~/.aws, or an instance role)"
        ) from exc
    except EndpointConnectionError as exc:
        raise BlobStoreError(f"{where}: cannot reach the S3 endpoint "
                             f"{exc.kwargs.get('endpoint_url', '')} for bucket {bucket!r} "
                             f"while {action}") from exc
    except ClientError as exc:
        if error_code(exc) in _CHECKSUM_REJECTED:
            detail = f"s3: upload checksum rejected ({error_code(exc)})"
            raise BlobIntegrityError(f"{where}: {detail} while {action}", detail=detail) from exc
        raise BlobStoreError(f"{where}: {describe_client_error(exc, bucket=bucket)} "
                             f"while {action}") from exc
    except BotoCoreError as exc:
        raise BlobStoreError(f"{where}: S3 failure on bucket {bucket!r} while {action}: "
                             f"{exc}") from exc
