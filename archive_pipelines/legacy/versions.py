"""Filesystem versions of a snapshot folder, how to recognise them, and the steps between them.

Legacy labels name the first ArchiveBox release that wrote each `index.json` shape; every
legacy layout is the same flat folder, so the hops between them move no files. `organized`
labels folders an earlier version of this project regrouped per extractor. The one real
step is `to_cas` (blobs + views, every file at the path it has): a per-extractor grouping
is catalog metadata, never a move.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

# The labels are the catalog's vocabulary (`catalog.fs_versions`); this module knows how to
# recognise them in a folder and what lies between them.
from archive_pipelines.catalog import CAS, FS_VERSIONS, ORGANIZED, V0_4, V0_6, V0_8, V0_8_3, V0_9
from archive_pipelines.legacy.fields import looks_like_timestamp
from archive_pipelines.views.paths import SnapshotPlace, view_dir

CURRENT_VERSION = CAS

TO_CAS = "to_cas"
NOOP = "noop"

# Steps that move files; every other hop of the chain only relabels the folder.
_REAL_STEPS: Mapping[tuple[str, str], str] = {
    (ORGANIZED, CAS): TO_CAS,
}


@dataclass(frozen=True)
class MigrationStep:
    """One hop of the chain: `name` is `to_cas` or `noop`."""

    name: str
    source: str
    target: str

    @property
    def is_noop(self) -> bool:
        return self.name == NOOP


def version_rank(version: str) -> int:
    """Position of `version` in the chain; a `ValueError` for an unknown label."""
    try:
        return FS_VERSIONS.index(version)
    except ValueError:
        known = ", ".join(FS_VERSIONS)
        raise ValueError(f"unknown fs_version {version!r}; known: {known}") from None


def is_legacy(version: str) -> bool:
    """True for the flat ArchiveBox layouts (before `organized`)."""
    return version_rank(version) < version_rank(ORGANIZED)


def detect_version(index: Mapping[str, Any]) -> str:
    """The fs_version of a parsed index.json, from the fields each release writes.

    Key presence is the fingerprint (0.8.3 writes `downloaded_at: null` before a download).
    An `fs_version` field in this module's vocabulary (written back by us) is trusted; any
    other `fs_version` value is ArchiveBox's 0.9 development layout. Real 0.8 folders use
    `history` too, so `history` alone says nothing about the release. 0.8.0-0.8.1 write the
    0.7 shape and are labelled 0.6, which has the same layout.
    """
    declared = index.get("fs_version")
    if isinstance(declared, str) and declared in FS_VERSIONS:
        return declared
    if "fs_version" in index or isinstance(index.get("archive_results"), list):
        return V0_9
    if "downloaded_at" in index:
        return V0_8_3
    if "snapshot_abid" in index:
        return V0_8
    if "snapshot_id" in index or "tags_str" in index or "icons" in index:
        return V0_6
    return V0_4


def migration_steps(from_version: str) -> list[MigrationStep]:
    """Every hop from `from_version` to the current version, no-ops included."""
    start = version_rank(from_version)
    chain = FS_VERSIONS[start:]
    return [
        MigrationStep(_REAL_STEPS.get((source, target), NOOP), source, target)
        for source, target in pairwise(chain)
    ]


def migration_chain(from_version: str) -> list[str]:
    """Names of the steps that move files, in order: `["to_cas"]` from any legacy layout."""
    return [step.name for step in migration_steps(from_version) if not step.is_noop]


def version_after(step_name: str) -> str:
    """The fs_version a snapshot has once `step_name` is verified."""
    for (_, target), name in _REAL_STEPS.items():
        if name == step_name:
            return target
    raise ValueError(f"unknown migration step {step_name!r}")


def needs_fs_migration(version: str) -> bool:
    """True unless the snapshot already has the current layout."""
    return version_rank(version) < version_rank(CURRENT_VERSION)


def output_dir(data_dir: Path, place: SnapshotPlace, version: str) -> Path:
    """Where the snapshot at `place` has its files for `version`.

    Legacy and organized folders are `archive/<timestamp>` (one folder per timestamp on disk).
    CAS snapshots are viewed at their by_timestamp folder: `archive/by_timestamp/<timestamp>`
    for the timestamp's owner, `archive/by_timestamp/<timestamp>__<id8>` for the others, as in
    the views; `archive/<timestamp>` stays as a link to the owner's (`compat_link_target`).
    """
    if not looks_like_timestamp(place.timestamp):
        raise ValueError(f"{place.timestamp!r} is not a snapshot timestamp")
    if version_rank(version) < version_rank(CAS):
        return data_dir / "archive" / place.timestamp
    return data_dir / "archive" / view_dir("by_timestamp", place)

