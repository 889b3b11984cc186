"""`init`: create the data dir's layout and migrate the catalog, in O(1) whatever archive/ holds (no scan)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import MetadataValue
from archive_pipelines.datadir.data_dir import VIEW_ROOTS, DataDir
from archive_pipelines.settings import Settings, render_default_toml

# How many archive/ entries init may look at for its hint: bounded, never a full scan.
HINT_SAMPLE = 200

DAGSTER_YAML = """\
# Dagster instance for archive-pipelines' embedded default (written by `init`).
telemetry:
  enabled: false
storage:
  sqlite:
    base_dir: {base_dir}
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
concurrency:
  runs:
    max_concurrent_runs: 4
  pools:
    # One step at a time per pool. The one pool, blob_store, holds gc and every step that
    # writes blobs or their references (snapshots, blobs, captures, the migration and
    # adoption jobs): gc never runs while they write; they take turns among themselves.
    default_limit: 1
# The freshness daemon: crawl_segments, captures and replica_copies turn WARN, then FAIL,
# when no new data arrived within their windows.
freshness:
  enabled: true
"""


@dataclass
class InitReport:
    """What `init` created, wrote and migrated, and a sample of folders it does not know."""

    data_dir: Path
    created_folders: list[str] = field(default_factory=list)
    wrote_settings: bool = False
    wrote_dagster_yaml: bool = False
    dagster_yaml_without_pools: bool = False  # kept as it was, but it sets no pool limit
    schema_before: str | None = None
    schema_after: str = ""
    unknown_legacy_sample: int = 0
    sample_truncated: bool = False

    @property
    def hint(self) -> str | None:
        if not self.unknown_legacy_sample:
            return None
        count = f"at least {self.unknown_legacy_sample}" if self.sample_truncated else str(
            self.unknown_legacy_sample)
        return (f"archive/ holds {count} folder(s) the catalog does not know; adopt them with "
                "`archive-pipelines update --import-orphans` (or the import_orphans_job)")

    @property
    def pools_hint(self) -> str | None:
        """What to add to a dagster.yaml written before the blob_store pool (init keeps it)."""
        if not self.dagster_yaml_without_pools:
            return None
        return ("dagster/dagster.yaml sets no concurrency pool limit: gc may run while a run "
                "writes blobs; add `concurrency: {pools: {default_limit: 1}}` (and move "
                "run_coordinator's max_concurrent_runs to `concurrency: {runs: ...}`)")

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"schema": self.schema_after, "migrated": self.schema_before != self.schema_after,
                "created_folders": len(self.created_folders),
                "unknown_legacy_folders_sampled": self.unknown_legacy_sample}

    def log_lines(self) -> list[str]:
        """What a run log says: the schema, and what was created or written."""
        schema = (f"catalog migrated from {self.schema_before or 'empty'} to {self.schema_after}"
                  if self.schema_before != self.schema_after
                  else f"catalog already at {self.schema_after}")
        wrote = [name for name, done in (("archive.toml", self.wrote_settings),
                                         ("dagster/dagster.yaml", self.wrote_dagster_yaml)) if done]
        line = (f"data dir {self.data_dir}: {schema}; {len(self.created_folders)} folder(s) "
                f"created")
        if wrote:
            line += f"; wrote {', '.join(wrote)}"
        return [line]


def initialize(settings: Settings) -> InitReport:
    """Create the layout, write defaults that are absent, migrate the catalog."""
    layout = DataDir(settings.data_dir)
    report = InitReport(data_dir=layout.root)
    _ensure_writable_root(layout.root)
    for folder in layout.folders():
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            report.created_folders.append(folder.name)
    if not layout.settings_file.exists():
        write_atomically(layout.settings_file, render_default_toml())
        report.wrote_settings = True
    dagster_yaml = layout.dagster_home / "dagster.yaml"
    if not dagster_yaml.exists():
        write_atomically(dagster_yaml, DAGSTER_YAML.format(base_dir=layout.dagster_home))
        report.wrote_dagster_yaml = True
    else:
        report.dagster_yaml_without_pools = "default_limit" not in dagster_yaml.read_text(
            encoding="utf-8")
    catalog = Catalog.open(settings.catalog_url,
                           busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)
    try:
        report.schema_before, report.schema_after = catalog.upgrade()
        sample, truncated = _sample_legacy_folders(layout.archive)
        if sample:
            known = catalog.snapshots.known_timestamps(sample)
            report.unknown_legacy_sample = len(set(sample) - known)
            report.sample_truncated = truncated
    finally:
        catalog.close()
    return report


def _ensure_writable_root(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise DataDirError(f"data dir {root} exists and is not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(f"data dir {root} cannot be created: {exc.strerror}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise DataDirError(f"data dir {root} is not writable")


def _sample_legacy_folders(archive: Path) -> tuple[list[str], bool]:
    """Up to HINT_SAMPLE names of legacy-looking folders in archive/ (scandir, no sort)."""
    names: list[str] = []
    seen = 0
    try:
        with os.scandir(archive) as entries:
            for entry in entries:
                seen += 1
                if seen > HINT_SAMPLE:
                    return names, True
                if entry.name in VIEW_ROOTS or entry.name.startswith("."):
                    continue
                if _looks_like_timestamp(entry.name):
                    names.append(entry.name)
    except FileNotFoundError:
        pass
    return names, False


def _looks_like_timestamp(name: str) -> bool:
    head, _, tail = name.partition(".")
    return head.isdigit() and (tail == "" or tail.isdigit())


def write_atomically(path: Path, text: str) -> None:
    """Write a small text file via temp + fsync + rename: never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
