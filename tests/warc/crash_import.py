"""Subprocess body for the import crash test: `archive-pipelines ARGS...` (an `import-warc`)
with batches of BATCH records, which kills itself (SIGKILL) just before its Nth step of one kind.

    python -m tests.warc.crash_import BATCH KIND N ARGS...

BATCH sets `archive_pipelines.warc.importer.BATCH_RECORDS` in this process only, so that a
small file spans many batches (the import reads it each time it closes a batch); the rerun
after a kill must use the same BATCH, as the same command would. The steps and KINDs are
`tests.storage.crash_cli`'s (`sql`, `file`, `sql:TEXT`, `none`); at a normal exit it prints
`steps sql=<count> file=<count>` after the CLI's output. With `CRASH_IMPORT_SPAN_BYTES` set,
any file is read in spans of that many bytes by the `[import] processes` workers (the steps
counted are this process's: the workers' file operations are not).
"""

from __future__ import annotations

import os
import sys

from archive_pipelines.warc import import_spans, importer
from tests.storage import crash_cli


def main() -> None:
    importer.BATCH_RECORDS = int(sys.argv[1])
    if span := os.environ.get("CRASH_IMPORT_SPAN_BYTES"):
        import_spans.SPAN_BYTES = int(span)
        import_spans.MIN_PARALLEL_BYTES = 0
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    crash_cli.main()


if __name__ == "__main__":
    main()
