"""What a run's log says to a person: its INFO (and other) lines as stored on the instance,
the ones Dagit's run view and `dagster job execute` show."""

from __future__ import annotations

import logging

import dagster as dg


def log_lines(instance: dg.DagsterInstance, run_id: str, *, level: int = logging.INFO) -> list[str]:
    """The messages the run's code logged at `level` (Dagster's own events left out)."""
    return [entry.user_message for entry in instance.all_logs(run_id)
            if entry.level == level and not entry.is_dagster_event]
