"""The data directory: its layout, `init`, and the checks commands make before using it."""

from archive_pipelines.datadir.check import require_data_dir, require_initialized
from archive_pipelines.datadir.init import InitReport, initialize
from archive_pipelines.datadir.layout import DataDir

__all__ = ["DataDir", "InitReport", "initialize", "require_data_dir", "require_initialized"]
