"""How runs and definitions are labelled for the people who read Dagit: who launched a run,
the pool that keeps gc apart from the runs that write blobs, who owns the assets.

Plain strings (the domain imports no Dagster); the wiring hands them to Dagster.
"""

from __future__ import annotations

from typing import Literal

# Run tag: who launched the run. Sensors and schedules tag their RunRequests, `make demo`
# its runs; a cron line adds `--tags '{"archive/launched_by": "cli"}'` to `dagster job execute`.
LAUNCHED_BY = "archive/launched_by"
Launcher = Literal["sensor", "schedule", "demo", "cli"]

# Concurrency pool of gc and of every step that writes blobs or their references. The data
# dir's dagster.yaml (written by `init`) limits each pool to one step at a time, so gc never
# runs while an ingest, a migration or a captures run writes.
BLOB_STORE_POOL = "blob_store"

# Owners shown on every asset (Dagit's owner filter); a team, not a person.
OWNERS = ["team:archive-operators"]


def launched_by(launcher: Launcher, name: str = "") -> dict[str, str]:
    """The tags of a run launched by `launcher` (`name`: which sensor or schedule)."""
    return {LAUNCHED_BY: f"{launcher}:{name}" if name else launcher}
