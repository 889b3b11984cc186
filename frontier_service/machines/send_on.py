"""Sending a machine's unfetched frontier lines on to the owners of their domains' slots.

A line leaves a file only by DETACH_SEND, which puts it into the slot's inbox and lets go of
the domain in one Redis step. The file itself is left as it is: offsets only grow, so the
checkpoints' offsets of the domain stay below whatever the machine appends to it later (a
claim would take a checkpoint ahead of Redis for a loss, and compaction would punch it), and
the sent lines lie below the start Redis records if the domain ever comes back.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_files import walk

log = logging.getLogger(__name__)

SENT, LEASED, MOVED, NOT_OURS = 1, 0, -1, 2
_TRIES = 3
_CHUNK = 256


@dataclass
class SendReport:
    domains_sent: int = 0
    lines_sent: int = 0
    bytes_missing: int = 0  # Redis's range reached past the file's end: lost with the disk
    not_ours: int = 0  # files Redis says hold nothing of this machine's (sent before)
    busy: list[str] | None = None  # leased by this machine's workers: send them later

    def add(self, other: SendReport) -> None:
        self.domains_sent += other.domains_sent
        self.lines_sent += other.lines_sent
        self.bytes_missing += other.bytes_missing
        self.not_ours += other.not_ours
        self.busy = (self.busy or []) + (other.busy or [])


async def send_on(frontier: Frontier, domains: Iterable[str], *,
                  known_offset: Callable[[str], int] | None = None) -> SendReport:
    """For each domain: send the unfetched lines Redis says this machine's file holds (but
    those before `known_offset`, which this machine's offset checkpoints know it fetched);
    leave a domain our workers lease (report.busy). `_CHUNK` domains at a time: their
    ranges in one round trip, their files read in one thread hop, their sends pipelined
    (a machine that gave half its slots away sends a thousand domains on)."""
    report = SendReport(busy=[])
    domains = list(domains)
    for begin in range(0, len(domains), _CHUNK):
        await _send_chunk(frontier, domains[begin:begin + _CHUNK], report,
                          known_offset=known_offset)
    return report


async def _send_chunk(frontier: Frontier, domains: list[str], report: SendReport, *,
                      known_offset: Callable[[str], int] | None) -> None:
    machine = frontier.machine
    assert machine is not None
    assert report.busy is not None
    for _ in range(_TRIES):
        if not domains:
            return
        held = await machine.held_ranges(domains)
        reads = [(domain, frontier.files.path_for(domain), *span)
                 for domain, span in zip(domains, held, strict=True) if span is not None]
        report.not_ours += len(domains) - len(reads)
        datas = await asyncio.to_thread(_read_ranges, [(path, start, end)
                                                       for _, path, start, end in reads])
        sends = []
        for (domain, _, start, end), data in zip(reads, datas, strict=True):
            report.bytes_missing += (end - start) - len(data)
            # Redis's range starts at the read offset last renewed; the URLs fetched since
            # (a killed machine's) are in its checkpoints, as a single machine's restart
            # resumes there too (claimer._start_offset). Without this they were fetched again.
            known = known_offset(domain) if known_offset is not None else 0
            sends.append((domain, start, end, _whole_lines(data[max(0, known - start):])))
        codes = await machine.detach_send_many(sends)
        domains = []
        for (domain, _, _, lines), code in zip(sends, codes, strict=True):
            if code == MOVED:
                domains.append(domain)
            elif code == LEASED:
                report.busy.append(domain)
            elif code == SENT and lines:
                report.domains_sent += 1
                report.lines_sent += lines.count(b"\n")
            # The file is left as it is, not emptied: truncated, it was appended again from
            # offset 0 when the domain came back, while this machine's offset checkpoints
            # still knew the old file's offsets, and the claim resumed mid-line in the new
            # one ("Redis lost it; resuming at the checkpoint"): URLs skipped, a line torn,
            # the crawl stuck. Redis says what of it is this machine's; compaction reclaims
            # the space.
            report.not_ours += code == NOT_OURS
    for domain in domains:
        log.warning("the frontier of %s kept changing while being sent on; trying later",
                    domain)


def _read_ranges(ranges: list[tuple[Path, int, int]]) -> list[bytes]:
    return [_read_range(path, start, end) for path, start, end in ranges]


def _read_range(path: Path, start: int, end: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    try:
        return os.pread(fd, max(0, end - start), start)
    finally:
        os.close(fd)


def _whole_lines(data: bytes) -> bytes:
    """The frontier lines of a range, without the empty separators (and the NULs of a
    reclaimed prefix), each ending in a newline; a torn last line is dropped."""
    lines = [line for line in data.split(b"\n")[:-1] if line.strip(b"\0")]
    return b"".join(line + b"\n" for line in lines)


def local_domains(root: Path) -> list[tuple[str, Path]]:
    """Every domain with a non-empty frontier file under `root` (hashed long names skipped:
    their domain key is not in the name)."""
    out = []
    for domain, path, size in walk(root):
        if domain is None:
            if size:
                log.warning("%s: a long domain name kept in a hashed file name cannot be sent "
                            "to another machine; it stays here", path.name)
            continue
        if size:
            out.append((domain, path))
    return out
