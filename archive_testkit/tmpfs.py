"""A small tmpfs for tests of a full disk: mounted, grown, unmounted (root and mount(8))."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def tmpfs_unavailable() -> str | None:
    """Why no tmpfs can be mounted here, or None."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "needs root and mount(8) to make a small filesystem that fills up"
    return None


def mount_tmpfs(path: Path, size: str) -> None:
    """Mount a tmpfs of `size` (e.g. "4m") on the existing folder `path`; OSError says why not."""
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise OSError(f"cannot mount a tmpfs here: {made.stderr.strip()}")


def resize_tmpfs(path: Path, size: str) -> None:
    """Grow (or shrink) a mounted tmpfs: the operator freeing space."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)


def unmount(path: Path) -> None:
    """Unmount, lazily if something still holds it open."""
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], check=True)
