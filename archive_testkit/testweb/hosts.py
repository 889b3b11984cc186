"""Per-host traits: robots.txt flavour, dead hosts, hosts with special paths or traps."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from archive_testkit.testweb.config import TestWebConfig, host_index, host_name
from archive_testkit.testweb.seeding import stable_fraction, stable_int, stable_rng


class RobotsKind(StrEnum):
    NONE = "none"  # /robots.txt is 404
    STANDARD = "standard"  # Disallow: /private/
    CRAWL_DELAY = "crawl-delay"  # Disallow: /private/ and Crawl-delay
    GARBAGE = "garbage"  # binary junk
    HUGE = "huge"  # Disallow: /private/ first, then megabytes of filler


class DeadMode(StrEnum):
    ALIVE = "alive"
    CLOSE = "close"  # closes the connection without answering
    UNAVAILABLE = "503"  # answers 503 to everything


@dataclass(frozen=True)
class HostTraits:
    host: str
    index: int
    robots: RobotsKind
    dead: DeadMode
    special: bool  # serves and links /redirect/, /loop/, /missing/, /error/, documents ...
    traps: bool  # serves and links /slow/ and /huge/

    @property
    def alive(self) -> bool:
        return self.dead is DeadMode.ALIVE

    @property
    def disallows_private(self) -> bool:
        """Whether a robots.txt parser that understands the file must skip /private/."""
        return self.robots in (RobotsKind.STANDARD, RobotsKind.CRAWL_DELAY, RobotsKind.HUGE)


def host_traits(config: TestWebConfig, host: str) -> HostTraits | None:
    """Traits of a host (port ignored), or None if the test web has no such host."""
    index = host_index(config, host)
    return None if index is None else traits_by_index(config, index)


@functools.lru_cache(maxsize=65536)
def traits_by_index(config: TestWebConfig, index: int) -> HostTraits:
    """Traits of host number `index`. Host 0 is always alive with a plain robots.txt."""
    dead = _dead_mode(config, index)
    robots = RobotsKind.NONE if dead is not DeadMode.ALIVE else _robots_kind(config, index)
    if index in _huge_robots_indices(config):
        robots = RobotsKind.HUGE
    if index == 0:
        dead, robots = DeadMode.ALIVE, RobotsKind.STANDARD
    return HostTraits(
        host=host_name(config, index),
        index=index,
        robots=robots,
        dead=dead,
        special=stable_fraction(config.seed, "special", index) < config.special_fraction,
        traps=stable_fraction(config.seed, "traps", index) < config.trap_fraction,
    )


def hosts_where(config: TestWebConfig, predicate: Callable[[HostTraits], bool]) -> list[str]:
    """Names of the hosts whose traits satisfy the predicate, in index order."""
    return [
        traits.host
        for traits in (traits_by_index(config, n) for n in range(config.hosts))
        if predicate(traits)
    ]


def _dead_mode(config: TestWebConfig, index: int) -> DeadMode:
    if index == 0 or stable_fraction(config.seed, "dead", index) >= config.dead_fraction:
        return DeadMode.ALIVE
    odd = stable_int(config.seed, "dead-mode", index) % 2
    return DeadMode.CLOSE if odd else DeadMode.UNAVAILABLE


def _robots_kind(config: TestWebConfig, index: int) -> RobotsKind:
    draw = stable_fraction(config.seed, "robots", index)
    if draw < config.garbage_robots_fraction:
        return RobotsKind.GARBAGE
    if draw >= config.robots_fraction:
        return RobotsKind.NONE
    if stable_fraction(config.seed, "crawl-delay", index) < config.crawl_delay_fraction:
        return RobotsKind.CRAWL_DELAY
    return RobotsKind.STANDARD


@functools.lru_cache(maxsize=64)
def _huge_robots_indices(config: TestWebConfig) -> frozenset[int]:
    alive = [n for n in range(1, config.hosts) if _dead_mode(config, n) is DeadMode.ALIVE]
    count = max(0, min(config.huge_robots_hosts, len(alive)))
    return frozenset(stable_rng(config.seed, "huge-robots").sample(alive, count))
