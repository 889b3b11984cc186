"""An inbox folder of WARC and WACZ files to import: which files are there, which of them
have settled, and which were asked for already.

A file is taken once it has *settled*: seen with the same size and mtime for
`settle_seconds`, by the watcher's own clock. That is two looks at least `settle_seconds`
apart, not the file's mtime against the clock: a file copied in with its original times
(`cp -p`, an SMB client that sets the write time first) can look old while it is still being
written, and a network share's clock need not agree with ours; a growing file changes size.

What the watcher remembers between looks (`InboxState`, a cursor of a few dozen bytes per
file in the inbox): when each file was first seen as it is, and which files were asked for.
Both are keyed by the file's path, size and mtime, so a file that changes is a new file
(settled again, asked for again); entries of files no longer there are dropped. Files are
never moved or deleted here: they are originals, their owner removes them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.warc.import_run import SUFFIXES


@dataclass(frozen=True)
class InboxFile:
    """A WARC or WACZ file in the inbox, as it was when listed."""

    path: Path
    size: int
    mtime_ns: int

    @property
    def run_key(self) -> str:
        """The file as it is: the same file unchanged gives the same key, a changed one another."""
        return f"{self.path}:{self.size}:{self.mtime_ns}"

    @property
    def key(self) -> str:
        """A short digest of the run key (what the watcher's state keeps)."""
        return hashlib.sha256(self.run_key.encode()).hexdigest()[:16]


def list_inbox(inbox: Path) -> list[InboxFile]:
    """Every `*.warc`, `*.warc.gz`, `*.wacz` under `inbox` (sorted by path); hidden files and
    folders (a copy tool's temporary files) are left out, symlinked folders not followed."""
    found: list[InboxFile] = []
    for folder, dirs, names in os.walk(inbox):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if name.startswith(".") or not name.endswith(SUFFIXES):
                continue
            path = Path(folder) / name
            try:
                stat = path.stat()
            except OSError:  # removed or renamed since it was listed
                continue
            if path.is_file():
                found.append(InboxFile(path, stat.st_size, stat.st_mtime_ns))
    return sorted(found, key=lambda f: f.path)


@dataclass(frozen=True)
class InboxState:
    """What the watcher remembers: when each file was first seen as it is (epoch seconds), and
    the files asked for (both by `InboxFile.key`)."""

    first_seen: dict[str, float] = field(default_factory=dict)
    requested: frozenset[str] = frozenset()

    def to_cursor(self) -> str:
        return json.dumps({"seen": self.first_seen, "requested": sorted(self.requested)},
                          separators=(",", ":"))

    @classmethod
    def from_cursor(cls, cursor: str | None) -> InboxState:
        """The state a cursor holds; blank or unreadable: nothing remembered (every file is
        then settled again; one asked for before is asked again, which is harmless)."""
        try:
            raw = json.loads(cursor or "{}")
            seen = {str(k): float(v) for k, v in raw.get("seen", {}).items()}
            return cls(seen, frozenset(str(k) for k in raw.get("requested", [])))
        except (ValueError, TypeError, AttributeError):
            return cls()


@dataclass(frozen=True)
class InboxPlan:
    """The files to import now (oldest seen first), how many still settle, and the new state."""

    runs: list[InboxFile]
    settling: int
    requested_before: int
    state: InboxState

    def summary(self) -> str:
        """One line for the tick's log."""
        names = ", ".join(f.path.name for f in self.runs)
        return (f"{len(self.runs)} file(s) to import ({names}); " if self.runs else
                "nothing new to import; ") + (
            f"{self.settling} settling, {self.requested_before} asked for before")


def plan_inbox_runs(files: list[InboxFile], state: InboxState, *, now: float,
                    settle_seconds: float, limit: int) -> InboxPlan:
    """Which of `files` (from `list_inbox`) to import now: those seen unchanged for
    `settle_seconds` and not asked for before, at most `limit`; the rest wait for a later look."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    seen = {f.key: state.first_seen.get(f.key, now) for f in files}
    requested = {f.key for f in files if f.key in state.requested}
    ready = [f for f in files if f.key not in requested and now - seen[f.key] >= settle_seconds]
    ready.sort(key=lambda f: (seen[f.key], f.path))
    runs = ready[:limit]
    requested_before = len(requested)
    requested |= {f.key for f in runs}
    pending = {key: when for key, when in seen.items() if key not in requested}
    settling = sum(1 for f in files if f.key in pending and now - seen[f.key] < settle_seconds)
    return InboxPlan(runs, settling, requested_before, InboxState(pending, frozenset(requested)))
