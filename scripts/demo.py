"""`make demo`: run the main jobs end to end on embedded defaults and print what they did.

Each issue extends this script with its own step; every step prints a short report.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MARKER = ".archive-pipelines-demo"
DEMO_TAGS = '{"archive/launched_by": "demo"}'  # `dagster job execute --tags`: runs say who
REPLICA_SETTINGS = """
# added by make demo: a local replica, every blob kept twice
[[stores]]
name = "replica1"
kind = "local"
path = "replicas/replica1"
codec = "zstd"
"""


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(args: list[str], env: dict[str, str], *, quiet: bool = False) -> str:
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        raise SystemExit(f"demo step failed: {' '.join(args)}")
    if not quiet:
        sys.stdout.write(result.stdout)
    return result.stdout + result.stderr


def warc_requisite_url(folder: Path) -> str | None:
    """A URL of a response in the snapshot's wget WARC (a requisite when there is one)."""
    from warcio.archiveiterator import ArchiveIterator

    urls: list[str] = []
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as handle:
            urls += [record.rec_headers.get_header("WARC-Target-URI")
                     for record in ArchiveIterator(handle) if record.rec_type == "response"]
    return urls[1] if len(urls) > 1 else next(iter(urls), None)


def fresh_data_dir(path: Path) -> None:
    if path.exists():
        if not (path / MARKER).exists():
            raise SystemExit(f"{path} exists and is not a demo data dir; refusing to replace it")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / MARKER).write_text("created by make demo; safe to delete\n")


def make_legacy_archive(archive: Path) -> int:
    """Organized legacy folders archive/<timestamp>/<extractor>/... with shared assets."""
    import random

    rng = random.Random(7)
    shared = {"wget/static/jquery.min.js": b"/*! jQuery v3.7.1 */" + rng.randbytes(87_000),
              "wget/static/site.css": b"body{margin:0}" * 2_000,
              "wget/static/logo.png": b"\x89PNG\r\n\x1a\n" + rng.randbytes(12_000)}
    files = 0
    for n in range(12):
        site = ("news.example", "blog.example", "docs.example")[n % 3]
        folder = archive / f"{1735128000 + n * 7200}.{n}"  # 2024-12-25 12:00 UTC on: two days
        pages = {"index.json": (f'{{"url": "https://{site}/page{n}", '
                                f'"title": "Page {n} of {site}"}}').encode(),
                 "wget/index.html": f"<html><h1>{site} page {n}</h1></html>".encode() * 40,
                 "screenshot/screenshot.png": rng.randbytes(30_000), **shared}
        for rel, data in pages.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            files += 1
    return files


def print_tree(root: Path, limit: int) -> None:
    """Folders and file links under `root`, into snapshot folder links (shown with targets)."""
    shown = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        depth = len(Path(dirpath).relative_to(root).parts)
        target = f" -> {os.readlink(dirpath)}" if os.path.islink(dirpath) else ""
        print(f"{'  ' * depth}{Path(dirpath).name}/{target}")
        for name in sorted(filenames):
            link = Path(dirpath) / name
            print(f"{'  ' * (depth + 1)}{name} -> {os.readlink(link)}")
            shown += 1
            if shown >= limit:
                print(f"{'  ' * (depth + 1)}...")
                return


def dev_command(data: Path) -> str:
    """The command that opens Dagit on the demo's data dir (`make dev` takes DEMO_DATA)."""
    if data == (ROOT / "demo-data").resolve():
        return "make dev"
    return f"make dev DEMO_DATA={shlex.quote(str(data))}"


def first_page(root: Path) -> Path | None:
    """The first `index.html` under `root` in the views (following their folder links)."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        if "index.html" in filenames:
            return Path(dirpath) / "index.html"
    return None


def crawl(data: Path, env: dict[str, str]) -> None:
    """Start the test web in its own process, crawl it politely, report the segments."""
    from archive_testkit.testweb import TestWebConfig, serve_in_subprocess

    service = [str(BIN / "frontier-service"), "--data-dir", str(data)]
    config = TestWebConfig(hosts=200, latency_ms=20)
    with serve_in_subprocess(config, log_path=data / "logs" / "testweb-requests.jsonl") as web:
        started = time.monotonic()
        run([*service, "run", "--seed", "http://site0000.test/",
             "--allow-network", f"127.0.0.1:{web.port}",  # the test web's port, no other
             "--host-map", f"*.test=127.0.0.1:{web.port}", "--allowed-domain", "*.test",
             "--min-delay", "0.25", "--max-pages", "3000", "--exit-when-idle", "5",
             "--progress-seconds", "5", "--segment-pages", "1000", "--metrics-port", "-1",
             "--dagster-home", str(data / "dagster")], env, quiet=True)
        seconds = time.monotonic() - started
    stats = run([*service, "stats"], env, quiet=True)
    print(stats.strip())
    pages = next((int(line.split(":")[1].replace(",", "")) for line in stats.splitlines()
                  if line.strip().startswith("pages_fetched:")), 0)
    print(f"{pages:,} pages in {seconds:.1f}s = {pages / seconds:,.0f} pages/s "
          "(wall time incl. process start-up and drain; 200 hosts at >= 0.25 s per host)")
    sessions = sorted((data / "sessions").rglob("*.jsonl"))
    print(f"crawl took {seconds:.1f}s (incl. start-up and drain); page-index segments: "
          f"{len(sessions)} under sessions/; bodies in cas/ (deduplicated with the rest)")
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(data / "dagster")) as instance:
        events = instance.fetch_materializations(AssetKey("crawl_segments"), limit=100).records
    print(f"crawl_segments materializations on the Dagster instance: {len(events)} "
          f"(partitions {sorted({e.partition_key for e in events})})")


def replay_url(cli: list[str], env: dict[str, str], url: str) -> str:
    """Start `replay` on a free port, ask its TimeGate for `url`, print what came back and
    return the memento's path (`/web/<timestamp>/<url>`); the server is stopped after."""
    process = subprocess.Popen([*cli, "replay", "--port", "0"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        found = re.search(r"(http://[^/\s]+)/web/", process.stdout.readline())
        if found is None:
            raise SystemExit("demo step failed: `replay` did not say where it listens")
        with urllib.request.urlopen(f"{found.group(1)}/web/{url}", timeout=30) as response:
            path = response.url[len(found.group(1)):]
            print(f"GET /web/{url} -> {path}: {response.status}, "
                  f"{response.headers['Content-Type']}, Memento-Datetime "
                  f"{response.headers['Memento-Datetime']}")
    finally:
        process.terminate()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
    return path


def plain(markdown: str) -> str:
    """A Dagit markdown summary as terminal text: Dagit renders the emphasis, a terminal
    would print the asterisks."""
    return markdown.replace("**", "")


def register_days(instance: Any, resources: dict[str, Any]) -> dict[str, list[str]]:
    """One evaluation of `days_sensor` (as the daemon would run it): a partition for each day
    with snapshots or crawl segments. Returns the partitions added, by partitions set."""
    import dagster as dg

    from archive_pipelines.sensors.days import days_sensor

    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = days_sensor(context)
    added: dict[str, list[str]] = {}
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        added[request.partitions_def_name] = list(request.partition_keys)
    return added


def materialize_assets(data: Path, env: dict[str, str]) -> None:
    """The days sensor once, then each day's snapshots/blobs/views and captures, and the
    replica copies of every hash prefix (one run over the 256 partitions), with their checks,
    on the demo's Dagster instance."""
    os.environ.update(ARCHIVE_DATA_DIR=env["ARCHIVE_DATA_DIR"], DAGSTER_HOME=env["DAGSTER_HOME"])
    import dagster as dg

    from archive_pipelines.assets.captures import captures, captures_complete
    from archive_pipelines.assets.replication import replica_copies, replication_policy_met
    from archive_pipelines.assets.snapshots import snapshots
    from archive_pipelines.assets.storage import blobs, storage_health, views
    from archive_pipelines.definitions import defs
    from archive_pipelines.run_labels import launched_by

    resources = dict(defs.resources or {})
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}  # runs log in Dagit
    with dg.DagsterInstance.get() as instance:
        register_days(instance, resources)
        days = {name: instance.get_dynamic_partitions(name) for name in ("snapshot_days", "crawl_days")}
        for name, keys in days.items():
            print(f"partitions of {name} (days with data): {', '.join(keys) or 'none'}")

        def materialize(selection: list[Any], what: str, *, tags: dict[str, str] | None = None,
                        **kwargs: Any) -> dict[str, list[Any]]:
            """Each asset's materializations' metadata, by asset (one per partition); the runs
            tagged as the demo's, so Dagit's run list shows who launched them."""
            result = dg.materialize(selection, instance=instance, resources=resources,
                                    raise_on_error=False, run_config=quiet,
                                    tags={**launched_by("demo"), **(tags or {})}, **kwargs)
            if not result.success:
                raise SystemExit(f"demo step failed: materializing {what} (see Dagit's Runs)")
            found: dict[str, list[Any]] = {}
            for event in result.get_asset_materialization_events():
                found.setdefault(event.asset_key.to_user_string(), []).append(
                    event.materialization.metadata)
            return found

        for day in days["snapshot_days"]:
            meta = materialize([snapshots, blobs, views, storage_health], f"day {day}",
                               partition_key=day)
            print(f"{day}: snapshots, blobs, views: {plain(meta['blobs'][-1]['summary'].value)}")
        for day in days["crawl_days"]:
            meta = materialize([captures, captures_complete], f"captures of {day}",
                               partition_key=day)
            print(f"{day}: captures: {plain(meta['captures'][-1]['summary'].value)}")
        meta = materialize([replica_copies, replication_policy_met], "replica_copies 00..ff",
                           tags={"dagster/asset_partition_range_start": "00",
                                 "dagster/asset_partition_range_end": "ff"})
        prefixes = meta["replica_copies"]  # each partition holds its own prefix's figures
        checked = sum(m["prefix_blobs_checked"].value for m in prefixes)
        made = sum(m["run_copies_made"].value for m in prefixes)
        print(f"replica_copies (one run, {len(prefixes)} partitions): {checked:,} blobs "
              f"checked, {made:,} copies made")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(ROOT / "demo-data"))
    args = parser.parse_args()
    data = Path(args.data_dir).resolve()
    started = time.monotonic()
    fresh_data_dir(data)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(data / "dagster"))
    cli = [str(BIN / "archive-pipelines"), "--data-dir", str(data)]

    step(f"init (embedded defaults: SQLite catalog, local stores) in {data}")
    run([*cli, "init"], env)

    step("init_job through Dagster: dagster job execute -m archive_pipelines.definitions -j init_job")
    output = run([str(BIN / "dagster"), "job", "execute", "-m", "archive_pipelines.definitions",
                  "-j", "init_job", "--tags", DEMO_TAGS], env, quiet=True)
    print("RUN_SUCCESS" if "RUN_SUCCESS" in output else "run did not report success")

    step("a small legacy archive: 12 snapshots of 3 sites sharing jquery, css and a logo")
    made = make_legacy_archive(data / "archive")
    print(f"wrote {made} files under archive/<timestamp>/<extractor>/")

    step("migrate-to-cas: every file stored once by sha256, views generated")
    run([*cli, "migrate-to-cas", "--cleanup-legacy"], env)

    step("verify_storage_job through Dagster")
    output = run([str(BIN / "dagster"), "job", "execute", "-m", "archive_pipelines.definitions",
                  "-j", "verify_storage_job", "--tags", DEMO_TAGS], env, quiet=True)
    summary = next((line.split(" - ")[-1] for line in output.splitlines()
                    if "verify_storage_op - " in line and ("healthy:" in line or "problem(s):" in line)),
                   "no summary line in the run's log")
    print(f"{'RUN_SUCCESS' if 'RUN_SUCCESS' in output else 'RUN_FAILURE'}: {summary}")

    step("a piece of the view tree (archive/by_domain/news.example)")
    print_tree(data / "archive" / "by_domain" / "news.example", limit=14)
    archived = first_page(data / "archive" / "by_domain" / "news.example")
    if archived is not None:
        print(f"open an archived page in a browser: {archived.as_uri()}")

    step("an ArchiveBox 0.7 collection: flat snapshot folders, index.sqlite3, one broken folder")
    from archive_testkit.archivebox import Aged07, generate_collection

    collection = generate_collection(data, Aged07(files_per_snapshot=30), snapshots=8, seed=3)
    broken = data / "archive" / "1500000000.1"
    broken.mkdir()
    (broken / "notes.txt").write_text("a folder without index.json nor a row in index.sqlite3\n")
    first = collection.snapshots[0]
    page = data / first.folder / "index.html"
    before = page.read_bytes()
    print(f"wrote {sum(len(s.files) for s in collection.snapshots)} files in "
          f"{len(collection.snapshots)} snapshot folders (+1 broken)")

    step("update --import-orphans --migrate-fs: adopt it (no up-front scan at init)")
    run([*cli, "update", "--import-orphans", "--migrate-fs"], env)
    moved = sorted(p.relative_to(data) for p in (data / "invalid").glob("*/*"))
    print(f"moved to invalid/ (never deleted): {', '.join(map(str, moved)) or 'nothing'}")
    same = "same bytes" if page.read_bytes() == before else "CHANGED"
    print(f"{page.relative_to(data)} opens the {same} as before; it is now "
          f"{os.readlink(data / first.folder)}/index.html in the blob store")

    step(f"show {first.snapshot_id}: the snapshot by its ArchiveBox id")
    run([*cli, "show", first.snapshot_id], env)

    found = next(((s, url) for s in collection.snapshots
                  if (url := warc_requisite_url(data / s.folder)) is not None), None)
    if found is not None:
        step(f"captures: a URL that archive/{found[0].timestamp}/warc/ holds (the adoption "
             "indexed each snapshot's own WARC)")
        run([*cli, "captures", found[1]], env)

    step("a second copy of every blob: a local zstd replica, retention 2")
    toml = (data / "archive.toml").read_text(encoding="utf-8")
    toml = toml.replace("retention = 1 ", "retention = 2 ", 1) + REPLICA_SETTINGS
    (data / "archive.toml").write_text(toml, encoding="utf-8")
    run([*cli, "replicate"], env)
    run([*cli, "replication-status"], env)

    step("crawl: the project's test web (200 virtual hosts, 20 ms latency), 3,000 pages")
    crawl(data, env)

    step("Dagster: every asset materialized, partition by partition (what `make dev` shows)")
    materialize_assets(data, env)

    step("ingest-crawl --all: nothing left (the captures asset ingested every segment)")
    run([*cli, "ingest-crawl", "--all"], env)

    step("captures: what do we hold for http://site0000.test/? (any spelling of it)")
    run([*cli, "captures", "HTTP://Site0000.TEST:80/#top"], env)

    step("the crawled bodies are blobs like any other: replicated, then verified")
    run([*cli, "replicate"], env)
    run([*cli, "replication-status"], env)
    run([*cli, "verify", "--deep"], env)

    step("catalog status")
    run([*cli, "status"], env)

    step("export-warc --wacz: the crawl as a WACZ (WARC 1.1, CDXJ index, page list, fixity)")
    package = data / "exports" / "crawl.wacz"
    package.parent.mkdir(exist_ok=True)
    package.unlink(missing_ok=True)
    run([*cli, "export-warc", "--wacz", str(package)], env)
    print(f"the crawl as a WACZ: {package} (open it in ReplayWeb.page, or `wacz validate -f` it)")

    step("replay: the crawl as it was, Wayback-style (`archive-pipelines replay`)")
    path = replay_url(cli, env, "http://site0000.test/")
    print(f"replay it in a browser: `archive-pipelines --data-dir {shlex.quote(str(data))} "
          f"replay`, then open http://127.0.0.1:8080{path}")

    print(f"\ndemo finished in {time.monotonic() - started:.1f}s; "
          f"open Dagit on this data dir with `{dev_command(data)}`")


if __name__ == "__main__":
    main()
