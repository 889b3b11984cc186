"""The data directory: its layout, and `init`."""

from archive_pipelines.datadir.init import InitReport, initialize
from archive_pipelines.datadir.layout import DataDir

__all__ = ["DataDir", "InitReport", "initialize"]
