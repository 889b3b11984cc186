"""Realistic legacy ArchiveBox collections for tests, the benchmark and the demo.

`generate_collection` writes `archive/<timestamp>/` folders in the index.json shape of each
release, flat extractor outputs (wget host folders sharing jquery/css bytes), optional broken
folders, exact duplicates and an `index.sqlite3`; the `Manifest` lists every file with its
sha256 and size so later steps can prove no byte was lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from archive_pipelines.legacy.sqlite_index import SQLITE_NAME
from archive_pipelines.legacy.versions import FS_VERSIONS
from archive_testkit.legacy_releases.archivebox_sqlite import SQLITE_VARIANTS, write_archivebox_sqlite
from archive_testkit.legacy_releases.extractor_outputs import OutputFile, SnapshotContext, build_outputs
from archive_testkit.legacy_releases.index_documents import RELEASE_VERSIONS, SnapshotSpec, index_document

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
BROKEN_KINDS = ("missing_index", "not_json", "bad_url")  # load_index's InvalidFolder reasons
_HOSTS = (
    "www.example.com",
    "blog.example.org",
    "news.example.net",
    "en.wikipedia.org",
    "github.com",
    "docs.python.org",
    "www.bbc.co.uk",
    "xn--bcher-kva.example",
)
_TAGS = ("news", "python", "Research", "to-read", "music", "Tools", "history", "web")
_WORDS = ("archive", "lazy", "migration", "café", "web", "crawl", "notes", "ünïcode", "Dagster")


@dataclass(frozen=True)
class ManifestFile:
    """One written file: path relative to the collection root, sha256, size, extractor."""

    path: str
    sha256: str
    size: int
    extractor: str


@dataclass(frozen=True)
class ManifestSnapshot:
    """One generated snapshot folder (`folder` relative to the root, e.g. `archive/1500000097`)."""

    folder: str
    url: str
    timestamp: str  # the index.json timestamp (differs from the folder name for duplicates)
    release: str
    fs_version: str
    title: str
    tags: tuple[str, ...]
    has_index: bool
    in_sqlite: bool
    broken: str | None = None
    duplicate_of: str | None = None


@dataclass
class Manifest:
    root: Path
    snapshots: list[ManifestSnapshot] = field(default_factory=list)
    files: dict[str, ManifestFile] = field(default_factory=dict)
    sqlite_variant: str | None = None

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    @property
    def unique_bytes(self) -> int:
        """Bytes a content-addressed store needs (each distinct sha256 once)."""
        return sum({f.sha256: f.size for f in self.files.values()}.values())

    def mismatches(self, paths: Sequence[str] | None = None) -> list[str]:
        """Files (all, or `paths`) whose bytes on disk no longer match the manifest."""
        problems = []
        for rel in self.files if paths is None else paths:
            expected = self.files[rel]
            try:
                digest = hashlib.sha256((self.root / rel).read_bytes()).hexdigest()
            except OSError as exc:
                problems.append(f"{rel}: {exc.strerror or exc}")
                continue
            if digest != expected.sha256:
                problems.append(f"{rel}: sha256 {digest} != {expected.sha256}")
        return problems

    def summary(self) -> dict[str, int]:
        """Counts for logs and the benchmark."""
        return {
            "snapshots": len(self.snapshots),
            "files": len(self.files),
            "total_bytes": self.total_bytes,
            "unique_bytes": self.unique_bytes,
        }

    def save(self, path: Path) -> None:
        data = {
            "root": str(self.root),
            "sqlite_variant": self.sqlite_variant,
            "snapshots": [asdict(s) for s in self.snapshots],
            "files": [asdict(f) for f in self.files.values()],
        }
        path.write_text(json.dumps(data))

    @classmethod
    def load(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text())
        snapshots = [ManifestSnapshot(**{**s, "tags": tuple(s["tags"])}) for s in data["snapshots"]]
        files = {f["path"]: ManifestFile(**f) for f in data["files"]}
        return cls(Path(data["root"]), snapshots, files, data["sqlite_variant"])


class _Writer:
    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.root = str(manifest.root)
        self.made: set[str] = {""}

    def _mkdir(self, rel: str) -> None:
        # Plain mkdir along a known tree: os.makedirs' per-call checks dominate at 200k files.
        if rel in self.made:
            return
        self._mkdir(os.path.dirname(rel))
        os.makedirs(os.path.join(self.root, rel), exist_ok=True)
        self.made.add(rel)

    def write(self, rel: str, data: bytes, extractor: str, *, sha256: str | None = None) -> None:
        self._mkdir(os.path.dirname(rel))
        fd = os.open(os.path.join(self.root, rel), _WRITE_FLAGS, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        self.manifest.files[rel] = ManifestFile(rel, digest, len(data), extractor)


def _unique_name(used: set[str], timestamp: str) -> str:
    """ArchiveBox's lowest_uniq_timestamp: `1500000097`, then `.0`, `.1`, ..."""
    base = timestamp.split(".")[0]
    name, nonce = base, 0
    while name in used:
        name, nonce = f"{base}.{nonce}", nonce + 1
    used.add(name)
    return name


def generate_collection(
    root: Path,
    n_snapshots: int,
    *,
    versions: Sequence[str] = ("0.4", "0.7", "0.8"),
    files_per_snapshot: int = 10,
    shared_asset_fraction: float = 0.3,
    broken: int = 0,
    duplicates: int = 0,
    seed: int = 0,
    with_sqlite: bool = False,
    sqlite_only: int | None = None,
    binary_size: int = 2048,
) -> Manifest:
    """Write a legacy collection under `root` and return its manifest.

    `n_snapshots` adoptable folders cycle through the `versions` releases. Extra folders:
    `broken` (cycling missing index.json, truncated JSON, a `javascript:` url), `duplicates`
    (exact copies of a snapshot under another folder name) and, with `with_sqlite`,
    `sqlite_only` folders without index.json that the database knows (default: 1 per 50).
    `index.sqlite3` uses the schema variant of the newest release in `versions`.
    """
    unknown = [v for v in versions if v not in RELEASE_VERSIONS]
    if unknown or not versions:
        raise ValueError(f"unknown releases {unknown}; choose from {sorted(RELEASE_VERSIONS)}")
    if sqlite_only is None:
        sqlite_only = max(1, n_snapshots // 50) if with_sqlite else 0
    rng = random.Random(seed)
    manifest = Manifest(root)
    writer = _Writer(manifest)
    used: set[str] = set()
    in_sqlite: list[SnapshotSpec] = []
    kinds = ["ok"] * n_snapshots + ["sqlite_only"] * sqlite_only
    kinds += [BROKEN_KINDS[i % len(BROKEN_KINDS)] for i in range(broken)]
    # Pick the duplicated snapshots first so only their bytes stay in memory.
    picks = [rng.randrange(n_snapshots) for _ in range(duplicates)] if n_snapshots else []
    picked = set(picks)
    originals: dict[int, tuple[str, SnapshotSpec, list[OutputFile], bytes]] = {}
    for number, kind in enumerate(kinds):
        spec, ctx = _spec(number, versions[number % len(versions)], rng, binary_size=binary_size)
        used.add(spec.timestamp)  # an original folder is named by its timestamp
        folder = f"archive/{spec.timestamp}"
        files, results = build_outputs(
            ctx,
            budget=max(1, files_per_snapshot - 2),
            shared=rng.random() < shared_asset_fraction,
            unknown=number % 5 == 4,
        )
        spec = replace(spec, results=tuple(results))
        document = index_document(spec)
        if kind == "bad_url":
            document["url"] = "javascript:alert(document.cookie)"
        # ArchiveBox indents by 4; compact JSON (the C encoder) is 10x faster to write here.
        index_bytes = (json.dumps(document) + "\n").encode()
        if kind == "not_json":
            index_bytes = index_bytes[: len(index_bytes) // 2]
        has_index = kind not in ("missing_index", "sqlite_only")
        if has_index:
            writer.write(f"{folder}/index.json", index_bytes, "index")
        writer.write(f"{folder}/index.html", _index_html(spec), "index")
        for output in files:
            writer.write(f"{folder}/{output.rel}", output.data, output.extractor, sha256=output.sha256)
        if kind in ("ok", "sqlite_only") and with_sqlite:
            in_sqlite.append(spec)
        if number in picked:
            originals[number] = (folder, spec, files, index_bytes)
        manifest.snapshots.append(_entry(folder, spec, has_index=has_index, with_sqlite=with_sqlite,
                                         kind=kind))
    for pick in picks:
        source, spec, files, index_bytes = originals[pick]
        folder = f"archive/{_unique_name(used, spec.timestamp)}"
        writer.write(f"{folder}/index.json", index_bytes, "index")
        writer.write(f"{folder}/index.html", _index_html(spec), "index")
        for output in files:
            writer.write(f"{folder}/{output.rel}", output.data, output.extractor, sha256=output.sha256)
        entry = _entry(folder, spec, has_index=True, with_sqlite=False, kind="ok")
        manifest.snapshots.append(replace(entry, duplicate_of=source))
    if with_sqlite:
        newest = max((RELEASE_VERSIONS[v] for v in versions), key=FS_VERSIONS.index)
        manifest.sqlite_variant = SQLITE_VARIANTS[newest]
        write_archivebox_sqlite(root / SQLITE_NAME, in_sqlite, manifest.sqlite_variant)
        with open(root / SQLITE_NAME, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        size = (root / SQLITE_NAME).stat().st_size
        manifest.files[SQLITE_NAME] = ManifestFile(SQLITE_NAME, digest, size, "index")
    return manifest


def _spec(
    number: int, release: str, rng: random.Random, *, binary_size: int
) -> tuple[SnapshotSpec, SnapshotContext]:
    host = _HOSTS[rng.randrange(len(_HOSTS))]
    words = rng.sample(_WORDS, 3)
    path = f"articles/{number}-{'-'.join(words)}"
    url = f"https://{host}/{path}"
    seconds = 1_500_000_000 + number * 97 + rng.randrange(60)
    timestamp = f"{seconds}.{rng.randrange(1, 10**6)}" if rng.random() < 0.3 else str(seconds)
    title = " ".join(w.capitalize() for w in words) + f" \u2013 {host}"
    tags = tuple(sorted(rng.sample(_TAGS, rng.randrange(4))))
    snapshot_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    spec = SnapshotSpec(
        url=url,
        timestamp=timestamp,
        title=title,
        tags=tags,
        release=release,
        snapshot_id=snapshot_id,
        abid="snp_" + snapshot_id.replace("-", "").upper()[:26],
        crawl_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    )
    ctx = SnapshotContext(url, host, path, title, timestamp, rng, binary_size)
    return spec, ctx


def _entry(
    folder: str, spec: SnapshotSpec, *, has_index: bool, with_sqlite: bool, kind: str
) -> ManifestSnapshot:
    return ManifestSnapshot(
        folder=folder,
        url=spec.url,
        timestamp=spec.timestamp,
        release=spec.release,
        fs_version=RELEASE_VERSIONS[spec.release],
        title=spec.title,
        tags=spec.tags,
        has_index=has_index,
        in_sqlite=with_sqlite and kind in ("ok", "sqlite_only"),
        broken=kind if kind in BROKEN_KINDS else None,
    )


def _index_html(spec: SnapshotSpec) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{spec.title}</title></head><body>"
        f'<a href="{spec.url}">{spec.url}</a> archived at {spec.timestamp}</body></html>\n'
    ).encode()
