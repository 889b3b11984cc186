"""Subprocess body, deliberately without a `__main__` guard: a multi-batch ingest whose
worker processes must not re-run this script (each run appends a line to argv[2])."""

import sys
from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, StorageSettings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from tests.helpers.storage import add_snapshot

with open(sys.argv[2], "a") as runs:
    runs.write("ran\n")
settings = Settings(data_dir=Path(sys.argv[1]),
                    storage=StorageSettings(ingest_processes=2, ingest_batch_size=2))
initialize(settings)
storage = open_storage(settings)
report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                          snapshot_id=add_snapshot(storage), extractor="wget",
                          directory=Path(sys.argv[3]), batch_size=2)
workers = storage.work.file_workers().pids()
storage.close()
print(report.files, len(report.errors), len(workers), flush=True)
