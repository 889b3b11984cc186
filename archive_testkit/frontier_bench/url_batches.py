"""Batches of synthetic crawl links for the frontier's add benchmarks: unique, or a mix of new and seen."""

from __future__ import annotations

import random


def make_batches(urls: int, domains: int, batch: int, *, clustered: bool,
                 seed: int = 7, tag: str = "") -> list[list[tuple[str, int]]]:
    """Unique URLs in batches; clustered batches look like the links of a few pages."""
    rnd = random.Random(seed)
    batches: list[list[tuple[str, int]]] = []
    serial = 0
    while serial < urls:
        hosts = [rnd.randrange(domains) for _ in range(20)]
        links: list[tuple[str, int]] = []
        for _ in range(min(batch, urls - serial)):
            host = rnd.choice(hosts) if clustered and rnd.random() < 0.8 else rnd.randrange(domains)
            query = f"?ref=r{serial % 7}&id={serial}" if serial % 3 == 0 else ""
            links.append((f"https://www.site{host}.example/s{serial % 50}/{tag}page-{serial}{query}",
                          1 + serial % 4))
            serial += 1
        batches.append(links)
    return batches


def mix_batches(old: list[list[tuple[str, int]]], fresh: list[list[tuple[str, int]]],
                new_share: float) -> list[list[tuple[str, int]]]:
    """Batches of `old` (URLs already added) with new_share of their URLs taken from `fresh`.

    Batch i keeps old[i]'s positions and takes its first URLs from fresh[i] (built with the
    same seed: the same hosts), so the domains per batch stay as they were; the counts are
    rounded so that the whole run holds new_share new URLs.
    """
    if not 0.0 <= new_share <= 1.0:
        raise ValueError(f"new_share must be within 0 and 1, not {new_share}")
    mixed: list[list[tuple[str, int]]] = []
    done = total = 0
    for seen, new in zip(old, fresh, strict=True):
        total += len(seen)
        take = round(total * new_share) - done
        done += take
        mixed.append(new[:take] + seen[take:])
    return mixed
