"""A journal of discovered links not yet in the frontier, so a checkpoint need not wait for add_urls.

Before a page's read offset is released its links must be durable. Adding them to the
frontier (seen filter, files, Redis) takes a while under load; appending them here is one
write. The link buffer adds them to the frontier in the background; once an add is done
the journal files it covered are removed. A later process replays the journals of dead
sessions (`replay_link_journals`): what the seen filter does not know is queued, and so is
what it knows but no frontier file holds (the dead session marked it seen and was killed
before appending it).
Lines are `canonical-url|depth`, and `canonical-url|depth|kind` for a page's asset
(canonical URLs hold no `|` or newline).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.archiving.journal_files import JournalFiles
from frontier_service.archiving.session_lock import dead_sessions
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_record import Queued, ResourceType, kind_suffix, parse_kind
from frontier_service.recovery.disk_frontier import scan_file

log = logging.getLogger(__name__)
Entry = Queued  # ((canonical URL, domain, fingerprint), depth[, kind])


def link_journal_dir(root: Path) -> Path:
    """`root/frontiers/.journals`: `root` is the crawl's frontier root (the data dir by
    default), so a crawl replays only the links its own dead sessions found."""
    return Path(root) / "frontiers" / ".journals"


class LinkJournal(JournalFiles):
    """Generations of append-only files `{session}.{n}.links`; use from the event loop."""

    def __init__(self, root: Path, session_id: str) -> None:
        super().__init__(link_journal_dir(root), session_id, ".links")

    def append(self, entries: Sequence[Entry]) -> None:
        if entries:
            self.write("".join([f"{entry[0][0]}|{entry[1]}"
                                f"{kind_suffix(entry[2]) if len(entry) == 3 else ''}\n"
                                for entry in entries]).encode())

    def rotate(self) -> int:
        """Later appends go to a new file; returns the generation now closed."""
        return self.next_generation()

    def drop_through(self, generation: int) -> None:
        """Remove the files up to `generation`: their links are in the frontier."""
        for path in self.directory.glob(f"{self.session_id}.*{self.suffix}"):
            number = path.name.split(".")[-2]
            if number.isdigit() and int(number) <= generation:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def close(self) -> None:
        """After the final add: remove everything."""
        self.close_file()
        self.drop_through(self.generation)
        self.unlock()


async def replay_link_journals(frontier: Frontier, root: Path) -> int:
    """Add the links journaled by dead sessions under the frontier root `root` to the
    frontier; returns how many were new."""
    directory = link_journal_dir(root)
    if not directory.is_dir():
        return 0
    added = 0
    for session_id in dead_sessions(directory):
        for path in sorted(directory.glob(f"{session_id}.*.links")):
            entries = _read(path)
            for start in range(0, len(entries), 2_000):
                added += await _replay(frontier, entries[start:start + 2_000])
            path.unlink()
    if added:
        log.warning("re-queued %d links a crashed run had found but not queued", added)
    return added


async def _replay(frontier: Frontier, entries: list[Entry]) -> int:
    """Queue the entries new to the seen filter, and those it knows that no frontier file
    holds: the dead session's add marked them seen, then it was killed before the append."""
    is_new = await frontier.seen.add_many([entry[0][2] for entry in entries])
    new = [entry for fresh, entry in zip(is_new, entries, strict=True) if fresh]
    known = [entry for fresh, entry in zip(is_new, entries, strict=True) if not fresh]
    lost: list[Entry] = []
    if known:
        lost = await asyncio.to_thread(_not_in_files, frontier, known,
                                       {entry[0][2] for entry in new})
    if frontier.machine is None or not lost:
        return await frontier.queue_seen(new + lost, offered=len(entries))
    # Several machines: the dead session may have sent them to their owners before it died
    # (the seen filter and the inbox are two steps): the owners drop those their files hold.
    added = await frontier.queue_seen(new, offered=len(entries))
    return added + await frontier.queue_seen(lost, offered=0, owners_check=True)


def _not_in_files(frontier: Frontier, entries: list[Entry], queued: set[bytes]) -> list[Entry]:
    """The entries whose URL is neither in `queued` nor in its domain's frontier file here
    (its lines, or the fingerprints of the lines compaction punched), each once. With several
    machines the dead session appended the links of its domains here and sent the others':
    those not here may be in their owners' files (queue_seen's owners_check)."""
    by_domain: dict[str, list[Entry]] = {}
    for entry in entries:
        by_domain.setdefault(entry[0][1], []).append(entry)
    lost: list[Entry] = []
    for domain, group in by_domain.items():
        on_disk = set(scan_file(frontier.files.path_for(domain)).fingerprints)
        for entry in group:
            fingerprint = entry[0][2]
            if fingerprint not in on_disk and fingerprint not in queued:
                queued.add(fingerprint)
                lost.append(entry)
    if lost:
        log.warning("re-queued %d links a crashed run had marked seen but not queued", len(lost))
    return lost


def _read(path: Path) -> list[Entry]:
    entries: list[Entry] = []
    for line in path.read_bytes().split(b"\n"):
        fields = line.split(b"|")
        kind: ResourceType | None = ResourceType.DOCUMENT
        if len(fields) == 3:  # an asset's line
            kind = parse_kind(fields.pop())
        if len(fields) != 2 or kind is None or not fields[1].isdigit():
            continue
        found = try_canonical_url_and_domain(fields[0].decode("utf-8", "replace"))
        if found is not None:
            entries.append((found, int(fields[1]), kind))
    return entries
