"""The data directory: its layout, `init`, and the checks commands make before using it."""

from archive_pipelines.datadir.check import require_data_dir, require_initialized
from archive_pipelines.datadir.data_dir import DataDir
from archive_pipelines.datadir.initialize import InitReport, initialize

__all__ = ["DataDir", "InitReport", "initialize", "require_data_dir", "require_initialized"]
