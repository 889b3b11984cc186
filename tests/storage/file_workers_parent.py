"""Subprocess body: start a storage's worker processes, print their pids, then wait."""

import sys
import time
from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, StorageSettings
from archive_pipelines.storage.assembly import open_storage


def main() -> None:
    settings = Settings(data_dir=Path(sys.argv[1]), storage=StorageSettings(ingest_processes=2))
    initialize(settings)
    storage = open_storage(settings)
    workers = storage.work.file_workers()
    print(" ".join(str(pid) for pid in workers.pids()), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
