"""Content manifests of a tree: take one before a migration, check the tree against it after.

`manifest(root)` hashes every regular file under `root/archive` without following symlinks;
`check_manifest(root, before)` opens each recorded path the way a user would (following
symlinks) and reports every path whose bytes are gone or differ. A tree that was turned into
symlinks to a content store passes as long as every old path still reads the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

_CHUNK = 1 << 20


def file_sha256(path: Path | str) -> str:
    """sha256 hex of a file's bytes (symlinks followed)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _walk(root: Path, under: str) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to root, lstat) of every entry below root/under, symlinks not followed."""
    start = root / under if under else root
    try:
        start_stat = os.lstat(start)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(start_stat.st_mode):
        yield os.path.relpath(start, root).replace(os.sep, "/"), start_stat
        return
    stack = [str(start)]
    while stack:
        current = stack.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                entry_stat = entry.stat(follow_symlinks=False)
                rel = os.path.relpath(entry.path, root).replace(os.sep, "/")
                if stat.S_ISDIR(entry_stat.st_mode):
                    stack.append(entry.path)
                yield rel, entry_stat


def manifest(root: Path, under: str = "archive") -> dict[str, str]:
    """{path relative to `root`: sha256} for every regular file below `root/under`.

    Symlinks are neither followed nor listed (see `symlinks`); paths use `/`.
    `under=""` covers the whole of `root`.
    """
    root = Path(root)
    out: dict[str, str] = {}
    for rel, entry_stat in _walk(root, under):
        if stat.S_ISREG(entry_stat.st_mode):
            out[rel] = file_sha256(root / rel)
    return dict(sorted(out.items()))


def symlinks(root: Path, under: str = "archive") -> dict[str, str]:
    """{path relative to `root`: link target as stored (os.readlink)} of every symlink below."""
    root = Path(root)
    out = {
        rel: os.readlink(root / rel)
        for rel, entry_stat in _walk(root, under)
        if stat.S_ISLNK(entry_stat.st_mode)
    }
    return dict(sorted(out.items()))


def check_manifest(root: Path, before: Mapping[str, str]) -> list[str]:
    """Problems found reading every path of `before` under `root` (symlinks followed).

    One string per bad path: `missing: <path>` (nothing there, or a dangling symlink),
    `not a file: <path>` (a directory or special file now), `changed: <path> (<old> -> <new>)`
    (other bytes), `unreadable: <path> (<error>)`. An empty list means every path still
    reads the bytes it had.
    """
    root = Path(root)
    problems: list[str] = []
    for rel, expected in sorted(before.items()):
        path = root / rel
        try:
            info = os.stat(path)
        except FileNotFoundError:
            problems.append(f"missing: {rel}")
            continue
        except OSError as exc:
            problems.append(f"unreadable: {rel} ({exc.strerror or exc})")
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"not a file: {rel}")
            continue
        try:
            actual = file_sha256(path)
        except OSError as exc:
            problems.append(f"unreadable: {rel} ({exc.strerror or exc})")
            continue
        if actual != expected:
            problems.append(f"changed: {rel} ({expected[:12]} -> {actual[:12]})")
    return problems
