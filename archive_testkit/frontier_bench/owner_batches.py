"""One owner's add path with its own seen filter (owner_filter.py), for bench/crawl_adds.py.

`OwnerSplitter.split` does for a batch of canonical URLs what Frontier.queue_seen and
_add_owned do after the Redis filter: the lines of the new URLs of this owner's domains by
domain, ready to append, and the lines of other owners' domains, to send (unfiltered: their
owner filters them, `filter_inbox`). Per URL it costs one ownership lookup, one line and one list append;
the filter works on the whole batch in numpy. Lines are formatted as queue_seen formats
them (`url|depth|priority|added_at[|kind]`), in the order found within each domain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archive_testkit.frontier_bench.owner_filter import OwnerSeenFilter
from frontier_service.frontier.frontier_record import LineEnds, Queued
from frontier_service.frontier.machine_state import MachineState

InboxEntry = tuple[str, str, dict]  # (stream, entry id, {domain: lines})


@dataclass(frozen=True, slots=True)
class OwnerBatch:
    """A batch split by owner: `ours` (new URLs' lines, `counts` of them) and `theirs`."""

    ours: dict[str, bytes]
    counts: dict[str, int]
    theirs: dict[str, bytes]
    sent: int

    @property
    def appended(self) -> int:
        return sum(self.counts.values())


class OwnerSplitter:
    """Splits one owner's batches (`split`); remembers which domains are ours until
    `machine.mine` changes (a new set at every heartbeat)."""

    def __init__(self, machine: MachineState, seen: OwnerSeenFilter) -> None:
        self.machine = machine
        self.seen = seen
        self._mine = machine.mine
        self._ours: dict[str, bool] = {}

    def split(self, entries: Sequence[Queued], *, now: int, priority: float = 1.0) -> OwnerBatch:
        """The lines of `entries` by domain: ours filtered by the seen filter (which records
        them), theirs as found."""
        machine = self.machine
        if machine.mine is not self._mine:
            self._mine, self._ours = machine.mine, {}
        ours, mine_slots, slot = self._ours, self._mine, machine.slot
        for domain in {entry[0][1] for entry in entries}.difference(ours):
            ours[domain] = slot(domain) in mine_slots
        own = np.array([ours[entry[0][1]] for entry in entries], dtype=bool)
        keep = ~own
        mine = np.flatnonzero(own)
        if mine.size:
            raw = np.frombuffer(b"".join([entry[0][2] for entry in entries]), dtype=np.uint64)
            keep[mine[self.seen.add_words(raw.reshape(len(entries), 2)[mine])]] = True
        ends = LineEnds(priority, added_at=now)
        lines: dict[str, list[str]] = {}
        for entry, kept in zip(entries, keep.tolist(), strict=True):
            if kept:
                found = entry[0]
                pending = lines.get(found[1])
                if pending is None:
                    lines[found[1]] = pending = []
                pending.append(found[0] + (ends[entry[1]] if len(entry) == 2 else ends.of(entry)))
        ours_lines: dict[str, bytes] = {}
        counts: dict[str, int] = {}
        theirs: dict[str, bytes] = {}
        sent = 0
        for domain, pending in lines.items():
            if ours[domain]:
                ours_lines[domain] = "".join(pending).encode()
                counts[domain] = len(pending)
            else:
                theirs[domain] = "".join(pending).encode()
                sent += len(pending)
        return OwnerBatch(ours_lines, counts, theirs, sent)


def filter_inbox(seen: OwnerSeenFilter, entries: Sequence[InboxEntry]) -> list[InboxEntry]:
    """The entries of one inbox read with only the lines whose URL `seen` had not seen (it
    records them): one filter call for the whole read."""
    blake2b = hashlib.blake2b
    split = [[(name, [line for line in bytes(value).split(b"\n") if line])
              for name, value in fields.items()] for _, _, fields in entries]
    fingerprints = [blake2b(line.partition(b"|")[0], digest_size=16).digest()
                    for fields in split for _, lines in fields for line in lines]
    flags = iter(seen.add_many(fingerprints).tolist())
    out: list[InboxEntry] = []
    for (stream, entry_id, _), fields in zip(entries, split, strict=True):
        kept_fields = {}
        for name, lines in fields:
            kept = [line for line in lines if next(flags)]
            if kept:
                kept_fields[name] = b"\n".join(kept) + b"\n"
        out.append((stream, entry_id, kept_fields))
    return out
