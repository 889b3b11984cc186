"""Running the CLI as a person does: a subprocess of `python -m archive_pipelines.cli.main`."""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI with `args` (without the developer's DATABASE_URL, data dir and Redis)."""
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    full_env.update(env or {})
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=full_env,
                          timeout=120)
