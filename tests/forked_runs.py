"""`python -m` runs of the crash and outage tests in a fork of a ForkServer, as subprocess.run
would make them: from the repository root, without the developer's catalog, Redis or data dir."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from archive_testkit.forkserver import ForkServer

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")


def run(server: ForkServer, args: list[str]) -> subprocess.CompletedProcess[str]:
    """subprocess.run(args, capture_output=True, text=True) in a fork of `server`."""
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    return server.run(args, cwd=ROOT, env=env, timeout=120)
