"""Where an import reads a stored WARC's records from: a local file with the stored bytes.

In a local store that is the blob's own file (the records read are the bytes the store
keeps, as a capture's offset says). A blob in an object store has no local file: the import
reads the file it was given (hashed to the blob's sha256 as it was stored, and checked
unchanged, by its identity, size and mtime, before each batch is committed), or, for a WARC
the store held already (an adopted snapshot's), a verified local copy in the spool folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStore
from archive_pipelines.blobstore.hashing import FileState


class SourceChanged(ArchiveError):
    """A file being imported changed after its bytes were stored."""


@dataclass(frozen=True)
class GivenFile:
    """The file an import was given, as it was when it was stored (`state`)."""

    path: Path
    state: FileState

    @classmethod
    def of(cls, path: Path) -> GivenFile:
        return cls(path, FileState.of(path))


@dataclass(frozen=True)
class ReadableWarc:
    """A local file holding the stored WARC's bytes; `given` when it is the import's own
    source file (not the store's), which must stay as it was stored."""

    path: Path
    given: GivenFile | None = None

    def check(self) -> None:
        """SourceChanged unless the file is still the one stored (a no-op for the store's own
        file or a verified copy)."""
        if self.given is None:
            return
        try:
            now = FileState.of(self.path)
        except OSError as exc:
            raise SourceChanged(f"{self.path} went away while it was imported ({exc}); "
                                "the records read before stay imported: import it again") from None
        if now != self.given.state:
            raise SourceChanged(f"{self.path} changed while it was imported (its stored copy "
                                "is the file as it was); import the file again once it is "
                                "complete")


@contextmanager
def readable_warc(store: BlobStore, sha256: str, *, given: GivenFile | None,
                  spool_dir: Path) -> Iterator[ReadableWarc]:
    """A readable local file of the stored WARC `sha256` (see the module docstring)."""
    local = store.local_path(sha256)
    if local is not None:
        yield ReadableWarc(local)
    elif given is not None:
        yield ReadableWarc(given.path, given)
    else:
        spool_dir.mkdir(parents=True, exist_ok=True)
        with store.local_copy(sha256, spool_dir=spool_dir) as copy:
            yield ReadableWarc(copy)
