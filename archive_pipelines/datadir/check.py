"""Checks that a data dir is there before a command reads or writes it (creating nothing).

Every command but `init` works on a data dir that `init` made: one that is missing, or has
no archive.toml or no SQLite catalog, is one clear line naming the `init` to run, instead
of an "unreachable catalog" or folders silently made in the wrong place.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.catalog import sqlite_file
from archive_pipelines.datadir.data_dir import DataDir
from archive_pipelines.settings import Settings


def init_command(root: Path) -> str:
    """The command that creates (or completes) the data dir `root`."""
    return f"archive-pipelines --data-dir {shlex.quote(str(root))} init"


def require_data_dir(root: Path) -> Path:
    """`root`, or DataDirError if there is no directory there."""
    if not root.exists():
        raise DataDirError(f"there is no data dir at {root}: run `{init_command(root)}` to "
                           "create one")
    if not root.is_dir():
        raise DataDirError(f"data dir {root} is not a directory")
    return root


def require_initialized(settings: Settings) -> Settings:
    """`settings`, or DataDirError if their data dir is missing or `init` never ran on it
    (no archive.toml, or no SQLite catalog file: opening one would create an empty one)."""
    layout = DataDir(require_data_dir(settings.data_dir))
    if not layout.settings_file.is_file():
        raise DataDirError(f"{layout.root} is not an initialized data dir (no archive.toml): "
                           f"run `{init_command(layout.root)}`")
    catalog = sqlite_file(settings.catalog_url)
    if catalog is not None and not catalog.is_file():
        raise DataDirError(f"data dir {layout.root} has no catalog ({catalog} does not exist): "
                           f"run `{init_command(layout.root)}`")
    return settings
