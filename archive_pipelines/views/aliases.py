"""The primary store's alias index (`<store>/s/xy/<alias>`): hard links of the blob files
under short names, which the views' file links point at through their `.s` anchor.

Every blob has its plain alias (`xy/<name>`); a blob that a view shows under a name with an
extension a browser reads (`views.paths.ALIAS_EXTENSIONS`) also has the alias with that
extension (`xy/<name>.html`), which that file link points at: the browser takes a file's type
from the path with symlinks resolved. A blob has one alias per such extension it is shown with.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from archive_pipelines.views.paths import ALIAS_DIR, ALIAS_EXTENSIONS, blob_alias

# Every extension an alias can have: the plain alias first.
_ALL_EXTENSIONS = ("", *ALIAS_EXTENSIONS)


class AliasIndex:
    """Hard links of blob files under `<store_root>/s/`; the only writes a view farm makes
    inside the store."""

    def __init__(self, store_root: Path) -> None:
        self.root = Path(os.path.abspath(store_root)) / ALIAS_DIR
        self._prefix = str(self.root) + "/"

    def path(self, sha256: str, ext: str = "") -> str:
        """Where the alias of `sha256` with extension `ext` is (whether or not it exists)."""
        return self._prefix + blob_alias(sha256, ext)

    def ensure(self, sha256: str, blob_path: Path | str | None, *, ext: str = "") -> str:
        """Hard-link the blob file under its alias (the one with `ext`).
        Returns created|ok|fixed|missing_blob."""
        if blob_path is None:
            return "missing_blob"
        alias = self.path(sha256, ext)
        for _attempt in range(2):
            try:
                os.link(blob_path, alias)
                return "created"
            except FileNotFoundError:
                if not os.path.exists(blob_path):
                    return "missing_blob"
                os.makedirs(os.path.dirname(alias), exist_ok=True)
            except FileExistsError:
                if same_file(alias, blob_path):
                    return "ok"
                tmp = f"{alias}.tmp-{os.getpid()}-{threading.get_ident()}"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                os.link(blob_path, tmp)
                os.replace(tmp, alias)
                return "fixed"
        os.link(blob_path, alias)
        return "created"

    def is_ok(self, sha256: str, blob_path: Path | str | None, *, ext: str = "") -> bool:
        """Whether the alias of `sha256` (the one with `ext`) is a hard link of `blob_path`."""
        return blob_path is not None and same_file(self.path(sha256, ext), blob_path)

    def extensions(self, sha256: str) -> list[str]:
        """The extensions of the aliases `sha256` has ("" for the plain one)."""
        return [ext for ext in _ALL_EXTENSIONS if os.path.lexists(self.path(sha256, ext))]

    def refresh(self, sha256: str, blob_path: Path | str | None) -> list[str]:
        """Make every alias `sha256` has, and its plain one, hard links of `blob_path` again
        (after the blob file was replaced: restored from a replica or an alias). Returns the
        extensions of the aliases that were missing or stale."""
        return [ext for ext in dict.fromkeys(("", *self.extensions(sha256)))
                if self.ensure(sha256, blob_path, ext=ext) in ("created", "fixed")]

    def remove(self, sha256: str) -> list[str]:
        """Remove every alias of `sha256`; returns their extensions ("" for the plain one)."""
        removed = []
        for ext in _ALL_EXTENSIONS:
            try:
                os.unlink(self.path(sha256, ext))
                removed.append(ext)
            except FileNotFoundError:
                continue
        return removed

    def __iter__(self) -> Iterator[str]:
        """Every alias file path in the index."""
        try:
            fans = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for fan in fans:
            if fan.is_dir(follow_symlinks=False):
                with os.scandir(fan.path) as entries:
                    yield from (e.path for e in entries if e.is_file(follow_symlinks=False))


class NoAliases(AliasIndex):
    """The alias index of a primary that is not a local folder (an S3 bucket): no view links
    into it (the settings allow none), so there is nothing to make, check or remove."""

    def __init__(self) -> None:  # no folder (the view farm refuses to anchor a view)
        self.root = Path("/nonexistent")
        self._prefix = ""

    def path(self, sha256: str, ext: str = "") -> str:
        raise RuntimeError("the primary store is not a local folder: it has no alias index "
                           "(and no symlink views)")

    def ensure(self, sha256: str, blob_path: Path | str | None, *, ext: str = "") -> str:
        return "ok"

    def is_ok(self, sha256: str, blob_path: Path | str | None, *, ext: str = "") -> bool:
        return True

    def extensions(self, sha256: str) -> list[str]:
        return []

    def refresh(self, sha256: str, blob_path: Path | str | None) -> list[str]:
        return []

    def remove(self, sha256: str) -> list[str]:
        return []

    def __iter__(self) -> Iterator[str]:
        return iter(())


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether `a` and `b` are the same inode (False if either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
