"""The `organize` step for one folder: flat legacy files -> per-extractor folders, in place.

Two phases so a batch can make its copies durable once before removing anything:
`place()` copies every file to its organized path (a hard link when the filesystem allows,
else a fsynced copy) and verifies it (same inode, or same size and sha256); `remove()`
deletes the verified flat originals and the folders they emptied. A destination that already
holds the same bytes counts as copied (a resumed step); one with other bytes is an error
for that file and is never overwritten. Unknown files keep their place (`legacy.layout`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.blobstore.local_files import LINK_UNSUPPORTED
from archive_pipelines.legacy.layout import FileMove, display_path, iter_organize
from archive_pipelines.migration.folders import TEMP_SUFFIX, is_partial


@dataclass
class FolderOrganizer:
    """Organize `folder` (wget host folders are matched against `url`)."""

    folder: Path
    url: str | None
    copied: int = 0  # files placed at their organized path by this run
    in_place: int = 0  # files found already organized, or already copied by an earlier run
    left_alone: int = 0  # symlinks and special files, never followed or moved
    errors: list[str] = field(default_factory=list)
    blocked: bool = False  # a destination folder is blocked by a file that moves this run
    _verified: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def place(self) -> None:
        """Copy and verify every file that moves; nothing is removed yet."""
        for item in iter_organize(self.folder, self.url):
            if not isinstance(item, FileMove):
                if item.rel_path == ".":
                    self.errors.append(f"folder: {item.reason}")
                elif item.reason.startswith(("unreadable", "vanished")):
                    self.errors.append(f"{display_path(item.rel_path)}: {item.reason}")
                else:
                    self.left_alone += 1
                continue
            if is_partial(item.src_rel):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.folder / item.src_rel)  # a temp file of ours, left by a crash
                continue
            if item.is_noop:
                self.in_place += 1
                continue
            self._place_one(item)

    def _place_one(self, move: FileMove) -> None:
        src, dst = self.folder / move.src_rel, self.folder / move.dst_rel
        try:
            source = os.lstat(src)
            _make_parents(self.folder, move.dst_rel)
            try:
                target: os.stat_result | None = os.lstat(dst)
            except FileNotFoundError:
                target = None
            if target is None:
                _copy(src, dst)
                target = os.lstat(dst)
                self.copied += 1
            else:
                self.in_place += 1
            problem = _difference(src, source, dst, target)
        except (NotADirectoryError, FileExistsError) as exc:
            self.blocked = True  # e.g. flat file `dom` still sits where folder `dom/` goes
            problem = f"destination folder blocked ({exc.strerror}); retried once it moved"
        except OSError as exc:
            problem = exc.strerror or str(exc)
        if problem is None:
            self._verified.append(move.src_rel)
        else:
            self.errors.append(f"{display_path(move.src_rel)} -> {display_path(move.dst_rel)}: {problem}")

    def remove(self) -> None:
        """Delete the verified flat originals and any folder that removal emptied."""
        emptied: set[Path] = set()
        for rel in self._verified:
            path = self.folder / rel
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                self.errors.append(f"{display_path(rel)}: copied but not removed: {exc.strerror}")
                continue
            emptied.add(path.parent)
        for parent in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
            while parent != self.folder and self.folder in parent.parents:
                try:
                    os.rmdir(parent)
                except OSError:
                    break
                parent = parent.parent
        self._verified = []


def _make_parents(folder: Path, dst_rel: str) -> None:
    """Create the folders leading to `dst_rel`, refusing to go through a symlink (a hostile
    `dom -> /etc` must not make organize write outside the snapshot folder)."""
    current = folder
    for part in dst_rel.split("/")[:-1]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            os.mkdir(current)
            continue
        if stat.S_ISLNK(mode):
            raise OSError(errno.ELOOP, "a folder on the way is a symlink; not followed", str(current))
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(current))


def _copy(src: Path, dst: Path) -> None:
    """A hard link when possible (no bytes copied), else a fsynced copy renamed into place."""
    try:
        os.link(src, dst, follow_symlinks=False)
        return
    except OSError as exc:
        if exc.errno not in LINK_UNSUPPORTED:
            raise
    temp = dst.with_name(dst.name + TEMP_SUFFIX)
    with open(src, "rb") as reader, open(temp, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)
        writer.flush()
        os.fsync(writer.fileno())
    if os.path.lexists(dst):
        os.unlink(temp)
        raise OSError(errno.EEXIST, "destination appeared during the copy", str(dst))
    os.rename(temp, dst)


def _difference(src: Path, source: os.stat_result, dst: Path, target: os.stat_result) -> str | None:
    """None if `dst` verifiably holds `src`'s bytes, else what differs."""
    if not stat.S_ISREG(target.st_mode):
        return "destination exists and is not a regular file; left as is"
    if (source.st_dev, source.st_ino) == (target.st_dev, target.st_ino):
        return None
    if source.st_size != target.st_size or sha256_file(src)[0] != sha256_file(dst)[0]:
        return "destination exists with different content; not overwritten"
    return None
