"""A data dir whose archive.toml defines crawls (`[[crawls]]`), initialized."""

from __future__ import annotations

from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import load_settings


def data_dir_defining(path: Path, definitions: str) -> Path:
    """`path` created with `definitions` as its archive.toml, then initialized."""
    path.mkdir()
    (path / "archive.toml").write_text(definitions)
    initialize(load_settings(path, environ={}))
    return path
