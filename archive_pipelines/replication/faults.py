"""Store-level faults: the failures that take a store out for the rest of a run.

A failure of one object (a corrupt or missing blob, a checksum rejected) stays with that
object. A failure of the store itself (unreachable or failing after the S3 client's bounded
retries, access denied, no such bucket, a full or read-only disk) would repeat for every
object: the store is reported once and skipped, so a run never waits on it again.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from archive_pipelines.blobstore.s3_errors import S3StoreError
from archive_pipelines.replication.report import one_line

# A local destination that cannot take any more writes.
_WRITES_REFUSED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


@dataclass(frozen=True)
class StoreFault:
    """One store out for the run, and why (one line)."""

    store: str
    reason: str
    transient: bool  # unreachable or failing (True), or refused (False)
    writes_only: bool = False  # it refused writes: it may still be read


def store_fault(exc: BaseException, *, writing_to: str | None = None) -> StoreFault | None:
    """The store-level fault behind `exc`, or None when it concerns one object only.

    `writing_to`: the store a failed write went to (local disk errors do not name it).
    """
    if isinstance(exc, S3StoreError):
        return StoreFault(exc.store, one_line(exc), exc.transient,
                          writes_only=exc.writing and not exc.transient)
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    if writing_to is not None and isinstance(cause, OSError) and cause.errno in _WRITES_REFUSED:
        return StoreFault(writing_to, one_line(exc), transient=False, writes_only=True)
    return None
