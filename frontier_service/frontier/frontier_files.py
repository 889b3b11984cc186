"""Per-domain append-only frontier files: `frontiers/{md5(domain)[:2]}/{domain}.frontier`.

Appends are one `os.write` on an O_APPEND descriptor, so concurrent writers (threads or
processes) never interleave inside a batch. Each append starts with a newline: a line torn
by a writer that crashed mid-write is then terminated by the next append and skipped as
corrupt, instead of gluing onto the next record. A final line without its newline is never
returned; the read offset stays in front of it until it is complete. Offsets are bytes.

Compaction (compaction.py) turns a file's consumed prefix into a hole of NUL bytes;
readers skip NUL bytes as consumed, never as corrupt lines.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from frontier_service.frontier.frontier_record import FrontierRecord, format_records, parse_line

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-z0-9.-]")
_MAX_NAME = 200
_MAX_LINE = 1 << 20


def default_max_open_files() -> int:
    """Half the process's descriptor limit, between 64 and 8192."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 8192
    return max(64, min(8192, soft // 2))


def frontier_file_name(domain: str) -> str:
    """A filesystem-safe, injective file name for a domain key (no `/`, no leading dot)."""
    if not domain:
        raise ValueError("empty domain key")
    name = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), domain)
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) > _MAX_NAME:
        name = f"{name[:120]}~{hashlib.sha256(domain.encode()).hexdigest()[:40]}"
    return f"{name}.frontier"


class FrontierFiles:
    """Appends and reads per-domain frontier files under `root/frontiers`; thread-safe."""

    def __init__(self, root: Path, *, max_open_files: int | None = None) -> None:
        self.root = Path(root)
        self.base = self.root / "frontiers"
        self._base = str(self.base)  # paths built as strings: pathlib costs ~5 us per open
        self.max_open_files = max_open_files or default_max_open_files()
        self.corrupt_lines = 0
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._dirs: set[str] = set()
        self._lock = threading.Lock()

    def path_for(self, domain: str) -> Path:
        return Path(self._path(domain, _shard(domain)))

    def _path(self, domain: str, shard: str) -> str:
        return f"{self._base}/{shard}/{frontier_file_name(domain)}"

    def append(self, domain: str, records: Sequence[FrontierRecord]) -> tuple[int, int]:
        """Append records in one write; returns (start_offset, end_offset) in bytes."""
        return self.append_lines(domain, format_records(records))

    def append_lines(self, domain: str, lines: bytes) -> tuple[int, int]:
        """Append already formatted, newline-terminated lines in one write."""
        return self.append_many({domain: lines})[domain]

    def append_many(self, batches: Mapping[str, bytes]) -> dict[str, tuple[int, int]]:
        """append_lines for many domains (one write each); returns each domain's offsets.
        The hot path of every add: one pass, the descriptor cache looked up inline."""
        offsets: dict[str, tuple[int, int]] = {}
        fds, lock, write, lseek = self._fds, self._lock, os.write, os.lseek
        for domain, lines in batches.items():
            if lines and lines[-1] != 10:  # b"\n"
                raise ValueError("frontier lines must end with a newline")
            data = b"\n" + lines
            with lock:
                fd = fds.get(domain)
                if fd is None:
                    fd = self._open(domain, create=True)
                    assert fd is not None
                else:
                    fds.move_to_end(domain)
                written = write(fd, data)
                while written < len(data):  # only on a full disk or a signal: finish the line
                    written += write(fd, data[written:])
                end = lseek(fd, 0, os.SEEK_CUR)
            offsets[domain] = (end - len(data), end)
        return offsets

    def read_from(self, domain: str, offset: int, max_lines: int) -> tuple[list[FrontierRecord], int]:
        """Up to max_lines records from offset, and the offset just after the last line used."""
        records: list[FrontierRecord] = []
        chunk = min(max(max_lines * 192, 4096), _MAX_LINE)
        pos = offset
        with self._lock:
            fd = self._open(domain, create=False)
            if fd is None:
                return records, offset
            while len(records) < max_lines:
                data = os.pread(fd, chunk, pos)
                if data[:1] == b"\0":
                    pos = past_consumed(fd, pos, data)
                    continue
                cut = data.rfind(b"\n")
                if cut < 0:
                    if len(data) < chunk:
                        break  # nothing, or an incomplete last line: wait for it
                    if chunk >= _MAX_LINE:
                        log.error("skipping %d bytes without a newline in %s", len(data), domain)
                        self.corrupt_lines += 1
                        pos += len(data)
                        continue
                    chunk *= 2
                    continue
                pos = self._parse(domain, data[:cut], pos, records=records, max_lines=max_lines)
                if len(data) < chunk and len(records) < max_lines:
                    break
        return records, pos

    def _parse(self, domain: str, data: bytes, pos: int, *, records: list[FrontierRecord],
               max_lines: int) -> int:
        for line in data.split(b"\n"):
            pos += len(line) + 1
            line = line.lstrip(b"\0")  # a compacted prefix's end
            if not line:
                continue
            record = parse_line(line)
            if record is None:
                self.corrupt_lines += 1
                log.warning("skipping a corrupt frontier line in %s: %r", domain, line[:120])
                continue
            records.append(record)
            if len(records) >= max_lines:
                break
        return pos

    def size(self, domain: str) -> int:
        """The file's size in bytes (0 if it does not exist)."""
        try:
            return self.path_for(domain).stat().st_size
        except FileNotFoundError:
            return 0

    def close(self) -> None:
        with self._lock:
            while self._fds:
                os.close(self._fds.popitem()[1])

    def _open(self, domain: str, *, create: bool) -> int | None:
        fd = self._fds.get(domain)
        if fd is not None:
            self._fds.move_to_end(domain)
            return fd
        shard = _shard(domain)
        path = self._path(domain, shard)
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
        if create:
            if shard not in self._dirs:
                os.makedirs(f"{self._base}/{shard}", exist_ok=True)
                self._dirs.add(shard)
            flags |= os.O_CREAT
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            return None
        self._fds[domain] = fd
        if len(self._fds) > self.max_open_files:
            os.close(self._fds.popitem(last=False)[1])
        return fd


def _shard(domain: str) -> str:
    return hashlib.md5(domain.encode()).hexdigest()[:2]


def past_consumed(fd: int, pos: int, data: bytes) -> int:
    """The offset after the run of NUL bytes (a compacted, consumed prefix) that `data`,
    read at `pos`, starts with: the hole's end if the filesystem says, else past the NULs read."""
    try:
        found = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:  # ENXIO: a hole to the end; or no SEEK_DATA here
        found = pos
    if found > pos:
        return found
    return pos + len(data) - len(data.lstrip(b"\0"))


def domain_from_file_name(name: str) -> str | None:
    """The domain key `frontier_file_name` made `name` from; None for a long (hashed) name or
    a name it cannot have made."""
    stem = name.removesuffix(".frontier")
    if stem == name or not stem or "~" in stem:
        return None
    if "%" not in stem:  # nothing escaped: the name is the domain key
        return stem if len(stem) <= _MAX_NAME and _UNSAFE.search(stem) is None \
            and not stem.startswith(".") else None
    try:
        domain = re.sub(r"(?:%[0-9A-F]{2})+",
                        lambda m: bytes.fromhex(m.group().replace("%", "")).decode(), stem)
    except UnicodeDecodeError:
        return None
    return domain if frontier_file_name(domain) == name else None


def walk(root: Path) -> Iterator[tuple[str | None, Path, int]]:
    """Every frontier file under `root/frontiers`: (domain key or None if its name is hashed,
    path, size in bytes)."""
    base = Path(root) / "frontiers"
    try:
        shards = sorted(entry.name for entry in os.scandir(base) if entry.is_dir())
    except FileNotFoundError:
        return
    for shard in shards:
        if len(shard) != 2 or shard.strip("0123456789abcdef"):
            continue  # .journals, checkpoints
        with os.scandir(base / shard) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".frontier") and entry.is_file(follow_symlinks=False):
                    yield (domain_from_file_name(name), Path(entry.path),
                           entry.stat(follow_symlinks=False).st_size)
