"""The primary store's alias index (`<store>/s/xy/<alias>`): hard links of the blob files
under short names, which the views' file links point at through their `.s` anchor."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from archive_pipelines.views.paths import ALIAS_DIR, blob_alias


class AliasIndex:
    """Hard links of blob files under `<store_root>/s/`; the only writes a view farm makes
    inside the store."""

    def __init__(self, store_root: Path) -> None:
        self.root = Path(os.path.abspath(store_root)) / ALIAS_DIR
        self._prefix = str(self.root) + "/"

    def path(self, sha256: str) -> str:
        """Where the alias of `sha256` is (whether or not it exists)."""
        return self._prefix + blob_alias(sha256)

    def ensure(self, sha256: str, blob_path: Path) -> str:
        """Hard-link the blob file under its alias. Returns created|ok|fixed|missing_blob."""
        alias = self.path(sha256)
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

    def is_ok(self, sha256: str, blob_path: Path) -> bool:
        """Whether the alias of `sha256` is a hard link of `blob_path`."""
        return same_file(self.path(sha256), blob_path)

    def remove(self, sha256: str) -> bool:
        """Remove the alias of `sha256`; False if there was none."""
        try:
            os.unlink(self.path(sha256))
            return True
        except FileNotFoundError:
            return False

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


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether `a` and `b` are the same inode (False if either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
