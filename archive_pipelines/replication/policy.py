"""The retention policy as pure functions: what counts as a copy, where to copy from and to."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from archive_pipelines.catalog import CopyState

T = TypeVar("T")
Pair = tuple[str, str]  # (source store name, destination store name)


def counts_as_copy(state: CopyState | None, *, now: datetime, max_age: timedelta) -> bool:
    """Present copies count; ongoing ones count while younger than `max_age` (their
    copier is presumed alive), and as missing once older (it presumably died)."""
    if state is None:
        return False
    if state.status == "present":
        return True
    return (state.status == "ongoing" and state.mtime is not None
            and now - state.mtime < max_age)


# Why a plan falls short of the policy (summaries say "<n> blobs because <reason>").
NO_GOOD_SOURCE = "no readable store holds a present copy"
TOO_FEW_STORES = "more copies are needed than there are writable stores"
STORES_OUT = "the stores that could take a copy are out for this run"


@dataclass(frozen=True)
class ObjectPlan:
    """What one object needs: copies to make, and why some could not be planned."""

    needed: int  # copies short of the policy (0: nothing to do)
    pairs: list[Pair] = field(default_factory=list)
    problem: str | None = None  # set when the plan cannot reach the policy (one line)
    reason: str | None = None  # the problem's kind: NO_GOOD_SOURCE, TOO_FEW_STORES, STORES_OUT
    # Stores skipped for the run that could have taken one of the missing copies.
    skipped: list[str] = field(default_factory=list)


def plan_object(copies: Mapping[str, CopyState], *, retention: int, now: datetime,
                max_age: timedelta, readable: Collection[str], writable: Collection[str],
                rng: random.Random, out: Collection[str] = ()) -> ObjectPlan:
    """Choose (source, destination) pairs that bring one object up to `retention`.

    `copies` maps store name -> status row for the configured stores. Sources are readable
    stores with a present copy; destinations are writable stores without a counted copy and
    without a corrupted one (replication never overwrites what it finds at a store). `out`:
    stores that would be destinations but are skipped for this run (unreachable, refused).
    """
    counted = {name for name, state in copies.items()
               if counts_as_copy(state, now=now, max_age=max_age)}
    needed = retention - len(counted)
    if needed <= 0:
        return ObjectPlan(0)
    sources = sorted(name for name, state in copies.items()
                     if state.status == "present" and name in readable)

    def could_take(name: str) -> bool:
        return name not in counted and (copies.get(name) is None
                                        or copies[name].status != "corrupted")

    destinations = sorted(name for name in writable if could_take(name))
    if not sources:
        return ObjectPlan(needed, problem=NO_GOOD_SOURCE, reason=NO_GOOD_SOURCE)
    pairs = choose_pairs(sources, destinations, needed, rng=rng)
    if len(pairs) < needed:
        skipped = sorted(name for name in out if could_take(name))
        return ObjectPlan(needed, pairs, problem=f"needs {needed} more copies, only "
                          f"{len(pairs)} writable store(s) can take one",
                          reason=STORES_OUT if skipped else TOO_FEW_STORES, skipped=skipped)
    return ObjectPlan(needed, pairs)


def choose_pairs(sources: Sequence[str], destinations: Sequence[str], needed: int,
                 *, rng: random.Random) -> list[Pair]:
    """Up to `needed` random pairs with distinct destinations (sources may repeat).

    Draws only where there is a choice: with one source and every destination taken (the
    usual case, planned for each of a batch's thousand objects) the pairs are fixed.
    """
    everyone = needed >= len(destinations)
    chosen = list(destinations) if everyone else rng.sample(list(destinations), needed)
    if len(sources) == 1:
        return [(sources[0], destination) for destination in chosen]
    return [(rng.choice(sources), destination) for destination in chosen]


def group_by_pair(plans: Iterable[tuple[T, Sequence[Pair]]]) -> dict[Pair, list[T]]:
    """{(source, destination): [objects]} in first-seen order."""
    groups: dict[Pair, list[T]] = defaultdict(list)
    for item, pairs in plans:
        for pair in pairs:
            groups[pair].append(item)
    return dict(groups)
