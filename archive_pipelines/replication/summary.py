"""What a replication run did, per store, and whether the policy could be met.

Shared by the `replicate` command and the Dagster jobs: the same counts, the same lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from archive_pipelines.replication.report import BatchReport


@dataclass(frozen=True)
class StoreTally:
    """Copies to one store in a run."""

    made: int  # written by this run
    already: int  # found there already, identical (recorded present)
    failed: int  # tried and failed
    skipped: int  # due but not tried: the store (or the source) was out for the run
    problem: str | None  # why the store was out (None: it was not)


@dataclass(frozen=True)
class RunSummary:
    """The outcome of a replication run (or of one worker batch)."""

    report: BatchReport  # totals over the run
    stores: tuple[str, ...]  # every configured store, in settings order
    short: int  # blobs this run last saw short of the policy and could not bring up
    # Of those, how many for each reason a plan fell short (policy.NO_GOOD_SOURCE ...); the
    # rest were planned but their copies failed or were skipped.
    reasons: Mapping[str, int] = field(default_factory=dict)
    stopped_early: bool = False  # a batch or tick limit ended the run before the scan did
    # The last scan of the catalog: a blob left short is met again by every scan, so its
    # failed and skipped copies are counted from this one scan only (None: `report`).
    # Copies made or found already there happen once per blob and store: from `report`.
    last_scan: BatchReport | None = None

    @classmethod
    def of_batch(cls, report: BatchReport, stores: tuple[str, ...]) -> RunSummary:
        """The summary of one worker batch (or of batches that never overlap)."""
        return cls(report, stores, report.short, dict(report.short_reasons))

    @property
    def policy_met(self) -> bool:
        """Nothing this run looked at was left short (with `stopped_early`, the rest of the
        catalog was not looked at)."""
        return self.short == 0

    @property
    def copies_made(self) -> int:
        return sum(self.report.created.values())

    @property
    def _outstanding(self) -> BatchReport:
        return self.report if self.last_scan is None else self.last_scan

    def tally(self, store: str) -> StoreTally:
        """Each blob due a copy at `store` counted once: made, already there, or (in the
        last scan) failed or skipped."""
        r, last = self.report, self._outstanding
        return StoreTally(made=r.created[store], already=r.copies[store] - r.created[store],
                          failed=last.failed_copies[store], skipped=last.skipped_copies[store],
                          problem=r.store_problems.get(store))

    def verdict(self) -> str:
        """One line: met, or why not."""
        if self.policy_met:
            more = "; stopped at the batch limit, more blobs may need copies" \
                if self.stopped_early else ""
            return f"policy met for every blob this run looked at{more}"
        causes = dict(self.reasons)
        other = self.short - sum(causes.values())
        if other > 0:
            causes["their copies failed or were skipped"] = other
        because = "; ".join(f"{n:,} because {reason}" for reason, n in
                            sorted(causes.items(), key=lambda item: -item[1]))
        out = sorted(self.report.store_problems)
        stores = f" (stores out: {', '.join(out)})" if out else ""
        return (f"policy NOT met: {self.short:,} blob(s) still short of the retention "
                f"policy{stores}" + (f": {because}" if because else ""))

    def store_lines(self, *, reasons: bool = True) -> list[str]:
        """One line per store: made, already there, failed, skipped, and whether it was out
        (with why, unless `reasons` is False because that was reported already)."""
        width = max((len(name) for name in self.stores), default=0)
        lines = []
        for name in self.stores:
            t = self.tally(name)
            line = (f"{name:<{width}}  {t.made:,} made, {t.already:,} already there, "
                    f"{t.failed:,} failed, {t.skipped:,} skipped")
            if t.problem:
                line += f"  [out: {t.problem}]" if reasons else "  [out for this run]"
            lines.append(line)
        return lines

    def metadata(self) -> dict[str, object]:
        """Plain values for Dagster metadata and logs."""
        per_store = {name: {"made": t.made, "already": t.already, "failed": t.failed,
                            "skipped": t.skipped, "problem": t.problem or ""}
                     for name in self.stores for t in [self.tally(name)]}
        return {"policy_met": self.policy_met, "blobs_short": self.short,
                "copies_made": self.copies_made,
                "bytes_copied": sum(self.report.bytes_copied.values()),
                "failed": sum(self._outstanding.failed_copies.values()),
                "skipped": sum(self._outstanding.skipped_copies.values()),
                "corrupted_found": sum(self.report.corrupted_found.values()),
                "missing_found": sum(self.report.missing_found.values()),
                "short_reasons": dict(self.reasons),
                "stopped_early": self.stopped_early, "stores": per_store,
                "summary": "\n".join([self.verdict(), *self.store_lines()])}
