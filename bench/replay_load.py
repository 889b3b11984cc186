"""`replay_bench.py --only replay`: our replay server (`archive-pipelines replay`) beside pywb
2.10 (`pywb_peer.py`) serving the same captures, under the load a browser makes.

For each corpus (`replay_corpus.py`: a real crawl of the test web with `--pages` pages, and a
generated WARC of `--records` records from which `--pages` pages are sampled) both servers
run at once, each in its own process group on a free port of 127.0.0.1, and are stopped at the
end. Per page, the requests a browser makes: the page in rewritten mode at its capture's
exact timestamp (ours `/web/<ts>/<url>`, pywb `/bench/<ts>/<url>`), then every image, script,
stylesheet, font and icon the rewritten page names (and the fonts and images its rewritten
stylesheets name), each once, as that server rewrote them; a redirect (to the exact timestamp
of a resource captured at another second) is followed as the browser would, as one more
request. pywb's own `/static/` files (its banner and wombat.js) are not requested: a browser
keeps them cached.

A discovery pass per server finds each server's requests and checks every answer: the last
hop a 200 with a non-empty body, and both servers answering the same status for the same
original URL, with the same number of redirects (302 and 307 alike); any difference stops the
bench. Then a warm-up (a tenth of the pages) and `--runs` timed runs per server, alternated
(ours, pywb, pywb, ours, ...), each replaying every page's requests with the same asyncio
aiohttp client at a fixed concurrency (16 pages in flight, each page's requests in order,
keep-alive): requests/s per run (median reported), latency p50/p99 over every timed request,
server CPU per request. Every timed answer is checked again (its status as in discovery, a
non-empty body for a 200). Verdict per corpus: ours / pywb requests/s >= 1 (goal 3).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from pywb_peer import check_venv, ensure_collection, start_pywb, wayback_command
from replay_corpus import (
    Corpus,
    archive_pipelines,
    ensure_crawl_corpus,
    ensure_generated_corpus,
    env,
)

REQUIRED_RATIO = 1.0
GOAL_RATIO = 3.0
REDIRECTS = frozenset((301, 302, 303, 307, 308))
CSS_URL = re.compile(rb"""url\(\s*(['"]?)([^'")\s]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


# ---- the servers -------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One replay server process: its name, URL prefix of mementos and base URL."""

    name: str
    prefix: str
    base: str
    process: subprocess.Popen[bytes]
    command: list[str]

    def memento(self, url: str, timestamp: str) -> str:
        return f"{self.prefix}{timestamp}/{url}"

    def original(self, path: str) -> str | None:
        """The original URL an archive path of this server names (None: not a memento)."""
        if not path.startswith(self.prefix):
            return None
        match = re.match(r"(\d{1,14})(?:[a-z]{2}_)?/(.+)", path[len(self.prefix):], re.S)
        return match.group(2) if match else None

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 15 s."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


def _wait_ready(process: subprocess.Popen[bytes], port: int, what: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"error: {what} exited with {process.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"error: {what} did not listen on port {port} within 120 s; see {log}")


def start_ours(corpus: Corpus, log: Path) -> Server:
    port = free_port()
    command = archive_pipelines("--data-dir", str(corpus.data_dir), "replay", "--host",
                                "127.0.0.1", "--port", str(port))
    with open(log, "ab") as out:
        process = subprocess.Popen(command, env=env(), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = Server("ours", "/web/", f"http://127.0.0.1:{port}", process, command)
    try:
        _wait_ready(process, port, "archive-pipelines replay", log)
    except BaseException:
        server.stop()
        raise
    return server


def start_peer(corpus: Corpus, root: Path, log: Path) -> Server:
    port = free_port()
    process = start_pywb(root, port, log)
    server = Server("pywb", "/bench/", f"http://127.0.0.1:{port}", process,
                    wayback_command(port))
    try:
        _wait_ready(process, port, "pywb's wayback", log)
    except BaseException:
        server.stop()
        raise
    return server


# ---- what a browser requests -------------------------------------------------------------

class _Resources(HTMLParser):
    """The URLs of subresources an HTML page names (what a browser loads without scripts)."""

    LINK_RELS = frozenset(("stylesheet", "preload", "icon", "shortcut", "modulepreload",
                           "apple-touch-icon"))

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        found: list[str] = []
        if tag in ("img", "source", "script", "audio", "video", "embed", "track", "iframe"):
            found.append(values.get("src", ""))
        if tag in ("img", "source") and values.get("srcset"):
            found += [part.strip().split(" ")[0] for part in values["srcset"].split(", ")]
        if tag == "video":
            found.append(values.get("poster", ""))
        if tag == "input" and values.get("type", "").lower() == "image":
            found.append(values.get("src", ""))
        if tag == "object":
            found.append(values.get("data", ""))
        if tag == "link" and self.LINK_RELS & set(values.get("rel", "").lower().split()):
            found.append(values.get("href", ""))
        if values.get("style"):
            found += css_urls(values["style"].encode())
        self.urls += [url.strip() for url in found if url.strip()]

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.urls += css_urls(data.encode())


def css_urls(css: bytes) -> list[str]:
    return [(m.group(2) or m.group(4)).decode("latin-1") for m in CSS_URL.finditer(css)]


def html_resources(body: bytes) -> list[str]:
    parser = _Resources()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    return parser.urls


@dataclass(frozen=True)
class Hop:
    path: str
    status: int


@dataclass
class Fetched:
    """One original URL as a server answered it: its hops, the last body's type and body."""

    original: str
    hops: list[Hop]
    content_type: str = ""
    body: bytes = b""

    @property
    def final(self) -> int:
        return self.hops[-1].status

    @property
    def redirects(self) -> int:
        return len(self.hops) - 1


@dataclass
class PagePlan:
    """A page's requests on one server, in the order the client makes them."""

    page: str
    fetched: list[Fetched] = field(default_factory=list)

    @property
    def requests(self) -> list[Hop]:
        return [hop for item in self.fetched for hop in item.hops]


async def _follow(session: aiohttp.ClientSession, server: Server, path: str) -> Fetched:
    hops: list[Hop] = []
    for _ in range(6):
        async with session.get(server.base + path, allow_redirects=False) as answer:
            body = await answer.read()
            hops.append(Hop(path, answer.status))
            location = answer.headers.get("Location")
            if answer.status not in REDIRECTS or not location:
                return Fetched(server.original(hops[0].path) or path, hops,
                               answer.headers.get("Content-Type", ""), body)
        target = urlsplit(urljoin(server.base + path, location))
        if f"{target.scheme}://{target.netloc}" != server.base:
            break
        path = target.path + (f"?{target.query}" if target.query else "")
    raise SystemExit(f"error: {server.name}: {hops[0].path} redirects out of the archive or "
                     f"more than 5 times: {[h.status for h in hops]}")


def _archive_paths(server: Server, at: str, refs: Iterable[str]) -> list[str]:
    """The refs that are mementos on this server, as paths (others: the server's own files)."""
    paths = []
    for ref in refs:
        target = urlsplit(urljoin(server.base + at, ref))
        path = target.path + (f"?{target.query}" if target.query else "")
        if f"{target.scheme}://{target.netloc}" == server.base and server.original(path):
            paths.append(path)
    return paths


async def plan_page(session: aiohttp.ClientSession, server: Server, url: str,
                    timestamp: str) -> PagePlan:
    plan = PagePlan(url)
    page = await _follow(session, server, server.memento(url, timestamp))
    plan.fetched.append(page)
    seen = {page.hops[0].path}
    queue = _archive_paths(server, page.hops[-1].path, html_resources(page.body))
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        item = await _follow(session, server, path)
        plan.fetched.append(item)
        if "css" in item.content_type:  # what the stylesheet loads, once (no deeper)
            queue += [p for p in _archive_paths(server, item.hops[-1].path, css_urls(item.body))
                      if p not in seen]
    return plan


async def discover(server: Server, pages: list[tuple[str, str]],
                   concurrency: int) -> list[PagePlan]:
    """Every page's plan on `server` (pages in order); the answers checked."""
    plans: list[PagePlan | None] = [None] * len(pages)
    async with _client(concurrency) as session:
        async def worker(numbers: list[int]) -> None:
            while numbers:
                number = numbers.pop()
                plans[number] = await plan_page(session, server, *pages[number])
        numbers = list(range(len(pages)))[::-1]
        await asyncio.gather(*(worker(numbers) for _ in range(concurrency)))
    done = [plan for plan in plans if plan is not None]
    for plan in done:
        for item in plan.fetched:
            if item.final != 200 or not item.body:
                raise SystemExit(f"error: {server.name} answered {item.final} "
                                 f"({len(item.body)} bytes) for {item.hops[-1].path} "
                                 f"(page {plan.page})")
    return done


def _keyed(plan: PagePlan) -> dict[str, tuple[int, int]]:
    from archive_pipelines.surt import urlkey

    return {urlkey(item.original): (item.final, item.redirects) for item in plan.fetched}


def compare(ours: list[PagePlan], peer: list[PagePlan]) -> tuple[int, int, int, list[str]]:
    """(URLs both requested, named by ours only, by pywb only, disagreements)."""
    both = only_ours = only_peer = 0
    wrong: list[str] = []
    for mine, theirs in zip(ours, peer, strict=True):
        a, b = _keyed(mine), _keyed(theirs)
        both += len(a.keys() & b.keys())
        only_ours += len(a.keys() - b.keys())
        only_peer += len(b.keys() - a.keys())
        wrong += [f"{key}: ours {a[key]}, pywb {b[key]} (status, redirects) on page {mine.page}"
                  for key in sorted(a.keys() & b.keys()) if a[key] != b[key]]
    return both, only_ours, only_peer, wrong


# ---- timed runs --------------------------------------------------------------------------

def _client(concurrency: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=concurrency, ttl_dns_cache=None)
    return aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                 timeout=aiohttp.ClientTimeout(total=60))


@dataclass
class Run:
    server: str
    requests: int
    seconds: float
    cpu_s: float
    client_cpu_s: float
    latencies_ms: list[float]
    wrong: list[str]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


async def timed_run(server: Server, plans: list[PagePlan], concurrency: int) -> Run:
    latencies: list[float] = []
    wrong: list[str] = []
    todo = list(range(len(plans)))[::-1]
    async with _client(concurrency) as session:
        async def worker() -> None:
            clock = time.perf_counter
            while todo:
                for hop in plans[todo.pop()].requests:
                    started = clock()
                    try:
                        async with session.get(server.base + hop.path,
                                               allow_redirects=False) as answer:
                            body = await answer.read()
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        wrong.append(f"{hop.path}: {exc!r}")
                        continue
                    latencies.append((clock() - started) * 1000)
                    if answer.status != hop.status or (hop.status == 200 and not body):
                        wrong.append(f"{hop.path}: {answer.status} ({len(body)} bytes), "
                                     f"expected {hop.status}")
        cpu, client = server.cpu_seconds(), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
        cpu, client = server.cpu_seconds() - cpu, time.process_time() - client
    requests = sum(len(plan.requests) for plan in plans)  # every one made, answered or not
    return Run(server.name, requests, seconds, cpu, client, latencies, wrong)


def _loop_runner() -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


def bench_corpus(corpus: Corpus, *, runs: int, concurrency: int, work: Path,
                 ready_s: float) -> bool:
    run_async = _loop_runner()
    peer_root, index_s = ensure_collection(corpus.warc)
    steps = ", ".join(f"{k.removesuffix('_s')} {float(str(v)):.0f} s"
                      for k, v in corpus.info.items() if k.endswith("_s"))
    print(f"\nreplay: {corpus.label} (WARC {int(str(corpus.info['warc_bytes'])) / 1e6:,.1f} MB, "
          f"{corpus.records:,} records), {len(corpus.pages):,} pages requested; corpus ready in "
          f"{ready_s:.0f} s (made in {float(str(corpus.info['seconds'])):.0f} s: {steps}"
          f"{', cached since' if ready_s < 1 else ''}); pywb's index "
          f"{'cached' if index_s is None else f'made in {index_s:.0f} s'}")
    log = work / "servers.log"
    ours = start_ours(corpus, log)
    try:
        peer = start_peer(corpus, peer_root, log)
        try:
            return _measure(corpus, ours, peer, runs=runs, concurrency=concurrency,
                            run_async=run_async)
        finally:
            peer.stop()
    finally:
        ours.stop()


def _measure(corpus: Corpus, ours: Server, peer: Server, *, runs: int, concurrency: int,
             run_async: Any) -> bool:
    servers = (ours, peer)
    for server in servers:
        shown = server.command[4:] if server.name == "ours" else server.command
        print(f"  {server.name}: {' '.join(shown)} ({server.base}{server.prefix})")
    plans: dict[str, list[PagePlan]] = {}
    for server in servers:
        started = time.perf_counter()
        plans[server.name] = run_async(discover(server, corpus.pages, concurrency))
        counts = [len(plan.requests) for plan in plans[server.name]]
        redirects = sum(item.redirects for plan in plans[server.name] for item in plan.fetched)
        print(f"  {server.name} discovery: {sum(counts):,} requests "
              f"({len(counts):,} pages, {sum(counts) - len(counts) - redirects:,} resources, "
              f"{redirects:,} redirects to exact timestamps; {statistics.mean(counts):.1f} "
              f"a page) in {time.perf_counter() - started:.1f} s, every answer 200 and non-empty")
    both, only_ours, only_peer, wrong = compare(plans["ours"], plans["pywb"])
    print(f"  the same original URLs asked of both: {both:,}; named by ours only {only_ours:,},"
          f" by pywb only {only_peer:,}; status or redirects differing: {len(wrong):,}")
    for line in wrong[:10]:
        print(f"    {line}")
    if wrong:
        print(f"FAIL  replay ({corpus.label}): the servers answer differently")
        return False
    warm = max(1, len(corpus.pages) // 10)
    for server in servers:
        run_async(timed_run(server, plans[server.name][:warm], concurrency))
    order = [servers[0 if n % 4 in (0, 3) else 1] for n in range(2 * runs)]  # ours, pywb, pywb, ours
    results: dict[str, list[Run]] = {"ours": [], "pywb": []}
    for number, server in enumerate(order, 1):
        result = run_async(timed_run(server, plans[server.name], concurrency))
        results[server.name].append(result)
        print(f"  run {number:>2} {server.name:<5} {result.requests:>8,} requests in "
              f"{result.seconds:6.2f} s = {result.rate:8.1f}/s, server CPU "
              f"{result.cpu_s:6.2f} s, client CPU {result.client_cpu_s:6.2f} s, "
              f"wrong {len(result.wrong)}; {load()}")
    alone = {server.name: run_async(timed_run(server, plans[server.name][:warm], 1))
             for server in servers}  # one request at a time: latency without queueing
    print(f"  {'server':<6} {'runs':>4} {'requests/s':>11} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'CPU ms/req':>10} {'alone p50':>9} {'alone p99':>9}  (requests/s and CPU: medians "
          f"over runs; p50/p99 over every timed request at concurrency {concurrency}; alone: "
          f"the warm-up's {warm:,} pages one request at a time)")
    rate: dict[str, float] = {}
    bad = 0
    for name, done in results.items():
        latencies = [v for r in done for v in r.latencies_ms]
        rate[name] = statistics.median(r.rate for r in done)
        cpu = statistics.median(r.cpu_s / r.requests * 1000 for r in done)
        bad += sum(len(r.wrong) for r in [*done, alone[name]])
        single = alone[name].latencies_ms
        print(f"  {name:<6} {len(done):>4} {rate[name]:>11.1f} {percentile(latencies, 0.5):>7.2f} "
              f"{percentile(latencies, 0.99):>7.2f} {cpu:>10.3f} {percentile(single, 0.5):>9.2f} "
              f"{percentile(single, 0.99):>9.2f}")
    wrongs = [w for r in [*results["ours"], *results["pywb"], *alone.values()] for w in r.wrong]
    for line in wrongs[:10]:
        print(f"    wrong: {line}")
    ratio = rate["ours"] / rate["pywb"]
    per_run = [a.rate / b.rate for a, b in zip(results["ours"], results["pywb"], strict=True)]
    passed = ratio >= REQUIRED_RATIO and not bad
    goal = "goal met" if ratio >= GOAL_RATIO else "goal not met"
    print(f"{'PASS' if passed else 'FAIL'}  replay requests/s ours / pywb ({corpus.label}, "
          f"{len(corpus.pages):,} pages and their resources): {ratio:.2f}x "
          f"(required >= {REQUIRED_RATIO:.0f}x, goal {GOAL_RATIO:.0f}x: {goal}); "
          f"{rate['ours']:,.0f} / {rate['pywb']:,.0f}; per run pair "
          + ", ".join(f"{r:.2f}" for r in per_run)
          + (f"; {bad} wrong answers" if bad else ""))
    return passed


def bench_replay(*, pages: int, records: int, runs: int, concurrency: int, work: Path,
                 prepare_only: bool = False) -> bool:
    """Both corpora, one after the other; True when both verdicts pass. `prepare_only`:
    make (or find cached) the corpora and pywb's indexes, measure nothing."""
    version = check_venv()
    work.mkdir(parents=True, exist_ok=True)
    print(f"\nreplay: ours beside pywb {version} ({load()} before)")
    ok = True
    for make in (lambda: ensure_crawl_corpus(work, pages),
                 lambda: ensure_generated_corpus(work, records, pages)):
        started = time.perf_counter()
        corpus = make()
        if prepare_only:
            _root, index_s = ensure_collection(corpus.warc)
            print(f"replay: {corpus.label} ready in {time.perf_counter() - started:.0f} s "
                  f"(pywb's index {'cached' if index_s is None else f'made in {index_s:.0f} s'})")
            continue
        ok = bench_corpus(corpus, runs=runs, concurrency=concurrency, work=work,
                          ready_s=time.perf_counter() - started) and ok
    print(f"replay: {load()} after")
    return ok
