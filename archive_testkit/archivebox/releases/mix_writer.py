"""`write_release_mix`: folders in the shape of each ArchiveBox release, with their manifest.

Writes `archive/<timestamp>/` folders in the index.json shape of each release, flat extractor
outputs (wget host folders sharing jquery/css bytes), optional broken folders, exact
duplicates and an `index.sqlite3`; the `Manifest` lists every file with its sha256 and size so
later steps can prove no byte was lost.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import replace
from pathlib import Path

from archive_pipelines.legacy.versions import FS_VERSIONS
from archive_testkit.archivebox.formats import random_uuid
from archive_testkit.archivebox.index_sqlite import SQLITE_NAME
from archive_testkit.archivebox.layouts import ReleaseMix
from archive_testkit.archivebox.releases.collection_manifest import (
    BROKEN_KINDS,
    Manifest,
    ManifestFile,
    ManifestSnapshot,
    ManifestWriter,
)
from archive_testkit.archivebox.releases.release_documents import (
    RELEASE_VERSIONS,
    SnapshotSpec,
    index_document,
)
from archive_testkit.archivebox.releases.release_outputs import OutputFile, SnapshotContext, build_outputs
from archive_testkit.archivebox.releases.release_sqlite import SQLITE_VARIANTS, write_archivebox_sqlite

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


def _unique_name(used: set[str], timestamp: str) -> str:
    """ArchiveBox's lowest_uniq_timestamp: `1500000097`, then `.0`, `.1`, ..."""
    base = timestamp.split(".")[0]
    name, nonce = base, 0
    while name in used:
        name, nonce = f"{base}.{nonce}", nonce + 1
    used.add(name)
    return name


def write_release_mix(root: Path, layout: ReleaseMix, *, snapshots: int, seed: int) -> Manifest:
    """Write `snapshots` adoptable folders cycling through `layout.releases`, plus the extras
    the layout asks for, under `root`; return the manifest of every file written."""
    versions = tuple(layout.releases)
    unknown = [v for v in versions if v not in RELEASE_VERSIONS]
    if unknown or not versions:
        raise ValueError(f"unknown releases {unknown}; choose from {sorted(RELEASE_VERSIONS)}")
    n_snapshots, with_sqlite = snapshots, layout.with_sqlite
    sqlite_only = layout.sqlite_only
    if sqlite_only is None:
        sqlite_only = max(1, n_snapshots // 50) if with_sqlite else 0
    rng = random.Random(seed)
    manifest = Manifest(root)
    writer = ManifestWriter(manifest)
    used: set[str] = set()
    in_sqlite: list[SnapshotSpec] = []
    kinds = ["ok"] * n_snapshots + ["sqlite_only"] * sqlite_only
    kinds += [BROKEN_KINDS[i % len(BROKEN_KINDS)] for i in range(layout.broken)]
    # Pick the duplicated snapshots first so only their bytes stay in memory.
    picks = [rng.randrange(n_snapshots) for _ in range(layout.duplicates)] if n_snapshots else []
    picked = set(picks)
    originals: dict[int, tuple[str, SnapshotSpec, list[OutputFile], bytes]] = {}
    for number, kind in enumerate(kinds):
        spec, ctx = _spec(number, versions[number % len(versions)], rng, layout.binary_size)
        used.add(spec.timestamp)  # an original folder is named by its timestamp
        folder = f"archive/{spec.timestamp}"
        files, results = build_outputs(
            ctx,
            budget=max(1, layout.files_per_snapshot - 2),
            shared=rng.random() < layout.shared_asset_fraction,
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
            writer.write(f"{folder}/{output.rel}", output.data, output.extractor, output.sha256)
        if kind in ("ok", "sqlite_only") and with_sqlite:
            in_sqlite.append(spec)
        if number in picked:
            originals[number] = (folder, spec, files, index_bytes)
        manifest.snapshots.append(_entry(folder, spec, has_index, with_sqlite, kind))
    for pick in picks:
        source, spec, files, index_bytes = originals[pick]
        folder = f"archive/{_unique_name(used, spec.timestamp)}"
        writer.write(f"{folder}/index.json", index_bytes, "index")
        writer.write(f"{folder}/index.html", _index_html(spec), "index")
        for output in files:
            writer.write(f"{folder}/{output.rel}", output.data, output.extractor, output.sha256)
        entry = _entry(folder, spec, True, False, "ok")
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
    number: int, release: str, rng: random.Random, binary_size: int
) -> tuple[SnapshotSpec, SnapshotContext]:
    host = _HOSTS[rng.randrange(len(_HOSTS))]
    words = rng.sample(_WORDS, 3)
    path = f"articles/{number}-{'-'.join(words)}"
    url = f"https://{host}/{path}"
    seconds = 1_500_000_000 + number * 97 + rng.randrange(60)
    timestamp = f"{seconds}.{rng.randrange(1, 10**6)}" if rng.random() < 0.3 else str(seconds)
    title = " ".join(w.capitalize() for w in words) + f" \u2013 {host}"
    tags = tuple(sorted(rng.sample(_TAGS, rng.randrange(4))))
    snapshot_id = str(random_uuid(rng))
    spec = SnapshotSpec(
        url=url,
        timestamp=timestamp,
        title=title,
        tags=tags,
        release=release,
        snapshot_id=snapshot_id,
        abid="snp_" + snapshot_id.replace("-", "").upper()[:26],
        crawl_id=str(random_uuid(rng)),
    )
    ctx = SnapshotContext(url, host, path, title, timestamp, rng, binary_size)
    return spec, ctx


def _entry(
    folder: str, spec: SnapshotSpec, has_index: bool, with_sqlite: bool, kind: str
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
