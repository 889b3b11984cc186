"""ClaimSettings: how many domains a process leases and how it holds and feeds them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimSettings:
    """The DomainClaimer's and the HostDispatcher's knobs (from CrawlerSettings)."""

    capacity: int  # domains leased by this process at most
    batch: int = 64  # domains leased per Redis round trip at most
    poll_s: float = 0.01  # wait before claiming again when fewer domains were due
    page_budget: int = 0  # pages fetched per domain at most (0: no budget)
    per_host: int = 1  # requests in flight to one host at most
    hold_s: float = 0.25  # a host stays leased while its next request is at most this far off
    renew_every_s: float = 1.0  # held hosts' leases are renewed this often (a quarter lease at most)
    # A host other crawls wait for (its gate says so at a renewal) is given up once held
    # this long, as soon as nothing is in flight: crawls of one host take turns.
    share_after_s: float = 1.0
