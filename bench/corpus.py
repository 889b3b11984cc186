"""A deterministic corpus that looks like web archives, for the CAS benchmarks.

Many snapshots of a few sites, each `<out>/<timestamp>/<extractor>/...`: byte-identical
shared assets (jQuery, Bootstrap, fonts, logos) across snapshots and partly across sites,
mostly unique HTML, unique screenshots and PDFs, and a few large media files. A
`manifest.json` at the root lists every snapshot's url, timestamp and files (path relative
to the corpus root, size, sha256) and the totals, including the dedup ratio a
content-addressed store should reach. Use `ensure_corpus(CorpusParams(...))` from a
benchmark, or `python bench/corpus.py --help`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

from corpus_content import MP4, PDF, PNG, Site, binary, html_page, make_sites

WORK_DIR = Path(__file__).resolve().parent / ".work"
MANIFEST = "manifest.json"
CHUNK = 4 << 20


class FileRecord(TypedDict):
    path: str  # relative to the corpus root: <timestamp>/<extractor>/...
    size: int
    sha256: str


class SnapshotRecord(TypedDict):
    url: str
    timestamp: str
    files: list[FileRecord]


class TotalsRecord(TypedDict):
    snapshots: int
    files: int
    small_files: int
    large_files: int
    bytes: int
    unique_files: int
    unique_bytes: int  # sum of the sizes of distinct sha256
    dedup_ratio: float  # bytes / unique_bytes: what a content-addressed store should reach


class Manifest(TypedDict):
    params: dict[str, int]
    totals: TotalsRecord
    snapshots: list[SnapshotRecord]


@dataclass(frozen=True)
class CorpusParams:
    files: int = 20_000
    sites: int = 40
    large: int = 2
    large_mb: int = 120
    seed: int = 0

    def slug(self) -> str:
        return (f"corpus-s{self.seed}-f{self.files}-w{self.sites}"
                f"-l{self.large}x{self.large_mb}")


@dataclass
class Totals:
    """Running counts; `unique` maps sha256 to size."""

    small_files: int = 0
    large_files: int = 0
    bytes: int = 0
    unique: dict[str, int] = field(default_factory=dict)

    def add(self, size: int, sha256: str, *, large: bool = False) -> None:
        self.large_files += large
        self.small_files += not large
        self.bytes += size
        self.unique[sha256] = size

    def as_record(self, snapshots: int) -> TotalsRecord:
        unique_bytes = sum(self.unique.values())
        return {"snapshots": snapshots, "files": self.small_files + self.large_files,
                "small_files": self.small_files, "large_files": self.large_files,
                "bytes": self.bytes, "unique_files": len(self.unique),
                "unique_bytes": unique_bytes,
                "dedup_ratio": round(self.bytes / unique_bytes, 4) if unique_bytes else 1.0}


class CorpusWriter:
    """Writes files under `root`, hashing them on the way, and records them per snapshot."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.totals = Totals()
        self.snapshots: list[SnapshotRecord] = []

    def put(self, files: list[FileRecord], rel: str, data: bytes,
            sha256: str | None = None) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        files.append({"path": rel, "size": len(data), "sha256": digest})
        self.totals.add(len(data), digest)

    def put_large(self, files: list[FileRecord], rel: str, rng: random.Random,
                  size: int) -> None:
        """A large unique file written (and hashed) chunk by chunk."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with path.open("wb") as handle:
            for offset in range(0, size, CHUNK):
                chunk = binary(rng, MP4 if offset == 0 else b"", min(CHUNK, size - offset))
                digest.update(chunk)
                handle.write(chunk)
        files.append({"path": rel, "size": size, "sha256": digest.hexdigest()})
        self.totals.add(size, digest.hexdigest(), large=True)


def write_snapshot(writer: CorpusWriter, params: CorpusParams, site: Site, index: int) -> None:
    """One snapshot: index.json, headers, a wget mirror with its assets, other extractors."""
    rng = random.Random(f"{params.seed}:snapshot:{index}")
    visit = index // params.sites
    stamp = f"{1_600_000_000 + index * 3_600 + rng.randrange(3_000)}.{rng.randrange(1000):03d}"
    url = f"https://{site.domain}/" + ("" if visit == 0 else f"news/{visit}-{rng.randrange(10**6)}")
    files: list[FileRecord] = []
    writer.put(files, f"{stamp}/index.json", json.dumps({"url": url, "timestamp": stamp}).encode())
    writer.put(files, f"{stamp}/headers/headers.json", json.dumps(
        {"Content-Type": "text/html", "Server": "nginx", "ETag": f"{rng.getrandbits(64):x}"},
    ).encode())
    write_wget(writer, files, f"{stamp}/wget/{site.domain}", site, visit, rng, url)
    write_captures(writer, files, stamp, rng, url)
    writer.snapshots.append({"url": url, "timestamp": stamp, "files": files})


def write_wget(writer: CorpusWriter, files: list[FileRecord], folder: str, site: Site,
               visit: int, rng: random.Random, url: str) -> None:
    """The page (unique) and its static assets (shared; site.css changes every 15 visits)."""
    writer.put(files, f"{folder}/index.html", html_page(rng, url, rng.randint(10_000, 80_000)))
    assets = [("jquery.min.js", site.jquery), ("logo.png", site.logo), ("hero.jpg", site.hero),
              (f"fonts/{site.font[0]}.woff2", site.font[1]),
              ("site.css", site.stylesheets[min(visit // 15, len(site.stylesheets) - 1)])]
    if site.bootstrap is not None:
        assets.append(("bootstrap.min.css", site.bootstrap))
    for name, blob in assets:
        writer.put(files, f"{folder}/static/{name}", blob.data, blob.sha256)


def write_captures(writer: CorpusWriter, files: list[FileRecord], stamp: str,
                   rng: random.Random, url: str) -> None:
    """Unique extractor outputs: singlefile and DOM HTML, a screenshot, sometimes a PDF."""
    for rel in ("singlefile/singlefile.html", "dom/output.html"):
        writer.put(files, f"{stamp}/{rel}", html_page(rng, url, rng.randint(10_000, 80_000)))
    writer.put(files, f"{stamp}/screenshot/screenshot.png",
               binary(rng, PNG, rng.randint(50_000, 500_000)))
    if rng.random() < 1 / 3:
        writer.put(files, f"{stamp}/pdf/output.pdf",
                   binary(rng, PDF, rng.randint(50_000, 500_000)))


def add_large_files(writer: CorpusWriter, params: CorpusParams) -> None:
    """Spread `params.large` media files over the snapshots, evenly."""
    for number in range(params.large):
        snapshot = writer.snapshots[(number + 1) * len(writer.snapshots) // (params.large + 1)]
        rng = random.Random(f"{params.seed}:large:{number}")
        writer.put_large(snapshot["files"], f"{snapshot['timestamp']}/media/video-{number}.mp4", rng,
                         params.large_mb << 20)


def generate_corpus(params: CorpusParams, root: Path) -> Manifest:
    """Write the corpus into the empty folder `root`; return (and write) its manifest."""
    sites = make_sites(random.Random(f"{params.seed}:sites"), params.sites)
    writer = CorpusWriter(root)
    index = 0
    while writer.totals.small_files < params.files:
        write_snapshot(writer, params, sites[index % len(sites)], index)
        index += 1
    add_large_files(writer, params)
    manifest: Manifest = {
        "params": asdict(params),
        "totals": writer.totals.as_record(len(writer.snapshots)),
        "snapshots": writer.snapshots,
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def load_manifest(root: Path) -> Manifest:
    loaded: Manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    return loaded


def ensure_corpus(params: CorpusParams, out: Path | None = None) -> Path:
    """The corpus folder (default `bench/.work/<slug>/`): reused if complete, else generated.

    Generation goes to a sibling `.partial` folder renamed into place at the end, so an
    interrupted run never leaves something that looks complete.
    """
    root = (out or WORK_DIR / params.slug()).resolve()
    if (root / MANIFEST).is_file():
        if load_manifest(root).get("params") != asdict(params):
            raise SystemExit(f"error: {root} holds a corpus with other parameters")
        return root
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"error: {root} exists, is not empty and has no {MANIFEST}")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    generate_corpus(params, partial)
    if root.exists():
        root.rmdir()
    partial.rename(root)
    return root


def parse_args(argv: list[str] | None) -> tuple[CorpusParams, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="where to write (default: bench/.work/corpus-<params>/); reused "
                             f"when it holds a {MANIFEST} for the same parameters")
    parser.add_argument("--files", type=int, default=20_000, metavar="N",
                        help="at least this many small files (default: 20000)")
    parser.add_argument("--sites", type=int, default=40, metavar="N",
                        help="distinct sites the snapshots are spread over (default: 40)")
    parser.add_argument("--large", type=int, default=2, metavar="N",
                        help="large media files (default: 2)")
    parser.add_argument("--large-mb", type=int, default=120, metavar="MB",
                        help="size of each large file in MiB (default: 120)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = parser.parse_args(argv)
    if min(args.files, args.sites) < 1 or min(args.large, args.large_mb) < 0:
        parser.error("--files and --sites must be positive, --large and --large-mb not negative")
    return (CorpusParams(files=args.files, sites=args.sites, large=args.large,
                         large_mb=args.large_mb, seed=args.seed), args.out)


def main(argv: list[str] | None = None) -> int:
    params, out = parse_args(argv)
    started = time.perf_counter()
    root = ensure_corpus(params, out)
    totals = load_manifest(root)["totals"]
    print(f"corpus {root} ({time.perf_counter() - started:.1f} s)")
    for key, value in totals.items():
        print(f"  {key:<13} {value:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
