"""A journal of discovered links not yet in the frontier, so a checkpoint need not wait for add_urls.

Before a page's read offset is released its links must be durable. Adding them to the
frontier (seen filter, files, Redis) takes a while under load; appending them here is one
write. The link buffer adds them to the frontier in the background; once an add is done
the journal files it covered are removed. A later process replays the journals of dead
sessions (`replay_link_journals`; the seen filter drops what had already been added).
Lines are `canonical-url|depth`, and `canonical-url|depth|kind` for a page's asset
(canonical URLs hold no `|` or newline).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.archiving.journal_files import JournalFiles
from frontier_service.archiving.session_lock import dead_sessions
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_record import Queued, ResourceType, kind_suffix, parse_kind

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
                added += (await frontier.add_canonical(entries[start:start + 2_000])).added
            path.unlink()
    if added:
        log.warning("re-queued %d links a crashed run had found but not queued", added)
    return added


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
