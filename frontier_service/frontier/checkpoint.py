"""On-disk checkpoints of read offsets, page counts and exclusions: what a Redis that lost
its data is rebuilt from (with the frontier files).

Each crawler session writes its own `{session}.ckpt` (whole, atomically: temp file, fsync,
rename, fsync of the folder) and holds an flock on `{session}.lock` while it runs. Files of
dead sessions are folded into `base.ckpt`. A file is text:

    frontier-checkpoint 1 <session> [absorbed=<id>,<id>...]
    <domain> <offset> <pages> [<percent-escaped exclusion reason>]
    ...
    end <entries> <crc32 of the entry lines>

`absorbed` names the session files already folded into the base but not yet removed (a
merge that crashed between the two steps), so their pages are never counted twice.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote, unquote

from archive_pipelines.blobstore.local_files import fsync_dir
from frontier_service.frontier.folder_locks import dead_sessions, lock_session, mutex

log = logging.getLogger(__name__)

MAGIC = "frontier-checkpoint"
VERSION = 1
BASE = "base"
_SUFFIX = ".ckpt"
_MERGE_MUTEX = "merge.mutex"  # not `*.lock`: those are sessions
_DOMAIN_TOKEN = re.compile(r"\S+")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.{}-]")


class CheckpointError(ValueError):
    """A checkpoint file that is not whole or not in this format."""


@dataclass(frozen=True, slots=True)
class DomainCheckpoint:
    """What is durably done in one domain's frontier file."""

    offset: int  # bytes of the domain's frontier file whose URLs are done (results durable)
    pages: int = 0  # pages fetched (for the per-domain page budget)
    excluded_reason: str = ""  # non-empty: the domain was excluded (host unreachable, budget)


def checkpoint_dir(root: Path, crawl_name: str) -> Path:
    """`root/frontiers/checkpoints/{crawl_name}` (the name made safe for a folder); `root` is
    the crawl's frontier root (CrawlerSettings.frontier_home: the data dir by default)."""
    name = _UNSAFE_NAME.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), crawl_name)
    if name.startswith("."):
        name = "%2E" + name[1:]
    return Path(root) / "frontiers" / "checkpoints" / name


class OffsetCheckpoint:
    """One session's checkpoint: updated in memory from the event loop, written from a thread."""

    def __init__(self, directory: Path, session_id: str) -> None:
        if _DOMAIN_TOKEN.fullmatch(session_id) is None or "/" in session_id or session_id == BASE:
            raise ValueError(f"invalid checkpoint session id {session_id!r}")
        self.directory = Path(directory)
        self.session_id = session_id
        self.path = self.directory / f"{session_id}{_SUFFIX}"
        self._session_lock: IO[str] | None = lock_session(self.directory, session_id)
        self._state: dict[str, tuple[int, int, str]] = {}
        self._lines: dict[str, str] = {}  # each domain's entry, formatted when it changes
        self._changed = False
        self._mutex = threading.Lock()
        self._write_lock = threading.Lock()

    def advance(self, domain: str, offset: int, pages: int = 0) -> None:
        """Raise the domain's done offset (never lowered) and count pages fetched."""
        with self._mutex:
            old = self._state.get(domain)
            if old is None:
                _check_domain(domain)
                new = (offset, pages, "")
            elif offset > old[0] or pages:
                new = (max(offset, old[0]), old[1] + pages, old[2])
            else:
                return
            self._set(domain, new)

    def offset(self, domain: str) -> int:
        """The domain's done offset in this session (0 if it has none)."""
        with self._mutex:
            entry = self._state.get(domain)
        return entry[0] if entry is not None else 0

    def exclude(self, domain: str, reason: str) -> None:
        """Note that the domain was excluded (kept across a Redis rebuild)."""
        reason = reason or "excluded"
        with self._mutex:
            old = self._state.get(domain)
            if old is None:
                _check_domain(domain)
                old = (0, 0, "")
            if old[2] != reason:
                self._set(domain, (old[0], old[1], reason))

    def _set(self, domain: str, new: tuple[int, int, str]) -> None:
        # Formatting here (~1 us a call) keeps write() to a copy and a join: 100k domains
        # would otherwise take ~50 ms of formatting every write.
        self._state[domain] = new
        offset, pages, reason = new
        self._lines[domain] = _entry(domain, offset, pages, reason=reason)
        self._changed = True

    def write(self) -> bool:
        """Write the session's file if anything changed since the last write; True if it did."""
        with self._write_lock:
            with self._mutex:
                if not self._changed:
                    return False
                self._changed = False
                lines = list(self._lines.values())
            try:
                write_atomically(self.path, _document(self.session_id, lines))
            except BaseException:
                self._changed = True  # the next write retries
                raise
            return True

    def close(self) -> None:
        """Write what is left and release the session (a later merge folds its file)."""
        if self._session_lock is None:
            return
        try:
            self.write()
        finally:
            self._session_lock.close()
            self._session_lock = None


def load_checkpoints(directory: Path) -> dict[str, DomainCheckpoint]:
    """Every domain's checkpoint over the base and all session files: the highest offset,
    the pages of all sessions, excluded if any says so. A damaged file is skipped (logged)."""
    directory = Path(directory)
    if not directory.is_dir():
        return {}
    with mutex(directory, _MERGE_MUTEX, shared=True):
        sessions = {path.name.removesuffix(_SUFFIX): _read(path)
                    for path in sorted(directory.glob(f"*{_SUFFIX}")) if path.stem != BASE}
        base, absorbed = _read_base(directory)
    merged: dict[str, DomainCheckpoint] = {}
    _fold(merged, base)
    for session_id, entries in sessions.items():
        if session_id not in absorbed:
            _fold(merged, entries)
    return merged


def merge_dead_sessions(directory: Path) -> int:
    """Fold the files of sessions no live process holds into `base.ckpt` and remove them;
    returns how many files were folded."""
    directory = Path(directory)
    if not directory.is_dir():
        return 0
    with mutex(directory, _MERGE_MUTEX, shared=False):
        dead = set(dead_sessions(directory))
        for path in directory.glob(f"*{_SUFFIX}"):  # a merge that died after dropping the lock
            session_id = path.name.removesuffix(_SUFFIX)
            if session_id != BASE and not (directory / f"{session_id}.lock").exists():
                dead.add(session_id)
        base, absorbed = _read_base(directory)
        present = {s for s in dead | absorbed if (directory / f"{s}{_SUFFIX}").exists()}
        folded = sorted(present - absorbed)
        if folded:
            merged: dict[str, DomainCheckpoint] = {}
            _fold(merged, base)
            for session_id in folded:
                _fold(merged, _read(directory / f"{session_id}{_SUFFIX}"))
            lines = [_entry(d, c.offset, c.pages, reason=c.excluded_reason) for d, c in merged.items()]
            write_atomically(directory / f"{BASE}{_SUFFIX}", _document(BASE, lines, present))
        for session_id in sorted(present | dead):
            (directory / f"{session_id}{_SUFFIX}").unlink(missing_ok=True)
            (directory / f".{session_id}{_SUFFIX}.tmp").unlink(missing_ok=True)
        if present or dead:
            fsync_dir(directory)
        return len(folded)


# -- the file format ---------------------------------------------------------------------

def _entry(domain: str, offset: int, pages: int, *, reason: str) -> str:
    if reason:
        return f"{domain} {offset} {pages} {quote(reason, safe='')}\n"
    return f"{domain} {offset} {pages}\n"


def _document(session_id: str, entries: Iterable[str], absorbed: Iterable[str] = ()) -> bytes:
    body = "".join(entries).encode()
    count = body.count(b"\n")
    header = f"{MAGIC} {VERSION} {session_id}"
    if absorbed:
        header += " absorbed=" + ",".join(sorted(absorbed))
    return b"".join([header.encode(), b"\n", body, f"end {count} {zlib.crc32(body)}\n".encode()])


def _parse(data: bytes) -> tuple[dict[str, DomainCheckpoint], set[str]]:
    """(entries, absorbed sessions) of a whole file; CheckpointError if it is not whole."""
    head, _, rest = data.partition(b"\n")
    fields = head.decode("utf-8", "replace").split()
    if len(fields) < 3 or fields[0] != MAGIC:
        raise CheckpointError("not a frontier checkpoint")
    if fields[1] != str(VERSION):
        raise CheckpointError(f"checkpoint format {fields[1]}; this version reads {VERSION}")
    absorbed: set[str] = set()
    for field in fields[3:]:
        if field.startswith("absorbed="):
            absorbed.update(filter(None, field.removeprefix("absorbed=").split(",")))
    cut = rest.rfind(b"end ", 0, len(rest))
    if not rest.endswith(b"\n") or cut < 0 or (cut > 0 and rest[cut - 1:cut] != b"\n"):
        raise CheckpointError("the file is cut short (no end line)")
    body, trailer = rest[:cut], rest[cut:].split()
    if len(trailer) != 3 or trailer[1] != str(body.count(b"\n")).encode() \
            or trailer[2] != str(zlib.crc32(body)).encode():
        raise CheckpointError("the entries do not match the end line's count and checksum")
    entries: dict[str, DomainCheckpoint] = {}
    for line in body.decode().splitlines():
        parts = line.split(" ")
        if len(parts) not in (3, 4):
            raise CheckpointError(f"bad entry {line[:80]!r}")
        reason = unquote(parts[3]) if len(parts) == 4 else ""
        entries[parts[0]] = DomainCheckpoint(int(parts[1]), int(parts[2]), reason)
    return entries, absorbed


def _read_file(path: Path) -> tuple[dict[str, DomainCheckpoint], set[str]]:
    try:
        return _parse(path.read_bytes())
    except FileNotFoundError:
        return {}, set()
    except (CheckpointError, ValueError, OSError) as exc:
        log.warning("skipping the damaged checkpoint %s: %s", path, exc)
        return {}, set()


def _read(path: Path) -> dict[str, DomainCheckpoint]:
    return _read_file(path)[0]


def _read_base(directory: Path) -> tuple[dict[str, DomainCheckpoint], set[str]]:
    return _read_file(directory / f"{BASE}{_SUFFIX}")


def _fold(merged: dict[str, DomainCheckpoint], entries: dict[str, DomainCheckpoint]) -> None:
    for domain, new in entries.items():
        old = merged.get(domain)
        merged[domain] = new if old is None else DomainCheckpoint(
            max(old.offset, new.offset), old.pages + new.pages,
            old.excluded_reason or new.excluded_reason)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, atomically and durably (temp file, fsync, rename, fsync of
    the folder)."""
    temp = path.with_name(f".{path.name}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_dir(path.parent)


def _check_domain(domain: str) -> None:
    if _DOMAIN_TOKEN.fullmatch(domain) is None:
        raise ValueError(f"invalid domain key {domain!r}")


