"""Why a crawl stopped, host by host: the run summary's `stopped` and its counts of URLs left.

"frontier exhausted" means nothing is left queued. A crawl that runs out of work with URLs
still queued (hosts stopped by their page budget, retired, refused) says so, grouped by
why each host stopped; one stopped by a limit or a signal names the limit and what it left.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.leftovers import Leftover, leftovers

log = logging.getLogger(__name__)

EXHAUSTED = "frontier exhausted"  # what a run that ran out of work reports when nothing is left
NOTHING_LEFT_TO_FETCH = "nothing left to fetch"  # the run's own reason when it ran out of work
_EXAMPLES = 3


@dataclass(frozen=True, slots=True)
class HostsStopped:
    """The hosts that stopped for one reason with URLs left queued."""

    reason: str
    hosts: int
    urls_left: int
    bytes_left: int
    examples: tuple[str, ...]  # the hosts with the most URLs left

    def as_metadata(self) -> dict[str, Any]:
        return {"hosts": self.hosts, "urls_left": self.urls_left, "bytes_left": self.bytes_left,
                "examples": list(self.examples)}


@dataclass(frozen=True)
class StopReport:
    """The run's own reason (a limit, a signal, or running out of work) and the hosts'."""

    run_reason: str
    stopped_hosts: list[HostsStopped] = field(default_factory=list)

    @property
    def urls_left(self) -> int:
        return sum(group.urls_left for group in self.stopped_hosts)

    @property
    def summary(self) -> str:
        """The run's reason. A run that ran out of work is "frontier exhausted" only when
        nothing is left queued, else it says what the stopped hosts left, by reason. (A limit
        or a signal is named as it is: the URLs it left are in `stopped_hosts`.)"""
        if self.run_reason != NOTHING_LEFT_TO_FETCH:
            return self.run_reason
        if not self.stopped_hosts:
            return EXHAUSTED
        parts = ", ".join(f"{g.reason} ({_hosts(g.hosts)}, {g.urls_left:,} URLs)"
                          for g in self.stopped_hosts)
        return f"{NOTHING_LEFT_TO_FETCH}; {self.urls_left:,} URLs left queued on stopped hosts: {parts}"

    def hosts_json(self) -> dict[str, dict[str, Any]]:
        return {group.reason: group.as_metadata() for group in self.stopped_hosts}

    def as_metadata(self) -> dict[str, Any]:
        """The summary, the URLs left queued and the stopped hosts by reason."""
        return {"stopped": self.summary, "urls_left": self.urls_left,
                "hosts_stopped": self.hosts_json()}


async def stop_report(frontier: Frontier, run_reason: str) -> StopReport:
    """The run's reason with what every stopped host left queued (read from Redis and the
    files); without them if Redis cannot tell (the summary then says only the run's reason)."""
    try:
        left = await leftovers(frontier)
    except (RedisError, OSError) as exc:
        log.warning("counting the URLs left queued failed: %s", exc)
        return StopReport(run_reason)
    return StopReport(run_reason, group_leftovers(left, active=host_reason_at_stop(run_reason)))


def group_leftovers(leftovers: Iterable[Leftover], *, active: str) -> list[HostsStopped]:
    """Leftovers grouped by why their hosts stopped (`active` for a host that was not
    excluded: it stopped with the run), the most URLs first."""
    groups: dict[str, list[Leftover]] = {}
    for left in leftovers:
        groups.setdefault(left.excluded_reason or active, []).append(left)
    stopped = [HostsStopped(reason, len(items), sum(i.urls_left for i in items),
                            sum(i.bytes_left for i in items),
                            tuple(i.domain for i in sorted(items, key=lambda i: -i.urls_left)
                                  [:_EXAMPLES]))
               for reason, items in groups.items()]
    return sorted(stopped, key=lambda g: (-g.urls_left, g.reason))


def log_stop_report(report: StopReport, dropped: dict[str, int]) -> None:
    """One line per reason hosts stopped, and one with the dropped URLs by reason."""
    for group in report.stopped_hosts:
        log.info("%s: %s stopped with %s URLs (%s bytes) left queued, e.g. %s", group.reason,
                 _hosts(group.hosts), f"{group.urls_left:,}", f"{group.bytes_left:,}",
                 ", ".join(group.examples))
    if dropped:
        log.info("URLs not fetched, by reason: %s",
                 ", ".join(f"{reason} {count:,}" for reason, count in sorted(dropped.items())))


def host_reason_at_stop(run_reason: str) -> str:
    """Why a host that was not excluded stopped: the run's limit, or the run's end."""
    if run_reason.startswith("max seconds"):
        return "time limit"
    if run_reason.startswith("max pages"):
        return "page limit of the run"
    return "not done when the run stopped"


def _hosts(count: int) -> str:
    return f"{count:,} host" if count == 1 else f"{count:,} hosts"
