"""Where a local store keeps its objects (`<root>/sha256/ab/cd/<hash>[.zst]`, temp files
under `<root>/tmp/`), and how to list them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from archive_pipelines.blobstore.keys import (
    SUFFIXES,
    Codec,
    blob_key,
    check_hex_prefix,
    check_sha256,
    hash_from_key,
)

STAGING = "tmp"  # streams of unknown hash are written here, then linked into place


class ObjectTree:
    """The object paths of a local store at `root` for `codec`."""

    def __init__(self, root: Path, codec: Codec) -> None:
        self.root = root
        self.codec = codec
        self.staging = root / STAGING
        self._objects = f"{root}/sha256/"
        self._suffix = SUFFIXES[codec]

    def path(self, sha256: str) -> Path:
        """The object's path (the hash validated)."""
        return self.root / blob_key(sha256, self.codec)

    def object_path(self, sha256: str) -> str:
        """`path` as a string, cheaper for callers that go through many blobs."""
        check_sha256(sha256)
        return self.unchecked_path(sha256)

    def unchecked_path(self, sha256: str) -> str:
        """`object_path` for a hash the store computed itself (not validated)."""
        return f"{self._objects}{sha256[:2]}/{sha256[2:4]}/{sha256}{self._suffix}"

    def exists(self, sha256: str) -> bool:
        # A string path and one stat: the crawler asks this for every body it fetches, and
        # building a Path cost more than the stat (bench/existence_bench.py).
        check_sha256(sha256)
        return os.path.isfile(self.unchecked_path(sha256))

    def iter_hashes(self, prefix: str = "") -> Iterator[str]:
        """The hashes of the objects stored, in order, those starting with `prefix`."""
        check_hex_prefix(prefix)
        for first, second in self._leaf_dirs(prefix):
            for name in _sorted_names(self.root / "sha256" / first / second, dirs=False):
                sha256 = hash_from_key(f"sha256/{first}/{second}/{name}", self.codec)
                if sha256 is not None and sha256.startswith(prefix):
                    yield sha256

    def temp_dirs(self) -> list[Path]:
        """The folders temp files are written in: the staging folder and every leaf."""
        return [self.staging, *(self.root / "sha256" / a / b for a, b in self._leaf_dirs(""))]

    def _leaf_dirs(self, prefix: str) -> Iterator[tuple[str, str]]:
        top = self.root / "sha256"
        for first in _sorted_names(top, dirs=True):
            if first.startswith(prefix[:2]):
                for second in _sorted_names(top / first, dirs=True):
                    if second.startswith(prefix[2:4]):
                        yield first, second


def _sorted_names(directory: Path, *, dirs: bool) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) == dirs)
    except FileNotFoundError:
        return []
