"""File-level steps of retiring a legacy folder: is a file safe to remove, remove, link.

No catalog here: the migration runs these in the ingest's worker processes, which must not
import SQLAlchemy (see `storage.file_workers`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from archive_pipelines.blobstore import LocalBlobStore, sha256_file
from archive_pipelines.views import compat_link_target


def removal_problem(store: LocalBlobStore, source: Path | str,
                    recorded: tuple[str, int] | None,
                    *, blob_stat: os.stat_result | None = None,
                    hashed_blobs: set[str] | None = None) -> str | None:
    """Why the legacy file `source` must stay, or None when the store verifiably holds its
    bytes (`recorded` = the catalog's (sha256, size) for it; `blob_stat`, if the caller has
    it, the stat of that blob's file; `hashed_blobs`, blobs this caller already found to hash
    to their names: a blob several files share is read once).

    Verified means: the blob file exists with the catalog's size, and its content hashes to
    the catalog's sha256, and so does the legacy file's (one hash when they are the same
    inode, a hard link: then an edit made through the legacy path changed the blob itself,
    and this check is what notices). Content, never sizes or inodes alone.
    """
    if recorded is None:
        return "not recorded in the catalog"
    sha, size = recorded
    blob = store.object_path(sha)
    try:
        if blob_stat is None:
            blob_stat = os.stat(blob)
        source_stat = os.lstat(source)
    except FileNotFoundError as exc:
        return f"{'blob' if exc.filename == blob else 'file'} missing"
    if blob_stat.st_size != size:
        return f"blob {sha[:12]} has {blob_stat.st_size} bytes, the catalog says {size}"
    if source_stat.st_size != size:
        return f"has {source_stat.st_size} bytes, the catalog says {size}"
    if (blob_stat.st_dev, blob_stat.st_ino) != (source_stat.st_dev, source_stat.st_ino) \
            and sha256_file(source)[0] != sha:
        return "content differs from the catalog's (changed since it was stored?)"
    # Only the blob's read is shared: each file was checked above on its own (a twin that is
    # not the blob's inode is hashed whatever its blob proved for the other).
    if hashed_blobs is not None and sha in hashed_blobs:
        return None
    if sha256_file(blob)[0] != sha:
        return (f"blob {sha[:12]} no longer hashes to its name (the file was changed in place "
                "after it was stored)")
    if hashed_blobs is not None:
        hashed_blobs.add(sha)
    return None


def remove_files(folder: Path, paths: Iterable[Path | str]) -> bool:
    """Unlink `paths`, then every folder left empty under `folder`; True if `folder` is gone."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    for dirpath, _dirs, _files in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)
    return not os.path.lexists(folder)


def link_compat_folder(folder: Path) -> None:
    """Make `archive/<timestamp>` (removed) a relative symlink into `by_timestamp/`.

    The target is the timestamp owner's folder (`views.compat_link_target`), also when the
    folder held a snapshot that does not own its timestamp. Never replaces anything: an
    existing entry (the owner's link, or a folder) makes this fail with FileExistsError.
    """
    os.symlink(compat_link_target(folder.name), folder)
