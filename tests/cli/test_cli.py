"""The CLI as a person runs it: a subprocess, its output and exit status."""

import threading
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from archive_pipelines.cli.group_runner import run_group
from archive_pipelines.cli.main import cli
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.file_workers import FileWorkers
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.cli import run_cli


def test_help_lists_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "init" in result.stdout and "status" in result.stdout


def test_init_then_status(tmp_path: Path) -> None:
    data = tmp_path / "data"
    init = run_cli("--data-dir", str(data), "init")
    assert init.returncode == 0, init.stderr
    assert "schema" in init.stdout and (data / "archive.toml").exists()
    status = run_cli("--data-dir", str(data), "status")
    assert status.returncode == 0, status.stderr
    assert "snapshots       0" in status.stdout


def test_status_before_init_says_what_to_do(tmp_path: Path) -> None:
    result = run_cli("--data-dir", str(tmp_path), "status")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"archive-pipelines: error: {tmp_path} is not an initialized data dir (no archive.toml): "
        f"run `archive-pipelines --data-dir {tmp_path} init`"]
    assert not any(tmp_path.iterdir())  # nothing written


# Every command but init, with the arguments it needs.
COMMANDS = [["status"], ["verify"], ["gc"], ["gc", "--dry-run"], ["update"],
            ["update", "--import-orphans"], ["replicate"], ["replication-status"],
            ["rebuild-views"], ["migrate-to-cas"], ["migrate-to-cas", "--dry-run"],
            ["ingest", "--url", "https://example.com/", "wget", "SITE"]]


def _with_site(command: list[str], tmp_path: Path) -> list[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "index.html").write_text("<html>hi</html>")
    return [str(site) if arg == "SITE" else arg for arg in command]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_missing_data_dir_names_init_and_nothing_is_created(tmp_path: Path,
                                                             command: list[str]) -> None:
    missing = tmp_path / "no" / "such dir"
    done = run_cli("--data-dir", str(missing), *_with_site(command, tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"archive-pipelines: error: there is no data dir at {missing}: run "
        f"`archive-pipelines --data-dir '{missing}' init` to create one"]
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_data_dir_without_catalog_names_init_and_nothing_is_created(
        tmp_path: Path, command: list[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text("")
    done = run_cli("--data-dir", str(data), *_with_site(command, tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"archive-pipelines: error: data dir {data} has no catalog ({data / 'catalog.sqlite3'} "
        f"does not exist): run `archive-pipelines --data-dir {data} init`"]
    assert [p.name for p in data.iterdir()] == ["archive.toml"]


@pytest.mark.parametrize(
    ("toml", "env", "expected"),
    [
        ("[catalog\n", {}, "not valid TOML"),
        ("[catalog]\nbogus = 1\n", {}, "unknown setting `catalog.bogus`"),
        ("", {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}, "is unreachable"),
        ("", {"DATABASE_URL": "nosuchdb://x"}, "is not valid"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, toml: str, env: dict[str, str],
                                     expected: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(toml)
    result = run_cli("--data-dir", str(data), "init", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert not (data / "catalog.sqlite3").exists()  # nothing half-written


def test_not_writable_data_dir_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli("--data-dir", str(blocker / "data"), "init")
    assert result.returncode == 2
    assert "cannot be created" in result.stderr and "Traceback" not in result.stderr


def test_update_stops_its_worker_processes_before_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not left to garbage collection: a pool shut down without waiting while the process
    exits made the interpreter's exit hook write to the pool's closed wakeup pipe
    (`OSError: [Errno 9] Bad file descriptor` from concurrent/futures/process.py)."""
    for var in ("DATABASE_URL", "REDIS_URL", "ARCHIVE_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text("[storage]\ningest_processes = 2\n")
    initialize(load_settings(data))
    generate_collection(data, ReleaseMix(), snapshots=8)
    started: list[tuple[threading.Thread, list[BaseProcess]]] = []
    file_workers = FileWork.file_workers

    def spy(work: FileWork) -> FileWorkers:
        workers = file_workers(work)
        pool = workers._pool
        if pool._executor_manager_thread is not None and pool._processes:
            started.append((pool._executor_manager_thread, list(pool._processes.values())))
        return workers

    monkeypatch.setattr(FileWork, "file_workers", spy)
    assert run_group(cli, "archive-pipelines", ["--data-dir", str(data), "update"]) == 0
    assert started, "the migration did not use the worker processes"
    for manager, processes in started:
        assert not manager.is_alive()
        assert not any(process.is_alive() for process in processes)
