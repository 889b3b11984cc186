"""The two archives `replay_bench.py --only replay` serves (not a benchmark).

- `ensure_crawl_corpus`: a real crawl of the test web (`frontier-service run`, its embedded
  Redis, pages with their stylesheet, script, font and logo), ingested with `ingest-crawl`
  into a SQLite data dir, then exported with `export-warc` for pywb: `--pages` HTML pages
  (200s) at least, cached in `bench/.work/replay/crawl-<params>/`.
- `ensure_generated_corpus`: a WARC of `records` response records written directly with
  warcio (hosts of 100 records: 4 assets a host, 96 small pages naming them, bodies unique),
  imported with `import-warc` into a data dir; cached in `bench/.work/replay/gen-<records>/`.

Both give the pages to request as (URL, 14-digit timestamp) of 200 HTML captures, read from
the WARC (what pywb serves) or computed by the generator's formula.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH_DIR))

from settle import remove_tree  # noqa: E402

from archive_testkit.testweb import (  # noqa: E402
    TestWebConfig,
    all_hosts,
    serve_in_subprocess,
)

VERSION = 1  # bump when what is generated changes: the caches are remade


@dataclass(frozen=True)
class Corpus:
    """A data dir of ours and the WARC holding the same captures, and the pages to replay."""

    label: str
    data_dir: Path
    warc: Path
    pages: list[tuple[str, str]]  # (URL, 14-digit timestamp), 200 text/html captures
    records: int  # WARC records in `warc` (warcinfo excluded)
    info: dict[str, object]


def archive_pipelines(*args: str) -> list[str]:
    """The command line of `archive-pipelines ARGS` with this checkout's code."""
    return [sys.executable, "-c", "import sys; from archive_pipelines.cli.main import main; "
            "sys.exit(main())", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run(command: list[str], *, log: Path, what: str) -> float:
    """Runs `command` (output to `log`); seconds taken; SystemExit naming the log on failure."""
    started = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=REPO, env=env(), stdout=out, stderr=subprocess.STDOUT,
                              check=False)
    if done.returncode:
        raise SystemExit(f"error: {what} failed (exit {done.returncode}); see {log}")
    return time.perf_counter() - started


def ts14(warc_date: str) -> str:
    return "".join(c for c in warc_date if c.isdigit())[:14]


def html_pages(warc: Path) -> tuple[list[tuple[str, str]], int]:
    """The 200 text/html response records of `warc` as (URL, timestamp), and its records."""
    from warcio.archiveiterator import ArchiveIterator

    pages: list[tuple[str, str]] = []
    records = 0
    with open(warc, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "warcinfo":
                continue
            records += 1
            if record.rec_type != "response" or record.http_headers is None:
                continue
            kind = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip()
            if record.http_headers.get_statuscode() == "200" and kind == "text/html":
                pages.append((str(record.rec_headers.get_header("WARC-Target-URI")),
                              ts14(str(record.rec_headers.get_header("WARC-Date")))))
    return sorted(set(pages)), records


def _finished_or_cleared(root: Path) -> dict[str, object] | None:
    """The info of the corpus finished in `root` by this VERSION; else None, `root` made anew
    (an older or unfinished one removed)."""
    done = root / "done.json"
    if done.exists():
        info: dict[str, object] = json.loads(done.read_text())
        if info.get("version") == VERSION:
            return info
    remove_tree(root)
    root.mkdir(parents=True)
    return None


def _mark_finished(root: Path, info: dict[str, object]) -> None:
    (root / "done.json").write_text(json.dumps(info))


# ---- the crawl of the test web ---------------------------------------------------------

PAGES_PER_HOST = 60


def _web_config(pages: int) -> TestWebConfig:
    hosts = max(2, -(-pages * 5 // (PAGES_PER_HOST * 4)))  # ~25% more pages than asked for
    return TestWebConfig(seed=30, hosts=hosts, pages_per_host=PAGES_PER_HOST, links_per_page=30,
                         page_min_bytes=8_000, page_max_bytes=40_000, special_fraction=0.0,
                         trap_fraction=0.0, dead_fraction=0.0, crawl_delay_fraction=0.0,
                         garbage_robots_fraction=0.0, huge_robots_hosts=0, cross_host_fraction=0.2)


def ensure_crawl_corpus(work: Path, pages: int) -> Corpus:
    """A real crawl of the test web with at least `pages` HTML pages, ingested and exported."""
    config = _web_config(pages)
    root = work / f"crawl-v{VERSION}-p{pages}"
    info = _finished_or_cleared(root)
    if info is None:
        log = root / "prepare.log"
        data_dir, warc = root / "data", root / "export.warc.gz"
        started = time.perf_counter()
        run(archive_pipelines("--data-dir", str(data_dir), "init"), log=log, what="init")
        hosts = all_hosts(config)
        with serve_in_subprocess(config) as web:
            crawl = [sys.executable, "-m", "frontier_service", "--data-dir", str(data_dir),
                     "--redis-url", "embedded", "--crawl-name", "replay-bench", "run",
                     "--processes", "1", "--concurrency", "32",
                     "--per-host-concurrency", "8", "--min-delay", "0", "--max-depth", "6",
                     "--allowed-domain", "*.test", "--allow-network", "127.0.0.0/8",
                     "--host-map", f"*.test=127.0.0.1:{web.port}", "--metrics-port", "-1",
                     "--exit-when-idle", "2", "--max-seconds", "900", "--progress-seconds", "0",
                     *[arg for host in hosts for arg in ("--seed", f"http://{host}/")]]
            crawl_s = run(crawl, log=log, what="the crawl (frontier-service run)")
        ingest_s = run(archive_pipelines("--data-dir", str(data_dir), "ingest-crawl", "--all"),
                       log=log, what="ingest-crawl")
        export_s = run(archive_pipelines("--data-dir", str(data_dir), "export-warc", str(warc)),
                       log=log, what="export-warc")
        found, records = html_pages(warc)
        if len(found) < pages:
            raise SystemExit(f"error: the crawl archived {len(found)} HTML pages, fewer than "
                             f"--pages {pages}; see {log}")
        info = {"version": VERSION, "hosts": len(hosts), "html_pages": len(found),
                "records": records, "crawl_s": crawl_s, "ingest_s": ingest_s,
                "export_s": export_s, "seconds": time.perf_counter() - started,
                "warc_bytes": warc.stat().st_size}
        (root / "pages.json").write_text(json.dumps(found))
        _mark_finished(root, info)
    found = [(url, ts) for url, ts in json.loads((root / "pages.json").read_text())]
    chosen = sorted(random.Random(pages).sample(found, pages))
    return Corpus(f"{pages:,} crawled pages", root / "data", root / "export.warc.gz", chosen,
                  int(str(info["records"])), info)


# ---- the generated WARC ----------------------------------------------------------------

RECORDS_PER_HOST = 100
ASSETS = (("/static/site.css", "text/css"), ("/static/app.js", "application/javascript"),
          ("/static/font.woff2", "font/woff2"), ("/img/logo.png", "image/png"))
PAGES_PER_GEN_HOST = RECORDS_PER_HOST - len(ASSETS)
T0 = int(datetime(2025, 3, 1, tzinfo=UTC).timestamp())
WORDS = ("alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima", "mike",
         "oscar", "papa", "romeo", "sierra", "tango", "victor")


def gen_host(n: int) -> str:
    return f"www.h{n}.d{n % 997}.example"


def gen_host_time(n: int) -> int:
    """When host n's crawl started (hosts one after another, 97 s apart)."""
    return T0 + n * 97


def gen_page_path(n: int, i: int) -> str:
    return f"/{WORDS[(n + i) % len(WORDS)]}/{i // 8}/page-{i}.html?id={n * 131 + i}"


def gen_page(n: int, i: int) -> tuple[str, int]:
    """(URL, epoch seconds) of page i of host n: 8 pages a second after the assets."""
    return f"http://{gen_host(n)}{gen_page_path(n, i)}", gen_host_time(n) + 1 + i // 8


def _stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y%m%d%H%M%S")


def _page_html(n: int, i: int) -> bytes:
    host = gen_host(n)
    links = "".join(f'<li><a href="{gen_page_path(n, (i + k * 7) % PAGES_PER_GEN_HOST)}">'
                    f"page {k}</a></li>" for k in range(1, 6))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{host} page {i}</title>\n"
            '<link rel="stylesheet" href="/static/site.css">\n'
            '<link rel="preload" href="/static/font.woff2" as="font" type="font/woff2" '
            "crossorigin>\n<script src=\"/static/app.js\" defer></script></head>\n<body>"
            f'<header><img src="/img/logo.png" alt="logo"><h1>{host} {i}</h1></header>\n'
            f"<ul>{links}</ul>\n<p>Record {n}-{i}: "
            + " ".join(WORDS[(n * i + k) % len(WORDS)] for k in range(40))
            + "</p>\n</body></html>\n").encode()


def _asset_body(n: int, path: str) -> bytes:
    if path.endswith(".css"):
        return (f"/* {gen_host(n)} */\n@font-face {{ font-family: Site; "
                "src: url(font.woff2) format(\"woff2\"); }\n"
                "body { font-family: Site, sans-serif; margin: 0 auto; max-width: 50em; }\n"
                ).encode()
    if path.endswith(".js"):
        return f"document.documentElement.dataset.host = {json.dumps(gen_host(n))};\n".encode()
    seed = random.Random(n * 7 + len(path)).randbytes(64)
    if path.endswith(".png"):
        return b"\x89PNG\r\n\x1a\n" + seed * 4
    return b"wOF2" + seed * 8


def _write_warc(path: Path, records: int) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    hosts = records // RECORDS_PER_HOST
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")

        def write(url: str, seconds: int, kind: str, body: bytes) -> None:
            http = StatusAndHeaders("200 OK", [
                ("Content-Type", kind), ("Content-Length", str(len(body))),
                ("Date", datetime.fromtimestamp(seconds, UTC).strftime(
                    "%a, %d %b %Y %H:%M:%S GMT"))], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=_Payload(body), http_headers=http,
                warc_headers_dict={"WARC-Date": datetime.fromtimestamp(seconds, UTC)
                                   .strftime("%Y-%m-%dT%H:%M:%SZ")})
            writer.write_record(record)

        for n in range(hosts):
            start = gen_host_time(n)
            for asset, kind in ASSETS:
                write(f"http://{gen_host(n)}{asset}", start, kind, _asset_body(n, asset))
            for i in range(PAGES_PER_GEN_HOST):
                url, seconds = gen_page(n, i)
                write(url, seconds, "text/html; charset=utf-8", _page_html(n, i))


class _Payload:
    """A bytes body as the stream warcio reads a payload from."""

    def __init__(self, body: bytes) -> None:
        self.body, self.at = body, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.body) if size is None or size < 0 else self.at + size
        chunk, self.at = self.body[self.at:end], min(end, len(self.body))
        return chunk


def ensure_generated_corpus(work: Path, records: int, pages: int) -> Corpus:
    """`records` records (rounded up to whole hosts) in a WARC, imported; `pages` sampled."""
    hosts = max(1, -(-records // RECORDS_PER_HOST))
    total = hosts * RECORDS_PER_HOST
    root = work / f"gen-v{VERSION}-r{total}"
    info = _finished_or_cleared(root)
    if info is None:
        log = root / "prepare.log"
        data_dir, warc = root / "data", root / "generated.warc.gz"
        started = time.perf_counter()
        _write_warc(warc, total)
        write_s = time.perf_counter() - started
        run(archive_pipelines("--data-dir", str(data_dir), "init"), log=log, what="init")
        import_s = run(archive_pipelines("--data-dir", str(data_dir), "import-warc", str(warc)),
                       log=log, what="import-warc")
        info = {"version": VERSION, "hosts": hosts, "records": total, "write_s": write_s,
                "import_s": import_s, "seconds": time.perf_counter() - started,
                "warc_bytes": warc.stat().st_size}
        _mark_finished(root, info)
    rng = random.Random(total)
    drawn = rng.sample(range(hosts * PAGES_PER_GEN_HOST), min(pages, hosts * PAGES_PER_GEN_HOST))
    chosen = []
    for number in sorted(drawn):
        url, seconds = gen_page(number // PAGES_PER_GEN_HOST, number % PAGES_PER_GEN_HOST)
        chosen.append((url, _stamp(seconds)))
    return Corpus(f"{total:,} generated records", root / "data", root / "generated.warc.gz",
                  chosen, total, info)

