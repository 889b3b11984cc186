"""`python -m archive_testkit.testweb`, as the benchmark runs it: a separate process."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from archive_testkit.testweb import TestWebConfig, read_jsonl, render_page, serve_in_subprocess
from archive_testkit.testweb.cli import build_parser, config_to_args
from tests.testkit.testweb.web_client import SMALL, fetch


@pytest.mark.unit
def test_every_config_field_round_trips_through_the_flags() -> None:
    options = build_parser().parse_args(config_to_args(SMALL))
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(TestWebConfig)}
    assert TestWebConfig(**fields) == SMALL
    assert config_to_args(TestWebConfig()) == []
    assert "--latency-ms" in config_to_args(TestWebConfig(latency_ms=100))


def test_cli_serves_until_terminated_and_writes_its_log(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    with serve_in_subprocess(SMALL, log_path=log_path) as process:
        page = fetch(process.port, "http://site0000.test/s1/p1.html")
        assert page.body == render_page(SMALL, "site0000.test", "/s1/p1.html")
        by_header = {"Host": "site0000.test:8080"}
        raw = fetch(process.port, f"{process.base_url}/robots.txt", headers=by_header)
        assert raw.status == 200
        cpu = process.cpu_seconds()
        assert cpu is None or cpu > 0
    assert process.process.returncode == 0  # SIGTERM is a clean shutdown
    records = read_jsonl(log_path)
    assert [(r.host, r.path_qs, r.status) for r in records] == [
        ("site0000.test", "/s1/p1.html", 200),
        ("site0000.test", "/robots.txt", 200),
    ]


def test_cli_prints_the_bound_port_as_json() -> None:
    args = [sys.executable, "-m", "archive_testkit.testweb", "--port", "0", "--hosts", "3"]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        ready = json.loads(child.stdout.readline())
        child.terminate()
        _, errors = child.communicate(timeout=10)
    assert ready["hosts"] == 3 and ready["port"] > 0
    assert child.returncode == 0
    assert "served 0 requests" in errors
