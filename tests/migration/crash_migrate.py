"""Subprocess body for the kill -9 test: migrate everything in small batches, READY first.

`python -m tests.migration.crash_migrate DATA_DIR store|retire` (`store`: files stored and
recorded, folders left in place; `retire`: the whole step).
"""

import sys
from pathlib import Path

from archive_pipelines.migration import migrate_batch, next_migration_batches
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage


def main() -> None:
    storage = open_storage(Settings(data_dir=Path(sys.argv[1])))
    retire = sys.argv[2] == "retire"
    print("READY", flush=True)
    cursor = ""
    while True:
        batches, cursor = next_migration_batches(storage.catalog, cursor=cursor, batch_size=4, max_batches=1)
        for batch in batches:
            migrate_batch(storage.catalog, storage.primary, storage.views,
                          work=storage.work, layout=storage.layout, snapshot_ids=batch, retire=retire)
        if not cursor:
            break


if __name__ == "__main__":
    main()
