"""The command line: help, one-line errors, SIGTERM drains, kill -9 resumes."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from archive_testkit.testweb import TestWeb
from frontier_service.archiving import iter_records
from frontier_service.cli import main
from tests.frontier_service.service.cli_runs import (
    cli,
    crawl_args,
    finish,
    healthz,
    metric,
    start,
    visited_queue,
    wait_for_pages,
)


@pytest.mark.parametrize("command", [[], ["run"], ["seed"], ["stats"]])
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    assert "Usage: frontier-service" in capsys.readouterr().out


def test_python_dash_m_runs_the_same_cli() -> None:
    done = cli("--help")
    assert done.returncode == 0 and "run" in done.stdout and "seed" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--redis-url", "redis://127.0.0.1:1/0", "stats"], "cannot reach Redis at redis://127.0.0.1:1/0"),
    (["seed", "ftp://example.com/x"], "bad seed URL 'ftp://example.com/x': unsupported scheme"),
    (["seed", "not a url"], "bad seed URL 'not a url'"),
    (["run", "--concurrency", "0"], "`concurrency` must be at least 1"),
    (["run", "--host-map", "nonsense"], "expected NAME=IP[:PORT]"),
])
def test_bad_input_is_one_clear_line(tmp_path: Path, redis_url: str, args: list[str],
                                     message: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    assert main(["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url, *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_an_unwritable_data_dir_is_one_clear_line(tmp_path: Path, redis_url: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = cli("--data-dir", str(blocker / "data"), "--redis-url", redis_url, "seed",
               "http://a.test/")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"frontier-service: error: data dir {blocker / 'data'} is not writable: Not a directory"]


def test_stats_on_a_missing_data_dir_is_one_clear_line_and_creates_nothing(
        tmp_path: Path, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no" / "data"
    assert main(["--data-dir", str(missing), "--redis-url", redis_url, "stats"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"frontier-service: error: there is no data dir at {missing}: run "
        f"`archive-pipelines --data-dir {missing} init` to create one"]
    assert not (tmp_path / "no").exists()


def test_stats_without_a_crawl_does_not_start_the_embedded_redis(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    assert main(["--data-dir", str(data), "stats"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"frontier-service: error: no crawl has run in data dir {data} ({data / 'redis'}, the "
        "embedded Redis, does not exist): nothing to show"]
    assert not any(data.iterdir())


def fetched_records(data_dir: Path) -> list[dict[str, object]]:
    return [r for r in iter_records(data_dir / "sessions") if r["requests"]]


def test_sigterm_drains_and_the_next_run_resumes_without_refetching(
        web: TestWeb, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    web.log.clear()
    data = tmp_path / "data"
    args = crawl_args(data, redis_url, crawl_name, web.port)
    process, port = start(args)
    wait_for_pages(process, port, 40)
    assert metric(port, "stopping") == 0 and healthz(port)["status"] == "ok"
    process.send_signal(signal.SIGTERM)
    code, first, err = finish(process)
    assert code == 0, err[-3000:]
    assert "stopping (SIGTERM)" in err and first["stopped"] == "SIGTERM"
    pages = int(str(first["pages"]))
    assert 40 <= pages == len(fetched_records(data))  # every page's record was flushed
    in_first_run = len(web.log)

    process, port = start([*args, "--exit-when-idle", "0.5"])
    code, second, err = finish(process)
    assert code == 0 and second["stopped"] == "frontier exhausted", err[-3000:]
    assert int(str(second["pages"])) > 0 and len(web.log) > in_first_run
    counts = Counter((r.host, r.path_qs) for r in web.log.records())
    assert max(counts.values()) == 1  # nothing fetched twice across the two runs
    urls = Counter(r["page_url"] for r in fetched_records(data))
    assert max(urls.values()) == 1 and sum(urls.values()) == pages + int(str(second["pages"]))


def test_kill_9_then_resume_converges(web: TestWeb, tmp_path: Path, redis_url: str,
                                      crawl_name: str) -> None:
    web.log.clear()
    data = tmp_path / "data"
    args = crawl_args(data, redis_url, crawl_name, web.port, "--lease-seconds", "1")
    process, port = start(args)
    wait_for_pages(process, port, 30)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    killed_at = len(web.log)

    process, port = start([*args, "--exit-when-idle", "1.5"])
    code, resumed, err = finish(process)
    assert code == 0 and resumed["stopped"] == "frontier exhausted", err[-3000:]
    assert len(web.log) > killed_at
    counts = Counter((r.host, r.path_qs) for r in web.log.records())
    assert sum(n - 1 for n in counts.values()) <= 16  # at most the fetches in flight at the kill

    queued = visited_queue(data, redis_url, crawl_name)
    # Every consumed URL has its page record: the killed run's came back from its journal.
    recorded = {str(r["page_url"]) for r in iter_records(data / "sessions")}
    assert recorded == set(queued)
    assert len(list((data / "sessions").glob("*/*"))) == 2  # both sessions wrote segments
