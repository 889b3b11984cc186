"""The symlink farm under archive/: create, inspect, remove and walk view links.

File links are short relative symlinks `<ups>/.s/<alias>`: `.s` is an anchor symlink in the
view root pointing at the primary store's alias index (`views.aliases`: `<store>/s/xy/<alias>`, hard links of
the `sha256/ab/cd/<hash>` files). A link named `*.html` points at the alias `xy/<name>.html`, so a
browser opening it from disk sees an HTML file (`views.paths.alias_extension`). Short targets
stay inside the inode (see views.paths).
Folder links (`views.folder_links`) point a snapshot's folder in one view at its folder in
the file view.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator, Set
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.views.aliases import AliasIndex, NoAliases
from archive_pipelines.views.paths import ANCHOR, alias_extension, link_target


@dataclass(frozen=True)
class LinkState:
    """What is at a link path: ok, missing, wrong (points elsewhere), broken, or conflict."""

    status: str
    current_target: str | None = None


_MADE_MAX = 65536


class ViewFarm:
    """Symlinks from archive/<view path> into the primary store. Writes stay in archive/
    and in the store's alias index (`aliases`)."""

    def __init__(self, archive_root: Path, store_root: Path | None) -> None:
        """`store_root` None: the primary is not a local folder (S3); the farm then has no
        alias index (`NoAliases`) and no view may be enabled (the settings see to it)."""
        self.archive_root = Path(os.path.abspath(archive_root))
        self.store_root = Path(os.path.abspath(store_root)) if store_root is not None else None
        self.aliases = AliasIndex(self.store_root) if self.store_root is not None else NoAliases()
        self._root = str(self.archive_root) + "/"
        self._anchored: set[str] = set()
        self._made: set[str] = set()  # folders this farm made lately (`_make_parents`)
        self._anchor_lock = threading.Lock()

    # -- links ------------------------------------------------------------------------

    def target_for(self, link_rel: str, sha256: str, ext: str | None = None) -> str:
        return link_target(link_rel, sha256, ext)

    def ensure_anchor(self, view: str) -> None:
        """The view root's `.s` symlink to the alias index (once per farm and view)."""
        if view in self._anchored:
            return
        with self._anchor_lock:
            if view not in self._anchored:
                self._make_anchor(view)
                self._anchored.add(view)

    def _make_anchor(self, view: str) -> None:
        if self.store_root is None:
            raise RuntimeError(f"view {view!r}: the primary store is not a local folder (an S3 "
                               "primary has no symlink views)")
        view_root = self.archive_root / view
        view_root.mkdir(parents=True, exist_ok=True)
        anchor = view_root / ANCHOR
        target = os.path.relpath(self.aliases.root, view_root)
        self.aliases.root.mkdir(parents=True, exist_ok=True)
        try:
            current: str | None = os.readlink(anchor)
        except FileNotFoundError:
            current = None
        if current != target:
            self._replace_link(str(anchor), target)

    def ensure_link(self, link_rel: str, sha256: str, ext: str | None = None) -> str:
        """Create the file link, or fix it if it points elsewhere; to the blob's alias with
        extension `ext`, by default the link name's. Returns created|ok|fixed|conflict."""
        self.ensure_anchor(link_rel.partition("/")[0])
        return self._ensure_symlink(link_rel, link_target(link_rel, sha256, ext))

    def ensure_file_link(self, link_rel: str, sha256: str, blob_path: str | Path,
                         *, ext: str | None = None) -> str:
        """`ensure_link`, and the alias the link points at when that is missing (an ingest
        killed before its aliases, a blob newly shown with that extension, or a link of an
        earlier version now pointed at the alias with its extension); then the blob's plain
        alias too, which every blob has. One stat per link. Returns created|ok|fixed|conflict
        (the link's outcome). `ext` as for `ensure_link`."""
        outcome = self.ensure_link(link_rel, sha256, ext)
        if outcome != "conflict":
            if ext is None:
                ext = alias_extension(link_rel)
            if not os.path.exists(self.aliases.path(sha256, ext)):
                self.aliases.ensure(sha256, blob_path, ext=ext)
                if ext and not os.path.exists(self.aliases.path(sha256)):
                    self.aliases.ensure(sha256, blob_path)
        return outcome

    def ensure_folder_link(self, link_rel: str, target: str) -> str:
        """Create a snapshot's folder link (`views.folder_links`), or fix it.

        A real folder in its place that holds only links and folders (the per-file layout
        of earlier versions) is replaced by the link; one holding anything else is left
        alone and reported as a conflict. Returns created|ok|fixed|conflict."""
        outcome = self._ensure_symlink(link_rel, target)
        if outcome == "conflict" and os.path.isdir(self._root + link_rel) and \
                _clear_link_tree(self._root + link_rel):
            return self._ensure_symlink(link_rel, target)
        return outcome

    def ensure_entry(self, path_rel: str, target: str | None) -> str:
        """Create what a snapshot folder held besides files (`snapshot_entry`): its own
        symlink with the original `target`, or with `target` None an empty folder. Returns
        created|ok|fixed|conflict (never clobbers a file)."""
        if target is not None:
            return self._ensure_symlink(path_rel, target)
        path = self._root + path_rel
        if os.path.isdir(path) and not os.path.islink(path):
            return "ok"
        try:
            os.makedirs(path)
        except FileExistsError:
            return "conflict"  # a file or a link is where the folder goes
        return "created"

    def entry_ok(self, path_rel: str, target: str | None) -> LinkState:
        """The state of a snapshot's own symlink or empty folder."""
        if target is not None:
            return self.inspect_target(path_rel, target)
        path = self._root + path_rel
        if os.path.isdir(path) and not os.path.islink(path):
            return LinkState("ok", None)
        return LinkState("conflict" if os.path.lexists(path) else "missing", None)

    def _ensure_symlink(self, link_rel: str, target: str) -> str:
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

    def inspect(self, link_rel: str, sha256: str, ext: str | None = None) -> LinkState:
        """The state of a file link (to the alias with `ext`, as for `ensure_link`)."""
        return self.inspect_target(link_rel, link_target(link_rel, sha256, ext))

    def inspect_target(self, link_rel: str, target: str) -> LinkState:
        """The state of a link that should point at `target` (a file or folder link)."""
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
        if current != target:
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
                os.rmdir(self._root + parent)
            except OSError:
                return
            parent = os.path.dirname(parent)

    def iter_links(self, view: str) -> Iterator[tuple[str, str]]:
        """Every symlink under archive/<view>/ as (archive-relative path, target), except the
        anchor. Never follows links."""
        root = str(self.archive_root / view)
        stack = [root]
        prefix = len(self._root)
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                if entry.is_symlink():
                    if folder == root and entry.name == ANCHOR:
                        continue
                    yield entry.path[prefix:], os.readlink(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)

    def remove_empty_dirs(self, view: str, keep: Set[str] = frozenset()) -> int:
        """Remove empty folders under archive/<view>/ (bottom-up), except those in `keep`
        (archive/-relative: empty folders snapshots had); returns how many."""
        removed = 0
        root = self.archive_root / view
        for dirpath, _dirs, _files in os.walk(root, topdown=False):
            if dirpath == str(root) or dirpath[len(self._root):] in keep:
                continue
            try:
                os.rmdir(dirpath)
                removed += 1
            except OSError:
                continue
        return removed

    def _make_parents(self, link_rel: str) -> None:
        # Only called after symlink() failed with ENOENT, so the folder is really missing.
        # A snapshot's folders are made one after another: when the parent is one this farm
        # made (and nothing removed since), one mkdir does, not makedirs' walk up.
        folder = self._root + os.path.dirname(link_rel)
        parent = os.path.dirname(folder)
        made = self._made
        if parent in made:
            try:
                os.mkdir(folder)
            except FileExistsError:
                pass
            except FileNotFoundError:  # removed behind our back
                made.clear()
                os.makedirs(folder, exist_ok=True)
        else:
            os.makedirs(folder, exist_ok=True)
            made.add(parent)  # exists now too: the snapshot's next folder needs one mkdir
        if len(made) >= _MADE_MAX:
            made.clear()
        made.add(folder)

    @staticmethod
    def _replace_link(path: str, target: str) -> None:
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        _unlink_quietly(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, path)


def _clear_link_tree(folder: str) -> bool:
    """Remove a real folder that holds nothing but symlinks and folders. False when it holds
    anything else (then nothing is removed) or cannot be cleared."""
    links: list[str] = []
    folders: list[str] = []  # deepest first
    try:
        for dirpath, dirnames, filenames in os.walk(folder, topdown=False, onerror=_raise):
            for name in (*filenames, *dirnames):
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    links.append(path)
                elif name in filenames:
                    return False
                else:
                    folders.append(path)
        for path in links:
            os.unlink(path)
        for path in (*folders, folder):
            os.rmdir(path)
    except OSError:
        return False
    return True


def _raise(exc: OSError) -> None:
    raise exc


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
