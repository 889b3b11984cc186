"""`frontier-service run --browser ...`: its options' one-line errors (Chromium missing too),
the health endpoint's browser counts, and SIGTERM with page loads under way: a clean drain,
exit 0, Chromium gone."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from archive_testkit.testweb import TestWeb
from archive_testkit.testweb.js_pages import INDEX
from frontier_service.archiving import iter_records
from frontier_service.cli import main
from tests.frontier_service.service.cli_runs import HOSTS, finish, healthz, metric, start
from tests.helpers.chromium import chromium_browsers

HOST = HOSTS[0]


@pytest.mark.parametrize(("args", "message"), [
    (["--browser-domain", "a.test"], "--browser-domain 'a.test': expected NAME=MODE"),
    (["--browser-domain", "a.test=sometimes"], "expected NAME=MODE with MODE one of never"),
    (["--browser", "auto", "--browser-contexts", "0"], "`browser_contexts` must be at least 1"),
    (["--browser", "auto", "--browser-samples", "-1"], "`browser_samples` must not be negative"),
    (["--browser", "always", "--browser-page-timeout", "0"], "must be positive"),
])
def test_bad_browser_options_are_one_clear_line(tmp_path: Path, redis_url: str, args: list[str],
                                                message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(tmp_path), "--redis-url", redis_url, "run", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


@pytest.mark.parametrize("mode", ["auto", "always"])
def test_a_browser_crawl_without_chromium_is_one_clear_line(
        tmp_path: Path, redis_url: str, mode: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CHROMIUM", str(tmp_path / "no-chromium"))
    args = ["--data-dir", str(tmp_path), "--redis-url", redis_url, "run", "--browser", mode,
            "--seed", "http://a.test/"]
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is not an executable Chromium" in lines[0], lines
    assert not (tmp_path / "sessions").exists()  # refused before anything started


def test_sigterm_with_page_loads_under_way_drains_and_closes_chromium(
        web: TestWeb, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    data = tmp_path / "data"
    process, port = start([
        "--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name, "run",
        "--host-map", f"*.test=127.0.0.1:{web.port}", "--allow-network", "127.0.0.0/8",
        "--allowed-domain", HOST, "--seed", f"http://{HOST}{INDEX}", "--max-depth", "3",
        "--min-delay", "0.05", "--browser", "always", "--browser-contexts", "2",
        "--progress-seconds", "1", "--loop", "asyncio", "--exit-when-idle", "0"])
    try:
        browsers: list[psutil.Process] = []
        for _ in range(600):
            assert process.poll() is None, process.communicate()[1][-3000:]
            loaded = metric(port, "browser_pages_total")
            if loaded is not None and loaded >= 2:
                browsers = chromium_browsers(psutil.Process(process.pid))
                break
            time.sleep(0.1)
        assert browsers, "no page was loaded in Chromium"
        health = healthz(port)
        assert health["browser"]["pages"] >= 2 and health["browser"]["restarts"] == 0  # type: ignore[index]
        process.send_signal(signal.SIGTERM)
        code, summary, err = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, err[-3000:]
    assert "stopping (SIGTERM)" in err and summary["stopped"] == "SIGTERM"
    assert "Traceback" not in err, err[-3000:]
    _gone, alive = psutil.wait_procs(browsers, timeout=5)
    assert not alive, alive  # Chromium closed with the crawl
    records = [r for r in iter_records(data / "sessions") if r["requests"]]
    assert records and any("browser" in r for r in records)
    assert len(records) == int(str(summary["pages"]))
