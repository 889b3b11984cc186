"""The crawl bench's single-host case: one documentation website, our crawler beside Scrapy.

The site (`archive_testkit.testweb.docs_site`: ~500 pages of ~300 links, all within two
links of the home page) is written as static files and served by Python's threaded
`http.server` (the headline), or by the aiohttp test web on its docs host. Each crawl gets
a freshly started server, so every crawler has its own request log; the figures come from
that log: pages (200s of the site's HTML pages), distinct and repeated paths, and pages/s
over the request window (first request to last). Wall time is the crawler process's, start
to exit (start-up, and for ours the `--exit-when-idle` wait, included).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from archive_testkit.testweb import (
    TestWebConfig,
    TestWebProcess,
    read_jsonl,
    serve_in_subprocess,
)
from archive_testkit.testweb.docs_site import docs_paths
from archive_testkit.testweb.static_server import serve_static_in_subprocess, write_docs_site
from bench.crawl_baselines.site_crawl import HEADER, SiteCrawl, row, verdict

REPO = Path(__file__).resolve().parents[2]
FRONTIER_SERVICE = Path(sys.executable).parent / "frontier-service"
SERVERS = {"static": "http.server", "testweb": "aiohttp test web"}
# Our crawler's settings file: no adaptive delay (politeness.next_delay takes the largest
# of min-delay, Crawl-delay and response_time_factor x the last response time).
ARCHIVE_TOML = "[crawl]\nresponse_time_factor = 0.0\n"


@dataclass(frozen=True)
class Site:
    """Where one crawl starts, and what the server's log must show."""

    server: str  # a SERVERS key
    seed: str
    host: str  # Host header the site's requests carry (lowercase, no port)
    port: int
    expected: frozenset[str]  # the site's page paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("single-host case")
    group.add_argument("--site-pages", type=int, default=500, help="pages of the docs site")
    group.add_argument("--site-links", type=int, default=300, help="links per page")
    group.add_argument("--site-server", choices=[*SERVERS, "both"], default="static",
                       help="static: files served by http.server's ThreadingHTTPServer (the "
                            "headline); testweb: the aiohttp test web's docs host")
    group.add_argument("--site-keep-alive", action="store_true",
                       help="http.server answers HTTP/1.1 on persistent connections (with "
                            "TCP_NODELAY) instead of its default HTTP/1.0, one connection a request")
    group.add_argument("--site-scrapy-skip-seen", action="store_true",
                       help="Scrapy's spider yields each URL once instead of leaving the "
                            "repeated links to Scrapy's duplicate filter (a stronger baseline)")
    group.add_argument("--site-concurrency", type=int, default=16, help="requests in flight")
    group.add_argument("--site-per-host", type=int, default=8,
                       help="requests in flight to the host (Scrapy's default is 8)")
    group.add_argument("--site-delay", type=float, default=0.0, help="seconds between requests")
    group.add_argument("--site-max-depth", type=int, default=5)
    group.add_argument("--site-idle", type=float, default=2.0,
                       help="our crawler's --exit-when-idle seconds")
    group.add_argument("--repeat", type=int, default=3,
                       help="alternating runs per crawler (ours, Scrapy, Scrapy, ours, ...); "
                            "the verdict uses the medians")


def our_command(args: argparse.Namespace, site: Site, data_dir: Path) -> tuple[list[str], str]:
    """`frontier-service run` for the site, with the options this build accepts; and a note."""
    options = frontier_run_options()
    command = [str(FRONTIER_SERVICE), "--data-dir", str(data_dir), "--redis-url", "embedded",
               "run", "--seed", site.seed, "--concurrency", str(args.site_concurrency),
               "--min-delay", f"{args.site_delay:g}", "--max-depth", str(args.site_max_depth),
               "--exit-when-idle", f"{args.site_idle:g}"]
    notes = []
    if "--per-host-concurrency" in options:
        command += ["--per-host-concurrency", str(args.site_per_host)]
    else:
        notes.append("this build has no --per-host-concurrency: 1 request in flight per host")
    if "--allow-network" in options:
        command += ["--allow-network", "127.0.0.0/8"]
    else:
        # Builds before --allow-network (an older checkout first on PYTHONPATH, to measure
        # the crawler before a change) know only --allow-private.
        command += ["--allow-private"]
        notes.append("this build has no --allow-network: --allow-private instead")
    if site.server == "testweb":
        command += ["--host-map", f"{site.host}=127.0.0.1:{site.port}"]
    return command, "; ".join(notes)


@functools.cache
def frontier_run_options() -> frozenset[str]:
    """The options `frontier-service run --help` lists (asked once per bench)."""
    done = subprocess.run([str(FRONTIER_SERVICE), "run", "--help"], cwd=REPO, text=True,
                          capture_output=True, timeout=120, check=False)
    return frozenset(word.split("/")[0].rstrip(",") for word in done.stdout.split()
                     if word.startswith("--"))


def scrapy_command(args: argparse.Namespace, site: Site) -> list[str]:
    command = [sys.executable, "-m", "bench.crawl_baselines.scrapy_site", "--start", site.seed,
               "--concurrency", str(args.site_concurrency),
               "--per-host-concurrency", str(args.site_per_host),
               "--delay", f"{args.site_delay:g}", "--max-depth", str(args.site_max_depth)]
    if args.site_scrapy_skip_seen:
        command.append("--skip-seen")
    return command + (["--testweb-port", str(site.port)] if site.server == "testweb" else [])


@contextlib.contextmanager
def serve_site(args: argparse.Namespace, server: str, work: Path,
               log_path: Path) -> Iterator[tuple[Site, TestWebProcess]]:
    """A freshly started server holding the site; yields it and its process (for its CPU)."""
    config = TestWebConfig(hosts=0, docs_pages=args.site_pages, docs_links=args.site_links)
    expected = frozenset(docs_paths(config))
    if server == "static":
        directory = work / "site"
        with serve_static_in_subprocess(directory, log_path=log_path,
                                        keep_alive=args.site_keep_alive) as running:
            directory.mkdir(parents=True)
            write_docs_site(directory, config, running.base_url)  # absolute links need the port
            yield Site(server, running.base_url + "/", "127.0.0.1", running.port, expected), running
    else:
        with serve_in_subprocess(config, log_path=log_path) as running:
            host = config.docs_host
            yield Site(server, f"http://{host}/", host, running.port, expected), running


def crawl_once(args: argparse.Namespace, crawler: str, server: str, work: Path) -> SiteCrawl:
    work.mkdir(parents=True)
    log_path = work / "requests.jsonl"
    with serve_site(args, server, work, log_path) as (site, running):
        if crawler == "ours":
            data_dir = work / "data"
            data_dir.mkdir()
            (data_dir / "archive.toml").write_text(ARCHIVE_TOML)
            command, note = our_command(args, site, data_dir)
        else:
            command, note = scrapy_command(args, site), ""
        cpu_before = _children_cpu()
        started = time.monotonic()
        with open(work / "crawler.log", "w") as err:
            done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True,
                                  timeout=1800, check=False)
        wall = time.monotonic() - started
        crawler_cpu = _children_cpu() - cpu_before
        server_cpu = running.cpu_seconds()
    records = tuple(r for r in read_jsonl(log_path) if r.host == site.host)
    if done.returncode != 0:
        tail = (work / "crawler.log").read_text(errors="replace").strip().splitlines()[-1:]
        note = f"failed (exit {done.returncode}): {(tail or ['no output'])[0][:200]}"
    else:
        note = "; ".join(filter(None, [note, _summary(done.stdout)]))
    return SiteCrawl(crawler, server, wall, crawler_cpu, server_cpu, done.returncode, records,
                     site.expected, note)


def _summary(stdout: str) -> str:
    """The crawler's own last word: ours prints a JSON line, the Scrapy runner `RESULT {...}`."""
    for line in reversed(stdout.splitlines()):
        text = line.removeprefix("RESULT ")
        with contextlib.suppress(ValueError):
            found = json.loads(text)
            if isinstance(found, dict):
                keep = ("pages", "stopped", "crawler", "dupefilter/filtered",
                        "request_depth_max", "finish_reason")
                return "reports " + ", ".join(f"{k} {found[k]}" for k in keep if k in found)
    return ""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the crawler and what it waited for
    return usage.ru_utime + usage.ru_stime


def run_case(args: argparse.Namespace, work: Path) -> bool:
    """Run the case on each chosen server, print the runs and the verdict; True if it passed."""
    servers = list(SERVERS) if args.site_server == "both" else [args.site_server]
    print(f"\nsingle-host case {time.strftime('%Y-%m-%d %H:%M')}: a {args.site_pages}-page "
          f"documentation site, {args.site_links} links a page, on one host; both crawlers "
          f"with concurrency {args.site_concurrency}, {args.site_per_host} per host, delay "
          f"{args.site_delay:g} s, max depth {args.site_max_depth}, robots.txt obeyed, no "
          f"adaptive delay ((a): archive.toml [crawl] response_time_factor = 0; Scrapy: "
          f"AutoThrottle off, its default); {args.repeat} alternating runs each", flush=True)
    verdicts = []
    for server in servers:
        runs: dict[str, list[SiteCrawl]] = {"ours": [], "scrapy": []}
        print(f"\nserver: {describe_server(args, server)}; a fresh one per run, figures from "
              f"its request log", flush=True)
        for line in commands(args, server):
            print(line)
        print(HEADER, flush=True)
        for n in range(args.repeat):
            for crawler in ("ours", "scrapy") if n % 2 == 0 else ("scrapy", "ours"):
                crawl = crawl_once(args, crawler, server, work / f"{server}-{n}-{crawler}")
                runs[crawler].append(crawl)
                print(row(str(n + 1), crawl) + (f"  [{crawl.note}]" if crawl.note else ""),
                      flush=True)
        verdicts.append(verdict(SERVERS[server], runs))
    headline = verdicts[0]
    print()
    for lines, _ in verdicts:
        print("\n".join(lines))
    print(f"single-host verdict ({SERVERS[servers[0]]}): {'PASS' if headline[1] else 'FAIL'}",
          flush=True)
    return headline[1]


def commands(args: argparse.Namespace, server: str) -> list[str]:
    """The two crawl commands as run, with placeholders for the per-run port and directory."""
    host = "docs.test" if server == "testweb" else "127.0.0.1"
    seed = "http://docs.test/" if server == "testweb" else "http://127.0.0.1:PORT/"
    site = Site(server, seed, host, 0, frozenset())
    ours, note = our_command(args, site, Path("DATA_DIR"))
    ours[0] = "frontier-service"
    theirs = scrapy_command(args, site)
    theirs[0] = "python"
    lines = [f"(a) {' '.join(ours).replace('127.0.0.1:0', '127.0.0.1:PORT')}",
             f"    DATA_DIR/archive.toml: {ARCHIVE_TOML.replace(chr(10), ' ').strip()}"
             + (f"; {note}" if note else ""),
             f"(c) {' '.join(theirs).replace('--testweb-port 0', '--testweb-port PORT')}"]
    return lines


def describe_server(args: argparse.Namespace, server: str) -> str:
    if server == "testweb":
        return "aiohttp test web, host docs.test (HTTP/1.1 keep-alive)"
    protocol = ("HTTP/1.1 keep-alive, TCP_NODELAY" if args.site_keep_alive
                else "HTTP/1.0, a connection per request, as `python -m http.server`")
    return f"http.server ThreadingHTTPServer on 127.0.0.1, static files ({protocol})"
