"""Scrub runs: every copy, or a random sample of the copies, of one or more stores.

The one way to scrub (the `scrub` and `replication-status --verify` commands and the
Dagster `scrub_job` all come here): plan what to read at each store, then read it page by
page with `scrub_range`, which records what it finds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStoreError
from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import MetadataValue
from archive_pipelines.replication.report import one_line
from archive_pipelines.replication.sampling import Window, sample_fraction, sample_windows
from archive_pipelines.replication.scrub import SCRUBBED, ScrubReport, scrub_range
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.sizes import human_bytes

DEFAULT_PAGE = 1000  # copies per catalog read and per status write

Progress = Callable[[int, int], object]  # (copies checked, raw bytes) since the last call


@dataclass(frozen=True)
class ScrubPlan:
    """What a scrub reads at one store."""

    store: str
    windows: list[Window]  # sha256 ranges to read, in this order
    copies: int  # copies recorded present or corrupted in the scrubbed range
    fraction: float  # the share of them the windows cover (1.0: every one)

    @property
    def expected(self) -> int:
        """About how many copies the scrub will read."""
        return self.copies if self.fraction >= 1 else min(self.copies,
                                                          round(self.copies * self.fraction))


def plan_scrubs(catalog: Catalog, replica_set: ReplicaSet, names: Sequence[str] | None = None,
                *, prefix: str | None = None, sample: float | None = None,
                min_sample: int = 0, rng: random.Random | None = None) -> list[ScrubPlan]:
    """What to read at each store of `names` (None: every configured store).

    Only copies whose sha256 starts with `prefix`; all of them, or a random `sample`
    fraction of them raised to at least `min_sample` copies.
    """
    chosen = list(replica_set.ids) if names is None else list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in replica_set.ids]
    if unknown:
        raise ArchiveError(f"unknown store {unknown[0]!r}; the configured stores are "
                           + ", ".join(replica_set.ids))
    low, high = prefix_range(prefix)
    with catalog.reading() as tx:
        counts = {name: tx.copies.count_copies_in_range(store_id=replica_set[name].store_id,
                                              statuses=SCRUBBED, low=low, high=high)
                  for name in chosen}
    rng = rng or random.Random()
    plans = []
    for name in chosen:
        fraction = sample_fraction(counts[name], fraction=sample, minimum=min_sample)
        plans.append(ScrubPlan(name, sample_windows(prefix, fraction, rng=rng), counts[name],
                               fraction))
    return plans


@dataclass(frozen=True)
class ScrubRun:
    """The reports of one scrub of several stores, one per store."""

    reports: list[ScrubReport]

    @property
    def bad(self) -> int:
        """Copies found missing or corrupt, at every store."""
        return sum(report.bad for report in self.reports)

    @property
    def errors(self) -> list[str]:
        """Why a store could not be read (the scrub of that store stopped there)."""
        return [report.error for report in self.reports if report.error]

    def as_metadata(self) -> dict[str, MetadataValue]:
        totals = {name: sum(getattr(r, name) for r in self.reports)
                  for name in ("checked", "corrupted", "missing", "set_aside", "bytes_checked")}
        return {**totals, **{f"objects_per_second_{r.store}": round(r.objects_per_second, 1)
                             for r in self.reports}}

    def log_lines(self) -> list[str]:
        """What a run log says: healthy or how many bad copies, then one line per store."""
        checked = sum(r.checked for r in self.reports)
        where = f"{checked:,} copies checked at {len(self.reports)} store(s)"
        if self.errors:
            first = f"{len(self.errors)} store(s) could not be read; {where}"
        elif self.bad:
            first = f"{self.bad:,} bad copies (missing or corrupt, marked to copy again): {where}"
        else:
            first = f"healthy: {where}, none missing or corrupt"
        lines = [first]
        for r in self.reports:
            line = (f"{r.store}: {r.checked:,} checked ({human_bytes(r.bytes_checked)}), "
                    f"{r.ok:,} ok, {r.missing:,} missing, {r.corrupted:,} corrupt")
            if r.set_aside:
                line += f" ({r.set_aside:,} set aside in quarantine/)"
            if r.restored:
                line += f", {r.restored:,} good again"
            if r.error:
                line += f"; stopped: {r.error}"
            lines.append(line)
        return lines


def scrub_stores(catalog: Catalog, replica_set: ReplicaSet, names: Sequence[str] | None = None,
                 *, prefix: str | None = None, sample: float | None = None, width: int = 4,
                 limit: int | None = None) -> ScrubRun:
    """Plan (`plan_scrubs`) and run (`run_scrubs`) a scrub of the stores of `names`."""
    plans = plan_scrubs(catalog, replica_set, names, prefix=prefix, sample=sample)
    return ScrubRun(run_scrubs(catalog, replica_set, plans, width=width, limit=limit))


def run_scrubs(catalog: Catalog, replica_set: ReplicaSet, plans: Sequence[ScrubPlan], *,
               width: int = 4, page: int = DEFAULT_PAGE, limit: int | None = None,
               progress: Progress | None = None) -> list[ScrubReport]:
    """`run_scrub` of each plan in turn."""
    return [run_scrub(catalog, replica_set, plan, width=width, page=page, limit=limit,
                      progress=progress) for plan in plans]


def run_scrub(catalog: Catalog, replica_set: ReplicaSet, plan: ScrubPlan, *, width: int = 4,
              page: int = DEFAULT_PAGE, limit: int | None = None,
              progress: Progress | None = None) -> ScrubReport:
    """Read every window of `plan` (at most `limit` copies), `width` copies at a time.

    A store that cannot be read ends its scrub with `error` set; nothing is raised, so the
    caller can go on with other stores and fail at the end.
    """
    report = ScrubReport(plan.store)
    started = time.monotonic()
    try:
        for low, high in plan.windows:
            cursor: str | None = None
            while limit is None or report.checked < limit:
                size = page if limit is None else min(page, limit - report.checked)
                part = scrub_range(catalog, replica_set, plan.store, low=low, high=high,
                                   cursor=cursor, limit=size, width=width)
                report.add(part)
                if progress is not None and part.checked:
                    progress(part.checked, part.bytes_checked)
                cursor = part.next_cursor
                if cursor is None:
                    break
            if limit is not None and report.checked >= limit:
                break
    except (BlobStoreError, OSError) as exc:
        text = one_line(exc)
        report.error = text if text.startswith("store ") else f"store {plan.store!r}: {text}"
    report.seconds = time.monotonic() - started
    return report
