"""The symlink farm under archive/: create, inspect, remove and walk view links."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.views.paths import link_target


@dataclass(frozen=True)
class LinkState:
    """What is at a link path: ok, missing, wrong (points elsewhere), broken, or conflict."""

    status: str
    current_target: str | None = None


class ViewFarm:
    """Relative symlinks from archive/<view path> into the primary store.

    `store_root` is the primary store's directory; blob keys are paths inside it.
    Nothing here writes outside `archive_root`.
    """

    def __init__(self, archive_root: Path, store_root: Path) -> None:
        self.archive_root = Path(os.path.abspath(archive_root))
        self.store_root = Path(os.path.abspath(store_root))
        self.store_rel = os.path.relpath(self.store_root, self.archive_root)
        self._root = str(self.archive_root) + "/"

    def target_for(self, link_rel: str, key: str) -> str:
        return link_target(link_rel, self.store_rel, key)

    def ensure_link(self, link_rel: str, key: str) -> str:
        """Create the link, or fix it if it points elsewhere. Returns created|ok|fixed|conflict."""
        target = self.target_for(link_rel, key)
        path = self._root + link_rel
        try:
            os.symlink(target, path)
            return "created"
        except FileNotFoundError:
            self._make_parents(link_rel)
            try:
                os.symlink(target, path)
                return "created"
            except FileExistsError:
                pass
        except FileExistsError:
            pass
        except NotADirectoryError:
            return "conflict"
        try:
            current = os.readlink(path)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # a real file or folder: never clobber user data
                return "conflict"
            raise
        if current == target:
            return "ok"
        self._replace_link(path, target)
        return "fixed"

    def inspect(self, link_rel: str, key: str) -> LinkState:
        path = self._root + link_rel
        try:
            current = os.readlink(path)
        except FileNotFoundError:
            return LinkState("missing")
        except NotADirectoryError:
            return LinkState("conflict")
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return LinkState("conflict")
            raise
        if current != self.target_for(link_rel, key):
            return LinkState("wrong", current)
        if not os.path.exists(path):
            return LinkState("broken", current)
        return LinkState("ok", current)

    def remove_link(self, link_rel: str, *, prune: bool = True) -> bool:
        """Remove a symlink (never a real file) and, optionally, emptied parent folders."""
        path = self._root + link_rel
        try:
            if not os.path.islink(path):
                return False
            os.unlink(path)
        except FileNotFoundError:
            return False
        if prune:
            self.prune_empty_parents(link_rel)
        return True

    def prune_empty_parents(self, link_rel: str) -> None:
        parent = os.path.dirname(link_rel)
        while "/" in parent:  # keep the view roots themselves
            try:
                os.rmdir(os.path.join(self.archive_root, parent))
            except OSError:
                return
            parent = os.path.dirname(parent)

    def iter_links(self, view: str) -> Iterator[tuple[str, str]]:
        """Every symlink under archive/<view>/ as (archive-relative path, target). No follow."""
        root = self.archive_root / view
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                if entry.is_symlink():
                    rel = os.path.relpath(entry.path, self.archive_root)
                    yield rel, os.readlink(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))

    def remove_empty_dirs(self, view: str) -> int:
        """Remove empty folders under archive/<view>/ (bottom-up); returns how many."""
        removed = 0
        root = self.archive_root / view
        for dirpath, _dirs, _files in os.walk(root, topdown=False):
            if dirpath == str(root):
                continue
            try:
                os.rmdir(dirpath)
                removed += 1
            except OSError:
                continue
        return removed

    def _make_parents(self, link_rel: str) -> None:
        # Only called after symlink() failed with ENOENT, so the folder is really missing.
        os.makedirs(os.path.join(self.archive_root, os.path.dirname(link_rel)), exist_ok=True)

    @staticmethod
    def _replace_link(path: str, target: str) -> None:
        tmp = f"{path}.tmp-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, path)
