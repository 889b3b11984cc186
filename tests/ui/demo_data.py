"""The UI tests' data dir: the first steps of `make demo` (scripts/demo.py), in ~5 s.

The whole demo takes ~45 s, most of it a 3,000-page crawl that nothing in the UI tests needs:
this builds its legacy archive (12 snapshots over 2024-12-25 and 26), migrates it to the blob
store, keeps a second copy of every blob in a local replica and registers the days as
partitions (the days sensor's one evaluation, as the demo does), with the demo's own helpers
and the same commands.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import dagster as dg
from sqlalchemy import select

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("archive-pipelines"))


@dataclass(frozen=True)
class DemoData:
    """A data dir and its Dagster home, with partitions the tests backfill."""

    data_dir: Path
    dagster_home: Path
    snapshot_days: list[str]  # the archive's two days
    hash_prefixes: list[str]


def clean_environ() -> dict[str, str]:
    """This environment without a developer's catalog or Redis overrides (as `make demo`)."""
    return {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}


def build_demo_data(data: Path) -> DemoData:
    demo = _demo_script()
    data.mkdir(parents=True)
    env = clean_environ()
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(data / "dagster"))

    def cli(*args: str) -> None:
        result = subprocess.run([CLI, "--data-dir", str(data), *args], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"archive-pipelines {' '.join(args)}:\n" \
                                       f"{result.stdout}{result.stderr}"

    cli("init")
    demo.make_legacy_archive(data / "archive")
    days = sorted({datetime.fromtimestamp(float(p.name), UTC).date().isoformat()
                   for p in (data / "archive").iterdir()})
    cli("migrate-to-cas", "--cleanup-legacy")
    settings = data / "archive.toml"
    toml = settings.read_text(encoding="utf-8").replace("retention = 1 ", "retention = 2 ", 1)
    settings.write_text(toml + demo.REPLICA_SETTINGS, encoding="utf-8")
    cli("replicate")
    resources = {"catalog": CatalogResource(settings=SettingsResource(data_dir=str(data)))}
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        added = demo.register_days(instance, resources)
    assert added.get("snapshot_days") == days, added
    # The busiest prefix (its partition shows a count the catalog can be compared with) and
    # the last one (its neighbour in the range is not materialized: two one-prefix runs).
    per_prefix = referenced_blobs_per_prefix(data)
    busiest = max(sorted(per_prefix), key=per_prefix.__getitem__)
    prefixes = sorted({busiest, "ff"} if busiest != "ff" else {"00", "ff"})
    return DemoData(data, data / "dagster", snapshot_days=days, hash_prefixes=prefixes)


def referenced_blobs_per_prefix(data: Path) -> Counter[str]:
    """Referenced blobs per two-digit hash prefix, as the data dir's catalog holds them."""
    catalog = Catalog.open(load_settings(data, environ=clean_environ()).catalog_url)
    try:
        with catalog.reading() as tx:
            hashes = tx.session.scalars(select(Blob.sha256).where(Blob.ref_count > 0)).all()
    finally:
        catalog.close()
    return Counter(sha[:2] for sha in hashes)


def _demo_script() -> ModuleType:
    """scripts/demo.py as a module (a script, not a package): its archive and replica."""
    spec = importlib.util.spec_from_file_location("archive_demo", ROOT / "scripts" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
