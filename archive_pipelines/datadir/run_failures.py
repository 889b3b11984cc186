"""Failed Dagster runs recorded where an operator looks: `logs/run-failures.jsonl` in the
data dir, one JSON object a line (appended; `tail` or `jq` it), besides Dagit's run page."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

FAILURES_FILE = "run-failures.jsonl"


@dataclass(frozen=True)
class RunFailure:
    """One failed run: which, when, launched by whom, and why (its failure message)."""

    run_id: str
    job_name: str
    failed_at: datetime
    launched_by: str
    message: str
    partition: str = ""

    def line(self) -> str:
        """The run log's line for it."""
        partition = f" (partition {self.partition})" if self.partition else ""
        return (f"run {self.run_id} of {self.job_name}{partition}, launched by "
                f"{self.launched_by or 'unknown'}, failed: {self.message}")


def record_run_failure(logs: Path, failure: RunFailure) -> Path:
    """Append `failure` to `logs/run-failures.jsonl` (created if absent); returns its path."""
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / FAILURES_FILE
    record = asdict(failure) | {"failed_at": failure.failed_at.isoformat()}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
    return path


def read_run_failures(logs: Path) -> list[RunFailure]:
    """Every failure recorded in `logs/run-failures.jsonl`, oldest first."""
    path = logs / FAILURES_FILE
    if not path.exists():
        return []
    failures = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            data["failed_at"] = datetime.fromisoformat(data["failed_at"])
            failures.append(RunFailure(**data))
    return failures
