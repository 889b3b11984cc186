"""Run by test_file_workers: an ingest in a daemonic process (as a Celery prefork worker's
task runs), which multiprocessing forbids to start children."""

import multiprocessing
import sys
from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, StorageSettings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.file_workers import may_start_processes
from tests.helpers.storage import add_snapshot


def ingest(data: str, src: str) -> None:
    settings = Settings(data_dir=Path(data), storage=StorageSettings(ingest_processes=2))
    initialize(settings)
    storage = open_storage(settings)
    try:
        report = ingest_directory(storage.catalog, storage.primary, storage.views,
                                  work=storage.work, snapshot_id=add_snapshot(storage),
                                  extractor="wget", directory=Path(src), batch_size=3)
        print(report.files, len(report.errors), storage.work.ingest_processes,
              may_start_processes(), flush=True)
    finally:
        storage.close()
        storage.catalog.engine.dispose()


if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=ingest, args=sys.argv[1:3],
                                                         daemon=True)
    child.start()
    child.join()
    sys.exit(child.exitcode)
