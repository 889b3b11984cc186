"""Subprocess body: `python -m tests.migration.run_steps DATA_DIR import|migrate` prints a JSON report.

Used to run the import or migration with fewer privileges (without CAP_DAC_OVERRIDE root
obeys file modes, so permission errors are real).
"""

import dataclasses
import json
import sys
from pathlib import Path

from archive_pipelines.migration import import_orphans, migrate_batch, next_migration_batches
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage


def main() -> None:
    storage = open_storage(Settings(data_dir=Path(sys.argv[1])))
    if sys.argv[2] == "import":
        report = dataclasses.asdict(import_orphans(storage.catalog, storage.layout))
    else:
        batches, _cursor = next_migration_batches(storage.catalog, cursor="", batch_size=100, max_batches=100)
        totals = {"processed": 0, "migrated": 0, "failed": 0, "errors": []}
        for batch in batches:
            result = migrate_batch(storage.catalog, storage.primary, storage.views,
                                   work=storage.work, layout=storage.layout, snapshot_ids=batch)
            for key in ("processed", "migrated", "failed"):
                totals[key] += getattr(result, key)
            totals["errors"] += result.errors
        report = totals
    print(json.dumps(report))


if __name__ == "__main__":
    main()
