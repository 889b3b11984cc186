"""Subprocess body for the ingest crash test: `ingest-crawl --all` as the CLI runs it, which
kills itself (SIGKILL) just before its Nth step of one kind.

    python -m tests.captures.crash_ingest_crawl DATA_DIR KIND N

The steps and KINDs are `tests.storage.crash_cli`'s (`sql`, `file`, `none`); at a normal
exit it prints `steps sql=<count> file=<count>` after the CLI's output.
"""

from __future__ import annotations

import sys

from tests.storage import crash_cli


def main() -> None:
    data_dir, kind, kill_at = sys.argv[1], sys.argv[2], sys.argv[3]
    assert kind in ("sql", "file", "none")
    sys.argv = [sys.argv[0], kind, kill_at, "--data-dir", data_dir, "ingest-crawl", "--all"]
    crash_cli.main()


if __name__ == "__main__":
    main()
