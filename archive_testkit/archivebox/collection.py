"""`generate_collection`: the one way to write a generated ArchiveBox collection."""

from __future__ import annotations

from pathlib import Path
from typing import overload

from archive_testkit.archivebox.aged07.aged_writer import write_aged07
from archive_testkit.archivebox.aged07.model import Collection07
from archive_testkit.archivebox.layouts import Aged07, ReleaseMix
from archive_testkit.archivebox.releases.collection_manifest import Manifest
from archive_testkit.archivebox.releases.mix_writer import write_release_mix


@overload
def generate_collection(root: Path, layout: Aged07, *, snapshots: int, seed: int = 0) -> Collection07: ...


@overload
def generate_collection(root: Path, layout: ReleaseMix, *, snapshots: int, seed: int = 0) -> Manifest: ...


def generate_collection(
    root: Path, layout: Aged07 | ReleaseMix, *, snapshots: int, seed: int = 0
) -> Collection07 | Manifest:
    """Write a collection of `snapshots` folders in `layout` under `root`, deterministically from `seed`.

    `Aged07` returns the `Collection07` (what SQLite and every index.json say);
    `ReleaseMix` returns the `Manifest` (every folder and every file's sha256).
    """
    if isinstance(layout, Aged07):
        return write_aged07(Path(root), layout, snapshots=snapshots, seed=seed)
    if isinstance(layout, ReleaseMix):
        return write_release_mix(Path(root), layout, snapshots=snapshots, seed=seed)
    raise TypeError(f"no ArchiveBox collection layout {layout!r}; pass Aged07(...) or ReleaseMix(...)")
