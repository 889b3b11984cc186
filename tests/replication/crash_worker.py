"""A replication worker process for the kill -9 test.

    python -m tests.replication.crash_worker SETTINGS.json RETENTION

Runs director ticks and worker batches until a full cycle finds nothing to do, printing
`batch` before each batch so the test can kill it mid-copy, and `done` at the end.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

from archive_pipelines.replication import ReplicaSet, archive_batch, plan_batches
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage


def main(settings_path: str, retention: int) -> None:
    settings = Settings.model_validate_json(Path(settings_path).read_text())
    storage = open_storage(settings)
    replicas = ReplicaSet.open(storage.catalog, storage.settings)
    max_age = timedelta(0)  # a killed predecessor's "ongoing" rows must not block us
    cursor = 0
    while True:
        tick = plan_batches(storage.catalog, replicas, retention=retention, max_age=max_age,
                            batch_size=8, cursor=cursor, max_batches=4)
        for batch in tick.batches:
            print("batch", flush=True)
            archive_batch(storage.catalog, replicas, batch, retention=retention, max_age=max_age,
                          width=4, raise_on_failure=False)
        cursor = tick.next_cursor
        if tick.wrapped and not tick.batches:
            print("done", flush=True)
            return


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
