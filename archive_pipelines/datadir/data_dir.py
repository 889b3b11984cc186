"""Named paths inside the data directory, and the guard that keeps writes inside it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.archive_error import DataDirError

VIEW_ROOTS = ("by_domain", "by_date", "by_user", "by_timestamp")


@dataclass(frozen=True)
class DataDir:
    """The data directory's folders (blob store, views, crawl sessions, frontiers ...), relative to `root`."""

    root: Path

    @property
    def settings_file(self) -> Path:
        return self.root / "archive.toml"

    @property
    def cas(self) -> Path:
        return self.root / "cas"

    @property
    def archive(self) -> Path:
        return self.root / "archive"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def frontiers(self) -> Path:
        return self.root / "frontiers"

    @property
    def invalid(self) -> Path:
        return self.root / "invalid"

    @property
    def migrated(self) -> Path:
        """Legacy folders whose every file is in the store, until gc removes them."""
        return self.root / "migrated"

    @property
    def replicas(self) -> Path:
        return self.root / "replicas"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def redis(self) -> Path:
        return self.root / "redis"

    def folders(self) -> list[Path]:
        return [self.cas, self.archive, self.sessions, self.frontiers, self.invalid,
                self.replicas, self.logs, self.dagster_home]

    def inside(self, path: Path) -> Path:
        """`path` made absolute; a `DataDirError` if it would leave the data dir."""
        absolute = Path(os.path.abspath(self.root / path))
        root = Path(os.path.abspath(self.root))
        if absolute != root and root not in absolute.parents:
            raise DataDirError(f"{path}: refusing to write outside the data dir {root}")
        return absolute
