"""What a cluster test's data dir holds: the options a test file gives its cluster fixture,
its blobs' contents, and legacy ArchiveBox folders for the `blobs` asset to store."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.settings import load_settings


@dataclass(frozen=True)
class ClusterOptions:
    """What a test file's cluster differs in (override the `cluster_options` fixture)."""

    visibility_timeout: int = 300  # executor.yaml's --visibility-timeout
    blobs: int = 40  # distinct blobs ingested before the workers start
    blob_bytes: int = 600  # about the size of each
    # When > 0: the blobs' hashes all begin with one of this many two-hex-digit prefixes,
    # evenly (more blobs per prefix: a longer step per partition of replica_copies).
    prefixes: int = 0
    legacy_days: tuple[str, ...] = ()  # days with snapshots whose files are in legacy folders
    # Sensors stopped before dagster-daemon starts (archival_director_sensor, on by default,
    # copies every blob short of copies in its first tick).
    stopped_sensors: tuple[str, ...] = ()


def blob_contents(options: ClusterOptions) -> list[bytes]:
    """`options.blobs` distinct contents of about `options.blob_bytes`, spread over
    `options.prefixes` hash prefixes when that is set (a nonce varied until one fits)."""
    contents = []
    wanted = {f"{i * (256 // options.prefixes):02x}": 0 for i in range(options.prefixes)}
    per_prefix = -(-options.blobs // max(1, options.prefixes))
    nonce = 0
    while len(contents) < options.blobs:
        line = f"cluster blob {nonce}\n".encode()
        nonce += 1
        data = line * max(1, options.blob_bytes // len(line))
        prefix = hashlib.sha256(data).hexdigest()[:2]
        if wanted:
            if wanted.get(prefix, per_prefix) >= per_prefix:
                continue
            wanted[prefix] += 1
        contents.append(data)
    return contents


def add_legacy_days(data: Path, days: tuple[str, ...]) -> dict[str, int]:
    """Two snapshots a day known to the catalog (as an import records them) whose files are
    still in legacy ArchiveBox folders under archive/<timestamp>/: what `blobs` stores for the
    day. Returns {day: files in its folders}."""
    engine = make_engine(load_settings(data, environ={}).catalog_url)
    files = {}
    try:
        repo = Catalog(engine)
        for n, day in enumerate(days):
            start = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
            for k in range(2):
                ts = f"{start + 3600 * (k + 1):.0f}.{k + 1}"
                url = f"https://day{n}.test/{k}"
                folder = data / "archive" / ts
                (folder / "wget").mkdir(parents=True)
                (folder / "index.json").write_text(f'{{"url": "{url}", "timestamp": "{ts}"}}')
                (folder / "wget" / "index.html").write_text(f"<html>{url} {day}</html>")
                (folder / "wget" / "app.js").write_bytes(f"// {day}\n".encode() * 500)
                repo.snapshots.add_snapshot(url=url, timestamp=ts, fs_version="organized",
                                            created_at=datetime.fromtimestamp(float(ts), tz=UTC))
            files[day] = 6  # index.json, index.html, app.js in each of two folders
    finally:
        engine.dispose()
    return files
