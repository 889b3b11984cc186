"""An ended crawl's frontier folder (`data_dir/crawls/{crawl_id}`) removed, crash-safely.

A finished crawl is never resumed (every crawl of a definition gets a new crawl id), and its
outcome in the catalog already says what each stopped host left queued; its frontier
files, checkpoints and drained link journals are only history. Kept, a crawl scheduled
every week over 10,000 domains would leave ~20,000 files a week. The folder is first renamed
to `crawls/.ended-{crawl_id}` (one atomic step: nothing reads it under that name), then
deleted; a crash in between leaves the renamed folder, which the next `serve` deletes when it
starts. A failed crawl's folder is kept, for a look at what went wrong.

The crawler that finishes a crawl removes its own folder. A machine that only joined the
crawl (its owner finishes it), or that was down when it ended, finds the folder later: `serve`
looks at `crawl_folders` every poll and removes those whose crawl the catalog says finished.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

ENDED_PREFIX = ".ended-"


@dataclass(frozen=True)
class Removed:
    files: int
    bytes: int  # allocated on disk (st_blocks): punched frontier files hold few


def remove_crawl_folder(crawls: Path, crawl_id: str) -> Removed | None:
    """Remove `crawls/crawl_id` (None when it does not exist); its files and bytes."""
    folder = crawls / crawl_id
    if not crawl_id or os.sep in crawl_id or crawl_id.startswith(".") or not folder.is_dir():
        return None
    doomed = crawls / f"{ENDED_PREFIX}{crawl_id}"
    os.replace(folder, doomed)
    return _delete(doomed)


def crawl_folders(crawls: Path) -> list[str]:
    """The crawl ids with a frontier folder in `crawls` (none renamed for deletion)."""
    if not crawls.is_dir():
        return []
    return sorted(p.name for p in crawls.iterdir() if not p.name.startswith(".") and p.is_dir())


def remove_leftovers(crawls: Path) -> int:
    """Delete the folders a crash left renamed but not deleted; how many."""
    if not crawls.is_dir():
        return 0
    leftovers = [p for p in crawls.iterdir() if p.name.startswith(ENDED_PREFIX) and p.is_dir()]
    for path in leftovers:
        _delete(path)
    return len(leftovers)


def _delete(path: Path) -> Removed:
    files = allocated = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                allocated += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
            files += 1
    shutil.rmtree(path)
    return Removed(files=files, bytes=allocated)
