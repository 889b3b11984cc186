"""Each command imports only what it needs: the CLI runs in a fresh interpreter and reports
the modules it loaded (`sys.modules`, never timings). Every call of `archive-pipelines`
pays for what it imports, `--help` included; boto3, Alembic and the crawl compaction were
~1.5 s of CPU that `status` and `verify` never use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the CLI in-process, then prints the exit status and every module loaded, last line.
PROBE = """
import json, sys
from archive_pipelines.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
# Never needed to read the catalog (a SQLite one here) or the primary store.
NOT_FOR_STATUS_OR_VERIFY = ("boto3", "botocore", "alembic", "dagster",
                            "sqlalchemy.dialects.postgresql",
                            "archive_pipelines.captures.compaction",
                            "archive_pipelines.replication", "archive_pipelines.migration")
# `--help` lists the commands from their registered summaries: no command module, no domain.
NOT_FOR_HELP = (*NOT_FOR_STATUS_OR_VERIFY, "sqlalchemy", "pydantic",
                "archive_pipelines.catalog", "archive_pipelines.settings",
                "archive_pipelines.cli.status_command")


def loaded_modules(*args: str) -> set[str]:
    """The modules `archive-pipelines ARGS...` loaded, in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0, done
    return set(report["modules"])


def _among(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir made by `init`, which does need Alembic (it migrates the catalog): that
    the probe sees it shows that it sees modules imported once a command is chosen."""
    data = tmp_path_factory.mktemp("imports") / "data"
    modules = loaded_modules("--data-dir", str(data), "init")
    assert "alembic" in modules and "archive_pipelines.cli.init_command" in modules
    return data


def test_help_imports_no_command() -> None:
    assert _among(loaded_modules("--help"), NOT_FOR_HELP) == []


@pytest.mark.parametrize("command", ["status", "verify"])
def test_status_and_verify_import_neither_s3_nor_alembic_nor_other_commands(
        data_dir: Path, command: str) -> None:
    modules = loaded_modules("--data-dir", str(data_dir), command)
    assert f"archive_pipelines.cli.{command}_command" in modules
    assert _among(modules, NOT_FOR_STATUS_OR_VERIFY) == []
    others = {"archive_pipelines.cli.ingest_command", "archive_pipelines.cli.scrub_command",
              "archive_pipelines.cli.captures_command", "archive_pipelines.cli.update_command"}
    assert modules & others == set()
