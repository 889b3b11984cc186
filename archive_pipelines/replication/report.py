"""What a worker run reports, and the error that fails the run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.counts import Counts

MAX_ERROR_LINES = 50  # a run against a dead store would otherwise list every object


def one_line(exc: BaseException) -> str:
    """An exception as one line for a report (store errors never carry credentials)."""
    text = str(exc).strip()
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.strerror} ({exc.filename})"
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class BatchReport(Counts):
    """The outcome of `archive_batch` on one batch (per store where it matters)."""

    requested: int = 0
    skipped: int = 0  # already met the policy, unreferenced, or unknown
    planned: int = 0  # objects that needed at least one copy
    unplaceable: int = 0  # objects the configured stores cannot bring up to the policy
    failures: int = 0  # objects that checked valid but could not be copied: the run fails
    short: int = 0  # objects the batch left short of the policy, whatever the reason
    copies: Counter[str] = field(default_factory=Counter)  # per destination: copies recorded
    created: Counter[str] = field(default_factory=Counter)  # of which written by this run
    bytes_copied: Counter[str] = field(default_factory=Counter)  # raw bytes written
    stored_bytes: Counter[str] = field(default_factory=Counter)  # bytes the stores now hold
    corrupted_found: Counter[str] = field(default_factory=Counter)  # per store
    missing_found: Counter[str] = field(default_factory=Counter)  # per store
    failed_copies: Counter[str] = field(default_factory=Counter)  # per destination: tried, failed
    # Per destination: copies it was due that were not tried, the store (or the source)
    # being skipped for the run.
    skipped_copies: Counter[str] = field(default_factory=Counter)
    short_reasons: Counter[str] = field(default_factory=Counter)  # objects per policy.*
    store_problems: dict[str, str] = field(default_factory=dict)  # store -> why it is skipped
    errors: list[str] = field(default_factory=list)
    errors_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.failures == 0

    @property
    def progressed(self) -> bool:
        """Whether this changed anything: copies recorded, or bad sources found."""
        return any(sum(counter.values()) for counter in
                   (self.copies, self.corrupted_found, self.missing_found))

    def note(self, line: str) -> None:
        """Record one error line (bounded; the rest are only counted)."""
        if len(self.errors) < MAX_ERROR_LINES:
            self.errors.append(line)
        else:
            self.errors_dropped += 1

    def add(self, other: BatchReport) -> None:
        """Add `other`: counts and counts per store summed, the first reason a store was
        skipped kept, error lines bounded."""
        self.add_counts(other)
        for store, problem in other.store_problems.items():
            self.store_problems.setdefault(store, problem)  # reported once: the first reason
        for line in other.errors:
            self.note(line)

    def summary(self) -> dict[str, object]:
        """Plain values for run metadata and logs."""
        return {
            "requested": self.requested, "skipped": self.skipped, "planned": self.planned,
            "unplaceable": self.unplaceable, "failures": self.failures, "short": self.short,
            "copies": dict(self.copies), "created": dict(self.created),
            "bytes_copied": dict(self.bytes_copied), "stored_bytes": dict(self.stored_bytes),
            "corrupted_found": dict(self.corrupted_found),
            "missing_found": dict(self.missing_found),
            "failed_copies": dict(self.failed_copies),
            "skipped_copies": dict(self.skipped_copies),
            "short_reasons": dict(self.short_reasons),
            "store_problems": dict(self.store_problems),
            "errors": [*self.errors] + ([f"... and {self.errors_dropped} more"]
                                        if self.errors_dropped else []),
        }


class ReplicationFailed(ArchiveError):
    """Objects that checked valid at their source could not be copied; a later run retries."""

    def __init__(self, report: BatchReport) -> None:
        first = report.errors[0] if report.errors else "see the report"
        super().__init__(f"replication failed for {report.failures} object(s): {first}")
        self.report = report
