"""The command line: help, one-line errors, SIGTERM drains, kill -9 resumes."""

from __future__ import annotations

import json
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
from tests.helpers.crawls import delete_keys


@pytest.mark.unit
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
    (["run", "--max-assets-per-page", "-1"], "`max_assets_per_page` must not be negative"),
    (["run", "--host-map", "nonsense"], "expected NAME=IP[:PORT]"),
])
def test_bad_input_is_one_clear_line(tmp_path: Path, redis_url: str, args: list[str],
                                     message: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    assert main(["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url, *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def seed(data: Path, redis_url: str, *args: str) -> int:
    return main(["--data-dir", str(data), "--redis-url", redis_url, "seed", *args])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


def test_seed_takes_allow_network_like_run(data: Path, redis_url: str, crawl_name: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert seed(data, redis_url, "--crawl-name", crawl_name, "http://127.0.0.1:8080/") == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "frontier-service: error: bad seed URL 'http://127.0.0.1:8080/': out of scope "
        "(127.0.0.1 is loopback; list a network holding it with --allow-network to crawl it)"]
    assert seed(data, redis_url, "--crawl-name", crawl_name, "--allow-network", "127.0.0.0/8",
                "http://127.0.0.1:8080/", "http://0x7f000001:8080/a", "http://127.1:8080/b") == 0
    assert capsys.readouterr().out.strip() == "queued 3 URL(s); 0 already seen"


@pytest.mark.parametrize(("args", "message"), [
    (["--allow-network", "127.0.0.0/8", "http://169.254.169.254/"],
     "out of scope (169.254.169.254 is link-local/cloud metadata; list it exactly with "
     "--allow-network to crawl it)"),
    (["--allow-network", "0.0.0.0/0", "http://0xa9fea9fe/"], "is link-local/cloud metadata"),
    (["--allow-network", "127.0.0.0/8", "http://10.0.0.1/"], "10.0.0.1 is private"),
    (["--allow-network", "localhost", "http://127.0.0.1/"],
     "--allow-network / [crawl] allow_networks: 'localhost' is not an IP address or network"),
    (["--allow-network", "127.0.0.0/8", "--allowed-domain", "*.test", "http://127.0.0.1/"],
     "out of scope (domain not allowed: 127.0.0.1)"),
    (["--allow-network", "127.0.0.0/8", "--max-depth", "-1", "http://127.0.0.1/"],
     "`max_depth` must not be negative"),
    (["--host-map", "nonsense", "http://a.test/"], "expected NAME=IP[:PORT]"),
])
def test_seed_scope_refusals_are_one_clear_line(data: Path, redis_url: str, crawl_name: str,
                                                args: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert seed(data, redis_url, "--crawl-name", crawl_name, *args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_seed_with_the_metadata_address_listed_exactly(data: Path, redis_url: str, crawl_name: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert seed(data, redis_url, "--crawl-name", crawl_name, "--allow-network", "169.254.169.254",
                "http://169.254.169.254/latest/meta-data/") == 0
    assert "queued 1 URL(s)" in capsys.readouterr().out


def test_legacy_allow_private_means_loopback_only_and_says_so(
        data: Path, redis_url: str, crawl_name: str, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("frontier_service.service.crawler_settings._warned", set())
    assert seed(data, redis_url, "--crawl-name", crawl_name, "--allow-private",
                "http://127.0.0.1:8080/", "http://[::1]:8080/") == 0
    assert "queued 2 URL(s)" in capsys.readouterr().out
    assert ("--allow-private now allows loopback only (127.0.0.0/8 and ::1), no longer private, "
            "link-local or cloud metadata addresses; use --allow-network 127.0.0.0/8 instead"
            ) in caplog.text
    assert seed(data, redis_url, "--crawl-name", crawl_name, "--allow-private",
                "http://10.0.0.1/") == 2
    assert "10.0.0.1 is private" in capsys.readouterr().err
    assert seed(data, redis_url, "--crawl-name", crawl_name, "--allow-private",
                "http://169.254.169.254/") == 2
    assert "link-local/cloud metadata" in capsys.readouterr().err


@pytest.mark.unit
def test_allow_private_is_hidden_and_allow_network_shown(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("run", "seed"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--allow-network CIDR|IP" in out and "--allow-private" not in out
        assert "--allowed-domain" in out and "--host-map" in out and "--max-depth" in out
        assert "--crawl-name" in out
    assert main(["stats", "--help"]) == 0
    assert "--crawl-name" in capsys.readouterr().out


def test_crawl_name_after_the_command_wins(data: Path, redis_url: str, crawl_name: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    other = f"{crawl_name}-other"
    args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", other]
    try:
        assert main([*args, "seed", "--crawl-name", crawl_name, "http://a.example/"]) == 0
        capsys.readouterr()
        assert main([*args, "stats", "--json", "--crawl-name", crawl_name]) == 0
        assert json.loads(capsys.readouterr().out)["ready_domains"] == 1
        assert main([*args, "stats", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ready_domains"] == 0
    finally:
        delete_keys(redis_url, other)


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


@pytest.mark.unit
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
