"""Subprocess body for the crash test: ingest a tree, printing READY once started."""

import sys
from pathlib import Path

from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory


def main() -> None:
    data, src, snapshots = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
    storage = open_storage(Settings(data_dir=data))
    print("READY", flush=True)
    for sid in snapshots:
        for extractor in sorted(p.name for p in src.iterdir()):
            ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                             snapshot_id=sid, extractor=extractor, directory=src / extractor, batch_size=7)


if __name__ == "__main__":
    main()
