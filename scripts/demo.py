"""`make demo`: run the main jobs end to end on embedded defaults and print what they did.

Each issue extends this script with its own step; every step prints a short report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MARKER = ".archive-pipelines-demo"


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(args: list[str], env: dict[str, str], *, quiet: bool = False) -> str:
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        raise SystemExit(f"demo step failed: {' '.join(args)}")
    if not quiet:
        sys.stdout.write(result.stdout)
    return result.stdout + result.stderr


def fresh_data_dir(path: Path) -> None:
    if path.exists():
        if not (path / MARKER).exists():
            raise SystemExit(f"{path} exists and is not a demo data dir; refusing to replace it")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / MARKER).write_text("created by make demo; safe to delete\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(ROOT / "demo-data"))
    args = parser.parse_args()
    data = Path(args.data_dir).resolve()
    started = time.monotonic()
    fresh_data_dir(data)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(data / "dagster"))
    cli = [str(BIN / "archive-pipelines"), "--data-dir", str(data)]

    step(f"init (embedded defaults: SQLite catalog, local stores) in {data}")
    run([*cli, "init"], env)

    step("init_job through Dagster: dagster job execute -m archive_pipelines.definitions -j init_job")
    output = run([str(BIN / "dagster"), "job", "execute", "-m", "archive_pipelines.definitions",
                  "-j", "init_job"], env, quiet=True)
    print("RUN_SUCCESS" if "RUN_SUCCESS" in output else "run did not report success")

    step("catalog status")
    run([*cli, "status"], env)

    print(f"\ndemo finished in {time.monotonic() - started:.1f}s; "
          f"open Dagit on this data dir with `make dev`")


if __name__ == "__main__":
    main()
