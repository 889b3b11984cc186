"""S3 requests per blob (issue 33, "small objects"): what storing, re-storing, reading and
looking up a web-archive body costs in HTTP requests and dollars, and whether small blobs
should be packed.

    .venv/bin/python bench/s3_requests_bench.py [--bodies 400]

Bodies: `--bodies` web-archive-like response bodies (log-normal sizes around 6 KB, most
under 16 KB, as Software Heritage finds for its 25 billion objects: HTML, JS/CSS text and
images), stored in a bucket on a throwaway moto_server (S3_ENDPOINT_URL reuses a running
endpoint) by `S3BlobStore`, for each codec (raw, zstd) and each put strategy: HEAD first
(the default: a HeadObject, then a PutObject if the blob is new) and conditional
(`look_before_put=False`: one PutObject with `If-None-Match: *`, refused with 412 when the
object exists). The crawler's own path (the archiver's `_put_deduplicated`) is measured too.
Requests are counted by the store itself (`S3BlobStore.request_counts`, a botocore
`before-send` hook: every HTTP request sent, retries included); the counts do not depend on
machine load. Prices: S3 Standard list prices, us-east-1, see PRICES_SOURCE.
"""

from __future__ import annotations

import argparse
import io
import math
import random
import statistics
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus_content import CSS_TOKENS, JPEG, JS_TOKENS, PNG, binary, html_page, text  # noqa: E402
from s3_endpoint import bench_bucket  # noqa: E402

from archive_pipelines.blobstore import S3BlobStore  # noqa: E402
from archive_pipelines.blobstore.s3_requests import (  # noqa: E402
    READ_TIER_PRICE,
    WRITE_TIER_PRICE,
    request_cost,
)
from frontier_service.archiving.archiver import _put_deduplicated  # noqa: E402

PRICES_SOURCE = ("S3 Standard, us-east-1 list prices as quoted on 2026-11-28 by c3x.dev "
                 "('S3 request fees explained') and cloudcostkit.com ('S3 request costs', "
                 "updated 2026-02-07), both from aws.amazon.com/s3/pricing: PUT/COPY/POST/LIST "
                 "$0.005 per 1,000, GET/HEAD and others $0.0004 per 1,000, DELETE free; "
                 "storage $0.023 per GB-month (first 50 TB; devnotes.tech). Refused (412) "
                 "conditional PUTs are assumed billed as PUTs.")
STORAGE_PRICE_GB_MONTH = 0.023
# Share of captures whose body the store already holds.
DEDUP_SHARES = (
    (0.0, "first crawl of new sites"),
    (0.30, "captures_bench's generated crawl (by design)"),
    (0.907, "recrawl of a site, measured: RESULTS.md session 14, 4,534 of 5,000 unchanged"),
)
HEADLINE_SHARE = 0.30
PACK_ABOVE = 1.2  # requests per blob stored or read (issue 33)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=400, help="bodies per case (400)")
    parser.add_argument("--seed", type=int, default=33)
    return parser.parse_args()


def make_bodies(count: int, seed: int) -> list[bytes]:
    """Distinct web-archive-like bodies: 40% HTML, 20% JS or CSS, 40% images."""
    rng = random.Random(seed)
    bodies = []
    for index in range(count):
        size = min(4 << 20, max(200, int(rng.lognormvariate(math.log(6000), 1.3))))
        kind = rng.random()
        if kind < 0.4:
            body = html_page(rng, f"page {index}", size)
        elif kind < 0.5:
            body = text(rng, size, JS_TOKENS, b"")
        elif kind < 0.6:
            body = text(rng, size, CSS_TOKENS, b"\n")
        else:
            body = binary(rng, PNG if kind < 0.8 else JPEG, size)
        bodies.append(f"{index}\n".encode() + body)  # distinct even when tiny
    return bodies


def describe_sizes(bodies: list[bytes]) -> str:
    sizes = sorted(map(len, bodies))
    q1, median, q3 = statistics.quantiles(sizes, n=4)
    small = sum(size < 16_384 for size in sizes) / len(sizes)
    return (f"{len(sizes):,} distinct bodies: median {median / 1000:.1f} KB, quartiles "
            f"{q1 / 1000:.1f}-{q3 / 1000:.1f} KB, mean {statistics.fmean(sizes) / 1000:.1f} KB, "
            f"max {sizes[-1] / 1000:,.0f} KB; {small:.0%} under 16 KB "
            "(Software Heritage: 75%)")


def per_blob(store: S3BlobStore, count: int, action: Callable[[], object]) -> dict[str, float]:
    store.take_request_counts()
    action()
    return {op: n / count for op, n in sorted(store.take_request_counts().items())}


def fmt(counts: dict[str, float]) -> str:
    total = sum(counts.values())
    parts = ", ".join(f"{op} {n:.2f}" for op, n in counts.items())
    return f"{total:.2f} ({parts})"


def read_all(store: S3BlobStore, hashes: list[str]) -> None:
    for sha256 in hashes:
        with store.open(sha256) as reader:
            reader.read()


def measure(endpoint: str, bucket: str, codec: str, strategy: str, bodies: list[bytes]
            ) -> dict[str, dict[str, float]]:
    n = len(bodies)
    store = S3BlobStore(bucket=bucket, prefix=f"{codec}-{strategy}", name=f"s3-{codec}",
                        codec=codec, endpoint_url=endpoint, region="us-east-1",
                        look_before_put=strategy != "conditional")
    store.probe()  # the store's one HeadBucket (the first miss asks), not per blob
    store.take_request_counts()
    hashes: list[str] = []
    stored_bytes: list[int] = []

    def put_new() -> None:
        for body in bodies:
            put = (_put_deduplicated(store, body) if strategy == "crawler"
                   else store.put_bytes(body))
            assert put.created
            hashes.append(put.sha256)
            stored_bytes.append(put.stored_bytes)

    def put_again() -> None:
        for body in bodies:
            put = (_put_deduplicated(store, body) if strategy == "crawler"
                   else store.put_bytes(body))
            assert not put.created

    def put_verified_again() -> None:
        for sha256, body in zip(hashes, bodies, strict=True):
            assert not store.put_verified(sha256, io.BytesIO(body), size=len(body)).created

    cases = {"store new": per_blob(store, n, put_new),
             "store present": per_blob(store, n, put_again)}
    if strategy != "crawler":
        cases["put_verified present"] = per_blob(store, n, put_verified_again)
        cases["read whole"] = per_blob(store, n, lambda: read_all(store, hashes))
        cases["exists"] = per_blob(store, n, lambda: [store.exists(h) for h in hashes])
    cases["_stored_bytes"] = {"mean": statistics.fmean(stored_bytes)}
    return cases


def cost_per_million(counts: dict[str, float]) -> float:
    return request_cost({op: round(n * 1_000_000) for op, n in counts.items()})


def main() -> int:
    args = parse_args()
    with bench_bucket("requests") as (endpoint, bucket):
        bodies = make_bodies(args.bodies, args.seed)
        print(f"s3 requests bench {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; S3 = moto_server at "
              f"{endpoint}; requests counted by S3BlobStore.request_counts (before-send)")
        print(f"bodies: {describe_sizes(bodies)}")
        print(f"prices: {PRICES_SOURCE}")
        results: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        for codec in ("raw", "zstd"):
            for strategy in ("head-first", "conditional", "crawler"):
                results[codec, strategy] = cases = measure(endpoint, bucket, codec, strategy,
                                                           bodies)
                mean_stored = cases.pop("_stored_bytes")["mean"]
                print(f"\n{codec}, {strategy}"
                      + {"head-first": " (default: HeadObject, then PutObject if new)",
                         "conditional": " (look_before_put=False: PutObject If-None-Match: *)",
                         "crawler": " (the crawler's archiver: _put_deduplicated)"}
                      [strategy] + f"; mean stored object {mean_stored / 1000:.1f} KB")
                for case, counts in cases.items():
                    print(f"  {case:<22} requests/blob {fmt(counts):<52} "
                          f"${cost_per_million(counts):.2f} per million")
                results[codec, strategy]["_mean"] = {"stored": mean_stored}
        print_costs(results)
        return 0


def print_costs(results: dict[tuple[str, str], dict[str, dict[str, float]]]) -> None:
    print("\nper million captures (requests only; a capture = one body referenced; "
          "d = share whose body is stored already):")
    print(f"  {'codec':<5} {'strategy':<12} {'d':>6}  {'req/capture stored':>18} "
          f"{'$ stored':>9} {'req/read':>8} {'$ read':>7}  storage $/month of new bodies")
    for (codec, strategy), cases in results.items():
        read = sum(cases.get("read whole", {}).values()) if "read whole" in cases else None
        for share, _why in DEDUP_SHARES:
            new, present = cases["store new"], cases["store present"]
            stored = (1 - share) * sum(new.values()) + share * sum(present.values())
            dollars = ((1 - share) * cost_per_million(new)
                       + share * cost_per_million(present))
            storage = ((1 - share) * cases["_mean"]["stored"] * 1e6 / 1e9
                       * STORAGE_PRICE_GB_MONTH)
            read_text = (f"{read:>8.2f} ${cost_per_million(cases['read whole']):>6.2f}"
                         if read is not None else f"{'-':>8} {'-':>7}")
            print(f"  {codec:<5} {strategy:<12} {share:>6.1%}  {stored:>18.2f} "
                  f"${dollars:>8.2f} {read_text}  ${storage:.2f}")
    print("  d: " + "; ".join(f"{share:.1%} = {why}" for share, why in DEDUP_SHARES))
    write, read_price = WRITE_TIER_PRICE * 1e6, READ_TIER_PRICE * 1e6
    breakeven = read_price / write  # HEAD-first costs (1-d)(H+P)+dH, conditional P
    print(f"  HEAD-first is cheaper than conditional puts when d > H/P = {breakeven:.0%} "
          f"(H = ${read_price:.2f}, P = ${write:.2f} per million)")
    verdict(results)


def verdict(results: dict[tuple[str, str], dict[str, dict[str, float]]]) -> None:
    share = HEADLINE_SHARE
    print(f"\npacking verdict (issue 33: pack only if > {PACK_ABOVE} requests per blob stored "
          f"or read), at d = {share:.0%}:")
    for (codec, strategy), cases in results.items():
        if strategy == "crawler":
            continue
        stored = ((1 - share) * sum(cases["store new"].values())
                  + share * sum(cases["store present"].values()))
        read = sum(cases["read whole"].values())
        worst = max(stored, read)
        print(f"  {codec:<4} {strategy:<11}: {stored:.2f} per blob stored, {read:.2f} per "
              f"read -> {'above' if worst > PACK_ABOVE else 'within'} {PACK_ABOVE}")
    conditional = [max((1 - share) * sum(c["store new"].values())
                       + share * sum(c["store present"].values()),
                       sum(c["read whole"].values()))
                   for (_codec, strategy), c in results.items() if strategy == "conditional"]
    zstd = results["zstd", "conditional"]
    put_new = cost_per_million(zstd["store new"])
    storage = zstd["_mean"]["stored"] * 1e6 / 1e9 * STORAGE_PRICE_GB_MONTH
    print(f"  catalog first, then conditional (derived: a body the catalog records as stored "
          f"costs 0 requests, a new one the measured conditional PutObject): "
          f"{1 - share:.2f} requests and ${(1 - share) * put_new:.2f} per million captures "
          f"stored at d = {share:.0%}")
    if max(conditional) <= PACK_ABOVE:
        print("  VERDICT: do not pack (by the issue's rule). One request per blob stored "
              "(conditional PUT, new or present; none if the catalog knows it) and one per "
              "read. The HEAD-first default sends 2 requests per new blob but costs fewer "
              f"dollars than blind conditional puts when d > {READ_TIER_PRICE / WRITE_TIER_PRICE:.0%}.")
    else:
        print("  VERDICT: pack small blobs: even conditional puts exceed the threshold.")
    print(f"  Caveat in dollars: one PUT of a new zstd body (${put_new:.2f} per million) costs "
          f"{put_new / storage:.0f} months of storing it (${storage:.2f} per million bodies "
          f"a month at {zstd['_mean']['stored'] / 1000:.1f} KB); packs of N bodies would cut "
          "that PUT cost ~N-fold. The request count says no; the bill may still favour packs "
          "for write-heavy, rarely-read collections.")

if __name__ == "__main__":
    raise SystemExit(main())
