"""Turn database constraint violations into one clear line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import IntegrityError, OperationalError

from archive_pipelines.archive_error import CatalogError

# Constraint name (or a fragment the driver reports) -> what it means to a person.
_MEANINGS = {
    "uq_snapshot_file_path": "a file already exists at this (snapshot, relative_path)",
    "snapshot_file.snapshot_id, snapshot_file.relative_path": (
        "a file already exists at this (snapshot, relative_path)"
    ),
    "ck_blob_ref_count_nonnegative": "a blob's ref_count cannot go below 0",
    "blob_sha256_key": "a blob with this sha256 already exists",
    "blob.sha256": "a blob with this sha256 already exists",
    "ck_blob_sha256_length": "a blob's sha256 must be 64 hex characters",
    "ck_blob_size_nonnegative": "a blob's size cannot be negative",
    "blob_copy_pkey": "this (blob, store) copy already exists",
    "blob_copy.blob_id, blob_copy.store_id": "this (blob, store) copy already exists",
    "ck_blob_copy_status": "copy status must be missing, ongoing, present or corrupted",
    "store_name_key": "a store with this name already exists",
    "store.name": "a store with this name already exists",
    "tag_name_key": "a tag with this name already exists",
    "tag.name": "a tag with this name already exists",
    "FOREIGN KEY": "a referenced row does not exist (or is still referenced)",
    "foreign key": "a referenced row does not exist (or is still referenced)",
}


def describe_integrity_error(exc: IntegrityError) -> str:
    text = str(exc.orig)
    for fragment, meaning in _MEANINGS.items():
        if fragment in text:
            return f"catalog constraint violated: {meaning}"
    first_line = text.strip().splitlines()[0] if text.strip() else type(exc.orig).__name__
    return f"catalog constraint violated: {first_line}"


@contextmanager
def clear_catalog_errors() -> Iterator[None]:
    """Re-raise constraint and connection errors as `CatalogError` with a readable message."""
    try:
        yield
    except IntegrityError as exc:
        raise CatalogError(describe_integrity_error(exc)) from exc
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise CatalogError(f"catalog error: {reason}") from exc
