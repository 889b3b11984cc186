"""What gc removed (in a dry run: would remove) and kept: `GcReport`, per kind a `Tally`,
and each item as `GcItem`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.sizes import human_bytes

Kind = Literal["blob", "untracked", "folder", "trash"]


@dataclass(frozen=True)
class GcItem:
    """One thing gc removed (in a dry run: would remove)."""

    kind: Kind
    name: str  # the blob's sha256, or the folder's path
    size: int  # bytes: freed, or, when `held`, that stay held by another path
    held: bool = False  # a blob whose inode has another name: unlinked, nothing freed


@dataclass
class Tally:
    """Items of one kind removed (in a dry run: that would be). `count` includes the `held`
    ones; `bytes` counts only bytes freed, `held_bytes` those another path still holds.
    For folders `held` counts files whose inode has a name outside the folder."""

    count: int = 0
    bytes: int = 0
    held: int = 0
    held_bytes: int = 0


@dataclass
class GcReport(Counts):
    """What a collection removed (in a dry run: would remove) and kept, and its errors."""

    dry_run: bool = False
    untracked_checked: bool = False
    candidates: int = 0  # unreferenced blobs past the grace, present on the primary
    blobs: Tally = field(default_factory=Tally)
    untracked: Tally = field(default_factory=Tally)
    folders: Tally = field(default_factory=Tally)
    already_gone: int = 0  # candidates whose file was missing: only the catalog changes
    revived: int = 0  # referenced again while being collected: kept
    kept_for_crawl: int = 0  # named by crawl records not yet ingested: kept
    errors: list[str] = field(default_factory=list)
    # An S3 primary (`storage.gc_bucket`): blobs go to the bucket's trash, whose objects a
    # later run deletes once they have waited the grace there (`trash`: those deleted).
    deferred: bool = False
    trash: Tally = field(default_factory=Tally)
    trash_restored: int = 0  # put back from the trash: referenced or recorded present again
    trash_waiting: int = 0  # in the trash, within the grace: kept for now

    @property
    def removed(self) -> int:
        return self.blobs.count

    @property
    def bytes_freed(self) -> int:
        return self.blobs.bytes

    @property
    def untracked_removed(self) -> int:
        return self.untracked.count

    @property
    def migrated_folders_removed(self) -> int:
        return self.folders.count

    @property
    def total_bytes_freed(self) -> int:
        if self.deferred:  # blobs went to the trash: freed when a later run empties it
            return self.trash.bytes + self.folders.bytes
        return self.blobs.bytes + self.untracked.bytes + self.folders.bytes

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"candidates": self.candidates, "removed": self.removed,
                "bytes_freed": self.bytes_freed, "revived": self.revived,
                "untracked_removed": self.untracked_removed,
                "migrated_folders_removed": self.migrated_folders_removed,
                "errors": len(self.errors), "dry_run": self.dry_run,
                **({"trash_deleted": self.trash.count, "trash_bytes_freed": self.trash.bytes,
                    "trash_restored": self.trash_restored, "trash_waiting": self.trash_waiting}
                   if self.deferred else {})}

    def log_lines(self) -> list[str]:
        """What a run log says: what was freed (a dry run: would be), from what, and kept."""
        removed = "would remove" if self.dry_run else "removed"
        freed = "would free" if self.dry_run else "freed"
        held = (f" ({self.blobs.held:,} still held by another path, "
                f"{human_bytes(self.blobs.held_bytes)} not freed)" if self.blobs.held else "")
        if self.deferred:
            moved = "would move" if self.dry_run else "moved"
            lines = [f"{'dry run, nothing changed: ' if self.dry_run else ''}{moved} "
                     f"{self.removed:,} blob(s) ({human_bytes(self.blobs.bytes)}) of "
                     f"{self.candidates:,} unreferenced past the grace period to the trash; "
                     f"{freed} {human_bytes(self.trash.bytes)} by deleting "
                     f"{self.trash.count:,} object(s) from the trash"]
        else:
            lines = [f"{'dry run, nothing changed: ' if self.dry_run else ''}{freed} "
                     f"{human_bytes(self.total_bytes_freed)} in {self.removed:,} blob(s){held} "
                     f"of {self.candidates:,} unreferenced past the grace period"]
        if self.migrated_folders_removed:
            lines.append(f"{removed} {self.migrated_folders_removed:,} migrated legacy "
                         f"folder(s) ({human_bytes(self.folders.bytes)})")
        if self.untracked_checked:
            lines.append(f"{removed} {self.untracked_removed:,} untracked blob file(s) "
                         f"({human_bytes(self.untracked.bytes)})")
        kept = [f"{n:,} {why}" for n, why in (
            (self.revived, "referenced again meanwhile"),
            (self.kept_for_crawl, "named by crawl records not ingested yet"),
            (self.already_gone, "already missing from the store"),
            (self.trash_restored, "put back from the trash (referenced again)"),
            (self.trash_waiting, "in the trash within the grace"))
            if n]
        if kept:
            lines.append("kept or skipped: " + "; ".join(kept))
        if self.errors:
            lines.append(f"{len(self.errors):,} error(s), first: {self.errors[0]}")
        return lines
