"""The figures of `bench/cluster_bench.py`: a `replica_copies` backfill's throughput per case
(1 Celery worker, 2 Celery workers, the asset's own single run) and what they say about adding
worker machines.

Pure functions over what the bench measured; no process, no server.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

CPU_BOUND = 0.8  # the share of the cores busy above which a case is called CPU-bound


@dataclass(frozen=True)
class CaseFigures:
    """One backfill, from launch (the backfill command started) to its last run's end."""

    label: str  # "1 worker", "2 workers", "single run"
    workers: int  # Celery workers (0: no Celery, the multiprocess executor)
    runs: int
    objects: int  # copies present on the replica after the backfill
    wall_s: float  # launch to the last run's end
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds by process kind
    run_s: tuple[float, ...] = ()  # each run's seconds, queued to finished

    @property
    def objects_per_s(self) -> float:
        return rate(self.objects, self.wall_s)

    @property
    def runs_per_s(self) -> float:
        return rate(self.runs, self.wall_s)

    @property
    def cpu_total_s(self) -> float:
        return sum(self.cpu_s.values())

    def cpu_ms_per_object(self, kind: str | None = None) -> float:
        """CPU milliseconds per object copied: all processes, or those of one `kind`."""
        cpu = self.cpu_total_s if kind is None else self.cpu_s.get(kind, 0.0)
        return 1000.0 * cpu / self.objects if self.objects else 0.0

    @property
    def median_run_s(self) -> float:
        return statistics.median(self.run_s) if self.run_s else 0.0


def rate(count: float, seconds: float) -> float:
    """`count` per second; 0 when no time passed (nothing measured)."""
    return count / seconds if seconds > 0 else 0.0


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, thousands separated (12,345; 14.2; 0.0312)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:,.{digits - 1 - math.floor(math.log10(abs(value)))}f}"


def scaling(one: CaseFigures, two: CaseFigures) -> float:
    """Objects/s with two workers over objects/s with one (2.0: perfect scaling)."""
    return rate(two.objects_per_s, one.objects_per_s)


def worker_machine_rate(case: CaseFigures, *, cores: int, worker_kind: str = "workers") -> float:
    """Objects/s one worker machine of `cores` cores could copy, one Celery process per core,
    if only its own CPU bound it: `cores` CPU seconds a second over the workers' CPU per
    object measured in `case`. An upper bound: the daemon's machine (one run process per
    run), PostgreSQL, Redis and the stores must keep up."""
    per_object = case.cpu_ms_per_object(worker_kind) / 1000.0
    return cores / per_object if per_object > 0 else 0.0


def interpretation(one: CaseFigures, two: CaseFigures, *, cores: int) -> str:
    """One line saying what the two Celery cases mean for sizing worker machines."""
    ratio = scaling(one, two)
    added = two.objects_per_s - one.objects_per_s
    busy = cores_busy(two, cores=cores)
    bound = "CPU-bound" if busy >= CPU_BOUND else "not CPU-bound"
    machine = worker_machine_rate(two, cores=cores)
    return (f"{bound} ({busy:.0%} of {cores} cores busy with our processes, {two.workers} "
            f"workers; other load not counted): the services, the daemon's run processes and "
            f"the workers share them here; the second worker added {significant(added)} "
            f"objects/s ({ratio:.2f}x). A worker machine of {cores} cores would add up to "
            f"{significant(machine)} objects/s by the workers' own CPU "
            f"({significant(two.cpu_ms_per_object('workers'))} ms per object, "
            f"{significant(cpu_per_run(two, 'workers'))} s per run of "
            f"{significant(rate(two.objects, two.runs))} objects: larger prefixes spread a "
            f"run's fixed cost), while the daemon's machine spends "
            f"{significant(cpu_per_run(two, 'daemon'))} CPU s per run")


def cores_busy(case: CaseFigures, *, cores: int) -> float:
    """The share of `cores` the case's processes kept busy over its wall time."""
    return rate(case.cpu_total_s, case.wall_s * cores)


def cpu_per_run(case: CaseFigures, kind: str) -> float:
    """CPU seconds of one kind of process per run (`daemon`: its tree, run processes
    included; `workers`: the Celery workers running the run's steps)."""
    return rate(case.cpu_s.get(kind, 0.0), case.runs)
