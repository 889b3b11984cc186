"""Large deletes slow this disk's next file creations: delete, sync, and wait before measuring.

This machine's disk is ext4 without a journal (`/sys/fs/ext4/<dev>/journal_task` is
`<none>`). Without a journal, ext4's inode allocator (fs/ext4/ialloc.c, `recently_deleted`)
skips every free inode freed less than 60 s ago -- 360 s while its inode table block is
dirty, which the next run's own new inodes in that block make it -- and looks each one up
as it skips it. Right after a benchmark deleted its ~100k files, every mkdir and symlink
of the next run in that block group pays that scan (perf: `find_inode_bit` ->
`recently_deleted` under `ext4_mkdir` / `ext4_symlink`): the same migration measured 412
snapshots/s, then 219/s 40 s after the first run's cleanup, and 257/s 65 s after one.

So benchmarks delete their large trees with `remove_tree` (rmtree, sync, then a stamp)
after their measurements, and call `settle()` before their first timed part: it waits out
what is left of the 360 s since the last such delete, and says so. A delete by another
program is not seen; the benches print the load average for that reason.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

STAMP = Path(__file__).resolve().parent / ".work" / ".last-large-delete"
SETTLE_S = 370.0  # ext4's 60 + 300 s, plus the stamp's and the clock's slack


def remove_tree(path: Path) -> None:
    """rmtree (missing is fine), sync the freed inodes to disk, and stamp the time."""
    if not path.exists() and not path.is_symlink():
        return
    shutil.rmtree(path, ignore_errors=True)
    os.sync()
    STAMP.parent.mkdir(parents=True, exist_ok=True)
    STAMP.write_text(f"{time.time():.3f}\n")


def settle(*, wait_s: float = SETTLE_S) -> float:
    """Sleep until wait_s have passed since the last `remove_tree`; returns the seconds slept."""
    try:
        deleted_at = float(STAMP.read_text())
    except (FileNotFoundError, ValueError):
        return 0.0
    left = deleted_at + wait_s - time.time()
    if left <= 0:
        return 0.0
    print(f"(waiting {left:.0f} s: a large delete {wait_s - left:.0f} s ago slows new inodes "
          f"on this disk for up to {wait_s:.0f} s; see bench/settle.py)", flush=True)
    time.sleep(left)
    return left
