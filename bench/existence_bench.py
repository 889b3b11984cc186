"""Issue 16, item 5 (seed 003's "bloom filter for quick not-exists"): does a file-backed Bloom
filter answer "is this body new?" faster than asking the blob store?

The crawler checks every fetched body before writing it (`archiver._put_deduplicated`:
`store.exists(sha256)`, one stat of `cas/sha256/ab/cd/<hash>`). Seed 003 puts a Bloom
filter in front of that. Here both answer the same questions, side by side, alternated:

  (a) the store's own check: `LocalBlobStore.exists` (a stat; a present body's folder and
      name are in the dentry cache after the crawler wrote them, an absent one is a
      negative lookup)
  (b) a Bloom filter in an mmap'd file under cache/ (k bit positions cut from the sha256
      itself, so no extra hashing), falling back to (a) when it says "maybe" (it cannot say
      "present" for sure, so every present body costs (b) + (a))

over a store of N blobs, for bodies that are new (absent) and for duplicates (present), in
the crawl's mix (`--dup-share`, default 0.30: the share of duplicate bodies the bench crawl
sees). The verdict: the filter is worth keeping only if (b) beats (a) on the mix by more
than 10%.

    python bench/existence_bench.py [--blobs 200000] [--queries 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import hashlib
import mmap
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from archive_pipelines.blobstore import LocalBlobStore  # noqa: E402


class FileBloom:
    """A Bloom filter in an mmap'd file: m bits, k positions from 4-byte slices of the hash."""

    def __init__(self, path: Path, capacity: int, fp_rate: float = 0.001) -> None:
        import math

        self.bits = max(8, int(-capacity * math.log(fp_rate) / (math.log(2) ** 2)))
        self.k = max(1, min(8, round(self.bits / capacity * math.log(2))))
        size = (self.bits + 7) // 8
        with open(path, "wb") as handle:
            handle.truncate(size)
        self._file = open(path, "r+b")  # noqa: SIM115
        self._map = mmap.mmap(self._file.fileno(), size)

    def _positions(self, digest: bytes) -> list[int]:
        bits = self.bits
        return [int.from_bytes(digest[4 * i:4 * i + 4], "little") % bits for i in range(self.k)]

    def add(self, digest: bytes) -> None:
        for pos in self._positions(digest):
            self._map[pos >> 3] |= 1 << (pos & 7)

    def maybe(self, digest: bytes) -> bool:
        data = self._map
        return all(data[pos >> 3] & (1 << (pos & 7)) for pos in self._positions(digest))

    def close(self) -> None:
        self._map.close()
        self._file.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blobs", type=int, default=200_000, help="blobs in the store")
    parser.add_argument("--queries", type=int, default=200_000, help="checks per case and round")
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds (median)")
    parser.add_argument("--dup-share", type=float, default=0.30,
                        help="share of duplicate (present) bodies in the mix")
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "existence",
                        help="where the store is built (reused)")
    args = parser.parse_args()
    print(f"existence bench {time.strftime('%Y-%m-%d %H:%M')}: {args.blobs:,} blobs, "
          f"{args.queries:,} checks per case, {args.rounds} rounds; load {os.getloadavg()}")
    store = LocalBlobStore(args.work / "cas", name="primary", codec="raw")
    rng = random.Random(16)
    digests = [hashlib.sha256(b"blob %d" % i).digest() for i in range(args.blobs)]
    marker = args.work / f".made-{args.blobs}"
    if not marker.exists():
        started = time.perf_counter()
        with store.deferred_sync():
            for i in range(args.blobs):
                store.put_bytes(b"blob %d" % i)
        store.sync()
        marker.write_text("ok\n")
        print(f"made the store in {time.perf_counter() - started:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        bloom = FileBloom(Path(tmp) / "bloom.bin", capacity=max(args.blobs * 2, 1000))
        for digest in digests:
            bloom.add(digest)
        present = [rng.choice(digests) for _ in range(args.queries)]
        absent = [hashlib.sha256(b"new %d" % i).digest() for i in range(args.queries)]
        mix = [rng.choice(digests) if rng.random() < args.dup_share else
               hashlib.sha256(b"mix %d" % i).digest() for i in range(args.queries)]
        cases = {"new": absent, "duplicate": present, "crawl mix": mix}

        def by_store(queries: list[bytes]) -> float:
            exists = store.exists
            started = time.perf_counter()
            for digest in queries:
                exists(digest.hex())
            return (time.perf_counter() - started) / len(queries) * 1e6

        def by_bloom(queries: list[bytes]) -> float:
            exists, maybe = store.exists, bloom.maybe
            started = time.perf_counter()
            for digest in queries:
                if maybe(digest):
                    exists(digest.hex())
            return (time.perf_counter() - started) / len(queries) * 1e6

        times: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            order = [("a", by_store), ("b", by_bloom)]
            if round_no % 2:
                order.reverse()
            for case, queries in cases.items():
                for name, fn in order:
                    times.setdefault((case, name), []).append(fn(queries))
        false_positives = sum(bloom.maybe(d) for d in absent) / len(absent)
        bloom_bytes = (bloom.bits + 7) // 8
        bloom.close()
    print(f"Bloom filter: {bloom_bytes / 1e6:.1f} MB for {args.blobs * 2:,} bodies, k={bloom.k}, "
          f"measured false positives {false_positives:.3%}")
    print(f"{'case':<12} {'(a) store.exists':>18} {'(b) bloom + exists':>20} {'(b)/(a)':>8}   "
          "(median us per check)")
    verdict = 1.0
    for case in cases:
        a = statistics.median(times[(case, "a")])
        b = statistics.median(times[(case, "b")])
        print(f"{case:<12} {a:>18.2f} {b:>20.2f} {b / a:>8.2f}")
        if case == "crawl mix":
            verdict = b / a
    print(f"load {os.getloadavg()}")
    keep = verdict < 0.9
    print(f"{'KEEP' if keep else 'DROP'}  Bloom filter: (b)/(a) on the crawl mix {verdict:.2f} "
          f"({'wins' if keep else 'does not win'} by more than 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
