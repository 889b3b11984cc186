"""`frontier-service run | seed URL... | stats`: the crawler's command line."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from archive_pipelines.archive_error import ArchiveError, SettingsError
from archive_pipelines.cli.group_runner import run_group
from archive_pipelines.settings import Settings, load_settings
from frontier_service.pages.browser_modes import MODES as BROWSER_MODES
from frontier_service.recovery.redis_memory import FAILURE_PREFIX as REDIS_FAILURE
from frontier_service.service.crawler_settings import (
    CrawlerSettings,
    from_settings,
    warn_legacy_private,
    with_loopback,
)
from frontier_service.service.descriptor_limit import ensure_descriptor_limit
from frontier_service.service.process import configure_logging, run_async, run_crawler
from frontier_service.service.service import STORE_FAILURE
from frontier_service.service.supervisor import resolve_processes, run_supervisor

PROG = "frontier-service"
# `run --seed URL` ends this long after the last URL was fetched: given seeds, the user asked
# for those sites, and a run that never ends would leave them waiting on a silent process.
# Without seeds, `run` is the service that waits for `seed` (or other processes) to add work.
SEEDED_EXIT_WHEN_IDLE_S = 10.0


class CrawlFailed(ArchiveError):
    """The crawl stopped because it could not go on (a full data disk, Redis), not as asked."""


@dataclass
class Context:
    data_dir: str | None
    overrides: dict[str, Any]

    def project_settings(self) -> Settings:
        return load_settings(self.data_dir)

    def crawler_settings(self, **more: Any) -> CrawlerSettings:
        """archive.toml, then the group's options, then the command's (None: not given)."""
        given = {k: v for k, v in more.items() if v is not None}
        return from_settings(self.project_settings(), **{**self.overrides, **given})


def _host_map(values: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
    if not values:
        return None
    pairs = []
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or not name or not target:
            raise SettingsError(
                f"--host-map {value!r}: expected NAME=IP[:PORT], e.g. '*.test=127.0.0.1:8080'")
        pairs.append((name, target))
    return tuple(pairs)


def _browser_domains(values: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
    if not values:
        return None
    pairs = []
    for value in values:
        name, sep, mode = value.rpartition("=")
        if not sep or not name or mode not in BROWSER_MODES:
            raise SettingsError(f"--browser-domain {value!r}: expected NAME=MODE with MODE one "
                                f"of {', '.join(BROWSER_MODES)}, e.g. 'app.example.org=always'")
        pairs.append((name, mode))
    return tuple(pairs)


def require_chromium() -> None:
    """SettingsError (one line: what to install) unless a Chromium can be started."""
    from frontier_service.browser import ChromiumMissing, find_chromium

    try:
        find_chromium()
    except ChromiumMissing as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True)
class ScopeOptions:
    """What `run` and `seed` may reach: --max-depth, --allowed-domain, --allow-network, --host-map."""

    max_depth: int | None
    allowed: tuple[str, ...]
    networks: tuple[str, ...]
    allow_private: bool | None  # the hidden legacy --allow-private: loopback only
    host_map: tuple[str, ...]

    def settings(self, obj: Context, **more: Any) -> CrawlerSettings:
        """The crawler settings with these options (and `more`) applied."""
        settings = obj.crawler_settings(
            max_depth=self.max_depth, allowed_domains=self.allowed or None,
            allowed_networks=self.networks or None, host_map=_host_map(self.host_map), **more)
        if self.allow_private:
            warn_legacy_private("--allow-private", "--allow-network 127.0.0.0/8")
            settings = settings.with_changes(allowed_networks=with_loopback(settings.allowed_networks))
        return settings


_SCOPE_OPTIONS = (
    click.option("--max-depth", type=int, help="Links deeper than this are not followed (seeds: 0)."),
    click.option("--allowed-domain", "allowed", multiple=True, metavar="NAME|GLOB",
                 help="Crawl only these hosts (and subdomains) or glob patterns (repeatable)."),
    click.option("--allow-network", "networks", multiple=True, metavar="CIDR|IP[:PORTS]",
                 help="Also reach this non-public network or address, on every port or only "
                      "on PORTS (a port or a range), e.g. 127.0.0.1:8080 for a local test web, "
                      "127.0.0.0/8:8000-8999, [::1]:8080 (IPv6 with ports in brackets) "
                      "(repeatable; public addresses are always allowed; link-local and cloud "
                      "metadata addresses only when listed exactly)."),
    click.option("--allow-private/--no-allow-private", default=None, hidden=True,
                 help="Deprecated: loopback only; use --allow-network 127.0.0.1:PORT."),
    click.option("--host-map", "host_map", multiple=True, metavar="NAME=IP[:PORT]",
                 help="Resolve NAME (or a glob like '*.test') to this address (repeatable; "
                      "a non-public address needs --allow-network too)."),
)

_CRAWL_NAME_HELP = "Redis key prefix of the crawl; processes with one name share a frontier."


def scope_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add the scope options to a command, which receives them as `scope: ScopeOptions`."""
    @functools.wraps(command)
    def with_scope(*args: Any, max_depth: int | None, allowed: tuple[str, ...],
                   networks: tuple[str, ...], allow_private: bool | None,
                   host_map: tuple[str, ...], **kwargs: Any) -> None:
        scope = ScopeOptions(max_depth, allowed, networks, allow_private, host_map)
        command(*args, scope=scope, **kwargs)

    decorated: Callable[..., None] = with_scope
    for option in reversed(_SCOPE_OPTIONS):
        decorated = option(decorated)
    return decorated


def crawl_name_option(command: Callable[..., None]) -> Callable[..., None]:
    """`--crawl-name` on a command as well as before it (the command's value wins)."""
    return click.option("--crawl-name", default=None, metavar="NAME", help=_CRAWL_NAME_HELP)(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", envvar="ARCHIVE_DATA_DIR", default=None, metavar="DIR",
              help="The data directory (default: $ARCHIVE_DATA_DIR or ./data).")
@click.option("--redis-url", default=None, metavar="URL",
              help="Redis URL, or 'embedded' (default: archive.toml [redis] url, or $REDIS_URL).")
@click.option("--crawl-name", default=None, metavar="NAME", help=_CRAWL_NAME_HELP)
@click.option("--frontier-root", default=None, metavar="DIR",
              help="The folder (inside the data dir; relative to it) whose frontiers/ holds the "
                   "crawl's frontier files, checkpoints and link journals (default: the data "
                   "dir). Crawls with their own roots never see each other's files.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.pass_context
def cli(ctx: click.Context, data_dir: str | None, redis_url: str | None, *, crawl_name: str | None,
        frontier_root: str | None, verbose: bool) -> None:
    """A fast, polite crawler: Redis + per-domain frontier files, archiving into the blob store."""
    from pathlib import Path

    configure_logging(logging.DEBUG if verbose else logging.INFO)
    ctx.obj = Context(data_dir, {"redis_url": redis_url, "crawl_name": crawl_name,
                                 "frontier_root": Path(frontier_root) if frontier_root else None})


@cli.command("run")
@click.option("--seed", "seeds", multiple=True, metavar="URL", help="Queue this URL first (repeatable).")
@click.option("--concurrency", type=int,
              help="Concurrent fetches (worker tasks), in all processes together.")
@click.option("--processes", default=None, metavar="N|auto",
              help="Crawler processes sharing the frontier (auto: one per CPU; default: the "
                   "crawl.processes setting, 1). One process uses one core; more crawl faster "
                   "on a multi-core machine.")
@click.option("--per-host-concurrency", type=int,
              help="Requests in flight to one host at most (default 1; a robots.txt "
                   "Crawl-delay makes it 1 for that host).")
@click.option("--min-delay", type=float, help="Minimum seconds between two request starts to a host.")
@click.option("--page-budget", type=int, help="Pages fetched per domain at most.")
@click.option("--segment-pages", type=int, help="Close a page-index segment after this many pages.")
@click.option("--segment-seconds", type=float, help="... or after this many seconds.")
@click.option("--segment-idle-seconds", type=float,
              help="... or once no page was archived this long, so captures flow while the "
                   "crawl waits (default 30; backs off when idle closes follow each other; "
                   "0: never).")
@click.option("--dagster-home", type=click.Path(file_okay=False), default=None,
              help="Report segments to this Dagster instance (default: $DAGSTER_HOME if set).")
@click.option("--metrics-port", type=int, help="Health/metrics port on 127.0.0.1 (0 any, -1 off).")
@click.option("--max-pages", type=int, help="Stop after this many pages (all processes).")
@click.option("--max-seconds", type=float, help="Stop after this many seconds.")
@click.option("--exit-when-idle", type=float, metavar="SECONDS",
              help="Stop once nothing has been queued, leased or in flight this long (0: "
                   f"never). Default: {SEEDED_EXIT_WHEN_IDLE_S:g} with --seed (a crawl of "
                   "those sites ends when they are done), never without (a service waiting "
                   "for `seed`).")
@click.option("--lease-seconds", type=float, help="A crashed process's domains return after this.")
@click.option("--checkpoint-seconds", type=float,
              help="Seconds between on-disk checkpoints of read offsets (a Redis that lost its "
                   "data repeats at most this long of fetches).")
@click.option("--compact-bytes", type=int,
              help="Free a frontier file's fetched prefix on disk once it grew this many bytes "
                   "(0: never; default 65536).")
@click.option("--compact-seconds", type=float,
              help="Seconds between looks for frontier files to compact (default 60).")
@click.option("--drain-timeout", type=float, help="SIGTERM: seconds in-flight fetches may take.")
@click.option("--progress-seconds", type=float, help="Seconds between progress lines.")
@click.option("--no-assets", is_flag=True, default=False, help="Do not queue images, scripts, styles.")
@click.option("--max-assets-per-page", type=int,
              help="Assets (images, stylesheets, fonts, scripts ...) queued from one page or "
                   "stylesheet at most (default 200); the rest are counted as over budget.")
@click.option("--loop", "event_loop", type=click.Choice(["auto", "asyncio", "uvloop"]), default=None,
              help="Event loop (auto: uvloop if installed).")
@click.option("--revisit-of", "validators_key", default=None, metavar="NAME",
              help="Ask conditionally (If-None-Match, If-Modified-Since) with the validators "
                   "that earlier runs with the same NAME kept, and keep this run's for the next: "
                   "a page answered 304 Not Modified is captured as unchanged, pointing at the "
                   "earlier body (nothing downloaded, nothing stored). Give each crawl of a "
                   "site the same NAME (and its own --crawl-name, so it fetches every page "
                   "again). The validators live in Redis; if they are lost, requests go out "
                   "unconditional.")
@click.option("--browser", type=click.Choice(BROWSER_MODES), default=None,
              help="Load pages in headless Chromium too (Debian's `chromium`, or $CHROMIUM): "
                   "never (default); auto: the HTML pages whose HTTP fetch shows they need it "
                   "(script-built content or links, lazy images, single-page apps, <noscript> "
                   "fallbacks) and a few samples per host; always: every HTML page. A loaded "
                   "page's record holds every request it made, its screenshot and its DOM.")
@click.option("--browser-domain", "browser_domains", multiple=True, metavar="NAME=MODE",
              help="The --browser mode for one host (and its subdomains) or glob, e.g. "
                   "'app.example.org=always' (repeatable).")
@click.option("--browser-contexts", type=int,
              help="Pages loaded in the browser at once (default 2; each takes memory).")
@click.option("--browser-samples", type=int,
              help="With --browser auto: HTML pages per host loaded in the browser to check "
                   "that HTTP misses nothing (default 2; 0: none); a host whose sample shows "
                   "links or images HTTP missed has all its HTML pages loaded from then on.")
@click.option("--browser-page-timeout", "browser_page_timeout_s", type=float,
              help="Seconds one page load may take (default 30), scrolling and waiting for "
                   "the network to settle included.")
@click.option("--machine", default=None, metavar="NAME",
              help="Crawl together with other machines: this one's name (letters, digits, "
                   "'.', '_', '-'; keep it across restarts). The machines share one Redis "
                   "(and should share the catalog and an S3 primary); each owns a share of "
                   "the domains, keeps their frontier files in its own data dir and gets "
                   "the links other machines find for them through Redis. See the README, "
                   "'Crawling from several machines'.")
@click.option("--slots", type=int, default=None,
              help="With --machine: the number of domain slots shared out among the "
                   "machines (default: the crawl's; 64 for a new crawl; fixed by its first "
                   "machine).")
@click.option("--machine-lease", "machine_lease_s", type=float, default=None, metavar="SECONDS",
              help="With --machine: a machine silent this long is taken for dead and its "
                   "slots go to the others (default 30).")
@click.option("--max-open-files", type=int,
              help="Frontier files each process keeps open at most (default 1024); the least "
                   "recently used are closed and reopened when needed.")
@click.option("--seen-capacity", type=int,
              help="URLs a new crawl's seen filter holds at 0.1% false positives (default "
                   "20,000,000; ~1.9 bytes of Redis each). Fixed when the crawl's filter is "
                   "created; the crawl warns from 80% full, and past it new URLs are "
                   "increasingly dropped as already seen.")
@click.option("--max-idle-connections", type=int,
              help="Idle keep-alive connections each process keeps across all hosts (default "
                   "512; 0: none); the longest idle are closed. Each open file or connection "
                   "is a descriptor: the process raises its soft limit to fit them, or refuses "
                   "to start.")
@scope_options
@crawl_name_option
@click.pass_obj
def run_command(obj: Context, seeds: tuple[str, ...], scope: ScopeOptions, *, no_assets: bool,
                dagster_home: str | None, processes: str | None,
                browser_domains: tuple[str, ...], **options: Any) -> None:
    """Crawl until SIGTERM/SIGINT (drains cleanly, exit 0) or a --max-* / --exit-when-idle limit.

    Given --seed, the run ends once nothing is left to fetch (--exit-when-idle 0 keeps it
    waiting for new URLs). The summary says why it stopped, what each stopped host left
    queued and which URLs were not fetched, by reason. A full data disk also drains the
    crawl, then exits 2 with one line saying so; so does a Redis that evicts the crawl's
    keys or is out of memory."""
    from pathlib import Path

    renames = {"min_delay": "min_delay_s", "page_budget": "domain_page_budget",
               "drain_timeout": "drain_timeout_s", "exit_when_idle": "exit_when_idle_s",
               "max_seconds": "max_seconds", "progress_seconds": "progress_seconds"}
    overrides = {renames.get(k, k): v for k, v in options.items()}
    if seeds and overrides.get("exit_when_idle_s") is None:
        overrides["exit_when_idle_s"] = SEEDED_EXIT_WHEN_IDLE_S
    overrides["fetch_assets"] = False if no_assets else None
    overrides["dagster_home"] = Path(dagster_home).resolve() if dagster_home else None
    overrides["browser_by_domain"] = _browser_domains(browser_domains)
    settings = scope.settings(obj, **overrides)
    if settings.uses_browser:
        require_chromium()
    project = obj.project_settings()
    count = resolve_processes(processes if processes is not None else project.crawl.processes)
    ensure_descriptor_limit(settings)  # before the children start: they inherit it
    if count == 1:
        report = run_crawler(settings, seeds=seeds, store_settings=project.primary_store)
    else:
        report = run_supervisor(settings, count, seeds=seeds, store_settings=project.primary_store)
    click.echo(json.dumps(report.as_metadata()))
    if report.failure.startswith(REDIS_FAILURE):  # says what to do itself
        raise CrawlFailed(report.failure)
    if report.failure.startswith(STORE_FAILURE):
        raise CrawlFailed(f"{report.failure}; the crawl stopped, and the URLs it could not "
                          "archive stay queued: run it again once the store answers")
    if report.failure:  # the summary above is still printed: how far the crawl got
        raise CrawlFailed(f"{report.failure}; the crawl stopped, and the URLs it could not "
                          "archive stay queued: free space, then run it again")


@cli.command("serve")
@click.option("--max-crawls", type=int, default=2, show_default=True,
              help="Crawls run at once (one process each).")
@click.option("--poll-seconds", type=float, default=2.0, show_default=True,
              help="Look for queued crawls this often.")
@click.option("--stale-after", type=float, default=60.0, show_default=True, metavar="SECONDS",
              help="Take over a running crawl whose crawler has not said it is alive this long "
                   "(it died): resumed where it was.")
@click.option("--heartbeat-seconds", type=float, default=2.0, show_default=True,
              help="Write each crawl's progress into its request this often.")
@click.option("--exit-when-idle", type=float, default=SEEDED_EXIT_WHEN_IDLE_S, show_default=True,
              metavar="SECONDS", help="A crawl ends once nothing was due or in flight this long.")
@click.option("--machine", default=None, metavar="NAME",
              help="Run the crawls as machine NAME of several (see `run --machine`): the "
                   "crawls this crawler takes are shared out with the other machines' "
                   "crawlers, and it joins the crawls they took.")
@click.option("--machine-lease", "machine_lease_s", type=float, default=None, metavar="SECONDS",
              help="With --machine: as `run --machine-lease` (default 30).")
@click.pass_obj
@click.option("--metrics-port", type=int, default=None, metavar="PORT",
              help="/healthz and /metrics of this crawler and its crawls on 127.0.0.1:PORT "
                   "(default: [crawl] metrics_port, 0: a free port named in the start log "
                   "line; -1: none).")
def serve_command(obj: Context, *, max_crawls: int, poll_seconds: float, stale_after: float,
                  heartbeat_seconds: float, exit_when_idle: float, machine: str | None,
                  machine_lease_s: float | None, metrics_port: int | None) -> None:
    """Take queued crawls (`archive-pipelines crawls queue`, the Dagster crawl job and its
    schedules) and run them, until SIGTERM/SIGINT.

    Each crawl runs in a process of its own under its crawl id, with its definition's seeds,
    scope and politeness, and ends once nothing is left to fetch; its progress and outcome go
    into the request. On SIGTERM the running crawls drain and go back to the queue; after a
    kill -9, a crawler started again resumes them once they are --stale-after old.
    With --machine, every crawl is shared by the crawlers of all machines: one takes it
    (and finishes its request), the others join it while it runs."""
    from archive_pipelines.catalog import Catalog
    from archive_pipelines.datadir import require_initialized
    from frontier_service.service.serve import ServeOptions, run_server

    project = require_initialized(obj.project_settings())
    options = ServeOptions(max_crawls=max_crawls, poll_s=poll_seconds, stale_after_s=stale_after,
                           heartbeat_s=heartbeat_seconds, exit_when_idle_s=exit_when_idle)
    options.validate()
    catalog = Catalog.open(project.catalog_url)
    try:
        run_server(obj.crawler_settings(machine=machine, machine_lease_s=machine_lease_s,
                                        metrics_port=metrics_port),
                   catalog, options,
                   store_settings=project.primary_store)
    finally:
        catalog.close()


@cli.command("seed")
@click.argument("urls", nargs=-1, required=True)
@scope_options
@crawl_name_option
@click.pass_obj
def seed_command(obj: Context, urls: tuple[str, ...], scope: ScopeOptions,
                 *, crawl_name: str | None) -> None:
    """Queue start URLs at depth 0 (all or nothing: one bad URL queues none).

    Seeds are checked against the same scope as `run`'s links: give the same --allow-network,
    --allowed-domain and --max-depth here as there.
    """
    from frontier_service.service.crawler_parts import open_frontier
    from frontier_service.service.seeding import add_seeds, checked_seeds

    settings = scope.settings(obj, crawl_name=crawl_name)
    checked_seeds(settings, urls)  # a bad seed is refused before Redis is even opened

    async def seed() -> tuple[int, int]:
        async with open_frontier(settings, recover=True) as (frontier, _):
            result = await add_seeds(frontier, settings, urls)
        return result.added, result.duplicate

    added, duplicate = run_async(seed(), "asyncio")
    click.echo(f"queued {added} URL(s); {duplicate} already seen")


@cli.command("stats")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@crawl_name_option
@click.pass_obj
def stats_command(obj: Context, *, as_json: bool, crawl_name: str | None) -> None:
    """The frontier's size, ready and leased domains, counters, and segments on disk."""
    from frontier_service.service.stats import crawl_stats, format_stats

    snapshot = run_async(crawl_stats(obj.crawler_settings(crawl_name=crawl_name)), "asyncio")
    click.echo(json.dumps(snapshot) if as_json else format_stats(snapshot))


@cli.command("machines")
@click.option("--forget", default=None, metavar="NAME",
              help="Declare machine NAME lost for good: its slots go to the others now, and "
                   "the URLs only its disk held are counted as lost.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@crawl_name_option
@click.pass_obj
def machines_command(obj: Context, *, forget: str | None, as_json: bool,
                     crawl_name: str | None) -> None:
    """The machines crawling this crawl: their leases and slots, and the unfetched URLs that
    only the disk of a machine that is away holds."""
    from frontier_service.service.machines_report import machines_report

    settings = obj.crawler_settings(crawl_name=crawl_name)
    report = run_async(machines_report(settings, forget=forget), "asyncio")
    click.echo(json.dumps(report.as_dict()) if as_json else report.text())
    if report.missing:
        raise CrawlFailed(report.missing)


@cli.command("rebuild-redis")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@click.option("--yes", is_flag=True,
              help="Rebuild even when Redis holds this crawl whole (read offsets go back to "
                   "the last checkpoint) or another crawl of the same name (replaced).")
@click.pass_obj
def rebuild_redis_command(obj: Context, *, as_json: bool, yes: bool) -> None:
    """Rebuild the crawl's Redis state (queues, read offsets, seen URLs) from the data dir.

    For a Redis that lost the crawl's data: restarted without persistence, flushed,
    replaced, or keys evicted. Stop the crawl first.
    """

    from archive_pipelines.archive_error import DataDirError
    from archive_pipelines.datadir import require_data_dir
    from frontier_service.archiving.page_journal import journal_dir
    from frontier_service.frontier.checkpoint import checkpoint_dir
    from frontier_service.frontier.folder_locks import live_sessions
    from frontier_service.pages.link_journal import link_journal_dir
    from frontier_service.recovery.epoch import EpochState, has_disk_state
    from frontier_service.recovery.redis_rebuild import RebuildRefused, RebuildReport, rebuild_from_disk
    from frontier_service.service.crawler_parts import open_frontier

    settings = obj.crawler_settings()
    data_dir, name = settings.data_dir, settings.crawl_name
    require_data_dir(data_dir)
    home = settings.frontier_home
    for directory in (checkpoint_dir(home, name), link_journal_dir(home), journal_dir(data_dir)):
        running = live_sessions(directory) if directory.is_dir() else []
        if running:
            raise RebuildRefused(f"a crawler is running on data dir {data_dir} (session "
                                 f"{running[0]}): stop the crawl first")
    if not has_disk_state(home, name):
        where = f"data dir {data_dir}" if home == data_dir else f"frontier root {home}"
        raise DataDirError(f"{where} holds no frontier files or checkpoints of "
                           f"crawl {name!r}: nothing to rebuild Redis from")
    allow = tuple(EpochState) if yes else (EpochState.EMPTY, EpochState.MISSING)

    async def rebuild() -> tuple[str, EpochState, RebuildReport]:
        async with open_frontier(settings) as (frontier, url):
            held, report = await rebuild_from_disk(
                frontier, home, allow=allow, progress=lambda line: click.echo(line, err=True))
            return url, held, report

    try:
        url, held, report = run_async(rebuild(), "asyncio")
    except RebuildRefused as exc:
        raise RebuildRefused(f"{exc}; pass --yes to rebuild it from disk anyway") from None
    if as_json:
        click.echo(json.dumps({"crawl": name, "redis": url, "redis_held": held.value,
                               **report.as_metadata()}))
        return
    click.echo(f"rebuilt Redis of crawl {name!r} on {url} (it held: {held.value}) from {data_dir}\n"
               f"  domains: {report.domains:,} ({report.ready:,} ready, {report.exhausted:,} "
               f"fetched to the end, {report.excluded:,} excluded)\n"
               f"  URLs: {report.urls:,} queued, {report.seen_added:,} added to the seen filter, "
               f"{report.torn_lines:,} torn lines skipped\n"
               f"  {report.bytes:,} bytes of frontier files in {report.seconds:.1f} s")


@cli.command("compact")
@click.option("--dry-run", is_flag=True, help="Say how many disk bytes it would free; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@crawl_name_option
@click.pass_obj
def compact_command(obj: Context, *, dry_run: bool, as_json: bool, crawl_name: str | None) -> None:
    """Free the disk blocks of frontier file lines already fetched (safe while crawling).

    Each domain's file keeps its size; the part before its last on-disk checkpoint becomes
    a hole that takes no disk and reads as consumed. Crawls do this as they go
    (--compact-bytes); this command does it all at once, for example after a crawl.
    """
    from archive_pipelines.datadir import require_data_dir
    from frontier_service.frontier.compaction import compact_crawl, disk_usage

    settings = obj.crawler_settings(crawl_name=crawl_name)
    require_data_dir(settings.data_dir)
    home = settings.frontier_home
    before = disk_usage(home)
    report = compact_crawl(home, settings.crawl_name, dry_run=dry_run)
    after = disk_usage(home)
    if as_json:
        click.echo(json.dumps({"crawl": settings.crawl_name, "dry_run": dry_run,
                               **report.as_metadata(),
                               "apparent_bytes": after.apparent_bytes,
                               "frontier_disk_bytes_before": before.frontier_disk_bytes,
                               "frontier_disk_bytes": after.frontier_disk_bytes}))
        return
    verb = "would free" if dry_run else "freed"
    click.echo(f"{verb} {report.bytes_freed:,} disk bytes in {report.files:,} frontier files "
               f"of crawl {settings.crawl_name!r} ({report.bytes_punched:,} fetched bytes)\n"
               f"  frontier files: {after.files:,}, {after.apparent_bytes:,} bytes apparent, "
               f"{before.frontier_disk_bytes:,} -> {after.frontier_disk_bytes:,} bytes on disk")
    if report.unsupported:
        click.echo("  the filesystem cannot punch holes: nothing was freed", err=True)



@cli.command("migrate-from-postgres")
@click.argument("dsn", metavar="DSN")
@click.option("--dry-run", is_flag=True,
              help="Read the tables and print what the migration would find (rows, distinct "
                   "domains, invalid URLs, rows already visited); write nothing.")
@click.option("--batch-rows", type=click.IntRange(100, 1_000_000), default=20_000,
              show_default=True, help="Rows read and written together (frontier rows are "
                   "synced to disk and checkpointed every 5 such batches).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@crawl_name_option
@click.pass_obj
def migrate_command(obj: Context, dsn: str, *, dry_run: bool, batch_rows: int, as_json: bool,
                    crawl_name: str | None) -> None:
    """Take over a PostgreSQL frontier (DSN: postgresql://user:password@host:5432/dbname)
    into a new crawl, which `run` then continues (no --seed needed).

    Reads frontier(url, domain, depth, added_timestamp), visited_urls(url, url_sha256,
    crawled_timestamp, http_status_code, content_storage_path, redirected_to_url) and
    domain_metadata(domain, robots_txt_content, robots_txt_expires_timestamp,
    is_manually_excluded, last_scheduled_fetch_timestamp) from the DSN's search path. URLs
    and domains are text; timestamps are timestamp columns or unix seconds; depth and
    http_status_code integers. Each table is read in order of its url (domain) column
    through a server-side cursor, which needs no unique key: rows sharing a URL count once.
    Every URL is put in the crawler's canonical form and queued under its own host (the
    `domain` column is not used for that); invalid URLs are counted and skipped.

    Visited URLs (and where they redirected to) are never fetched again; frontier URLs
    already visited are dropped; excluded domains stay excluded; a domain's next fetch is
    its last scheduled fetch plus the minimum delay; unexpired robots.txt bodies are cached
    for the domain's http and https origins. Stop the old crawler first: the tables must not
    change while they are read.

    Killed or interrupted, the command resumes where its checkpoint (in the data dir's
    frontiers/migrations/) says when run again with the same options; no URL is queued
    twice or lost. The target crawl must be new (no frontier under its name)."""
    import time

    from frontier_service.migration.migrate_progress import MigrateProgress
    from frontier_service.migration.postgres_source import PostgresSource

    source = PostgresSource(dsn)
    try:
        if dry_run:
            from frontier_service.migration.dry_run import dry_run as count_rows

            report = count_rows(source, batch_rows=batch_rows, progress=MigrateProgress())
            if as_json:
                click.echo(json.dumps({"dry_run": True, "source": source.where, **report}))
                return
            click.echo(f"dry run of {source.where} (nothing written):")
            for table, counts in report.items():
                click.echo(f"  {table}: " + ", ".join(f"{k.replace('_', ' ')} {v:,}"
                                                       for k, v in counts.items()))
            return
        from frontier_service.migration.migrate_run import MigrateOptions, migrate

        settings = obj.crawler_settings(crawl_name=crawl_name)
        started = time.monotonic()
        result = run_async(migrate(source, settings, options=MigrateOptions(batch_rows=batch_rows)),
                           "asyncio")
        seconds = time.monotonic() - started
    finally:
        source.close()
    rows = {name: table.rows for name, table in result.tables.items()}
    if as_json:
        click.echo(json.dumps({"crawl": settings.crawl_name, "source": result.source,
                               "rows": rows, "counts": result.counts, "seconds": seconds}))
        return
    counts = result.counts
    dropped = counts.get("frontier_dropped_seen", 0) + counts.get("frontier_dropped_in_batch", 0)
    click.echo(f"migrated {result.source} into crawl {settings.crawl_name!r}: "
               f"{rows.get('frontier', 0):,} frontier rows "
               f"({counts.get('frontier_queued', 0):,} URLs queued, {dropped:,} already "
               f"visited or duplicates, {counts.get('frontier_invalid', 0):,} invalid), "
               f"{counts.get('visited_records', 0):,} visited URLs, "
               f"{rows.get('domain_metadata', 0):,} domains "
               f"({counts.get('domains_excluded', 0):,} excluded); "
               "`frontier-service run` continues the crawl")

def main(argv: list[str] | None = None) -> int:
    """Run the CLI; errors meant for people become one line on stderr and exit status 2."""
    return run_group(cli, PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
