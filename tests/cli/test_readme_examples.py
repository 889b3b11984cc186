"""The README's command examples run as written: each shell block marked
`<!-- cli-example ... -->` is run line by line against a data dir holding a small crawl of
example.org (the session and body hash the README names), and every command exits 0 with
output. No network: the crawl's segment is written here, as the crawler writes one."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from tests.helpers.cli import run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
MARK = "<!-- cli-example"
SESSION = "61ccb46a-a3a8-44ec-9ea5-bb438d85a450"
# The about page's body: its sha256 starts 7ba79e (the README's short hash).
ABOUT = b"<html><title>About</title>example.org 19513513</html>\n"
HOME = b"<html><title>Example</title><a href=/about>about</a></html>\n"
FETCHED = 1_793_613_600.0  # 2026-11-02T10:00:00Z: inside the README's --from/--to


def marked_blocks(text: str) -> list[list[str]]:
    """The command lines of each ```sh block right after a cli-example mark."""
    blocks = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if line.startswith(MARK):
            assert lines[number + 1] == "```sh", f"README line {number + 2}: no ```sh after the mark"
            end = lines.index("```", number + 2)
            blocks.append([command for command in lines[number + 2:end] if command.strip()])
    return blocks


def unmarked_runnable_blocks(text: str) -> list[str]:
    """```sh blocks of archive-pipelines commands with no placeholders ([...], A|B, URL)
    that carry no mark: they would go untested."""
    found = []
    for match in re.finditer(r"(?m)^(.*)\n```sh\n(.*?)^```$", text, re.S):
        before, body = match.group(1), match.group(2)
        commands = [line for line in body.splitlines() if line.strip()]
        if before.startswith(MARK) or not commands:
            continue
        if all(line.startswith("archive-pipelines ") and not re.search(r"[\[|]|\b[A-Z]{2,}\b",
                                                                           line.split("#")[0])
               for line in commands):
            found.append(body)
    return found


def record(url: str, body: bytes, sha: str, offset: float) -> dict[str, object]:
    """One page record as the crawler writes it (frontier_service.archiving.page_record)."""
    at = round(FETCHED + offset, 3)
    return {"session_id": SESSION, "page_url": url, "timestamp": at,
            "navigation_id": f"nav-{offset:.0f}", "depth": 0, "final_url": url,
            "requests": [{"request_id": f"req-{offset:.0f}", "timestamp": at, "method": "GET",
                          "url": url, "request_headers": [["User-Agent", "test"]],
                          "request_body_hash": None, "request_body_size": 0,
                          "response": {"status_code": 200,
                                       "headers": [["Content-Type", "text/html"]],
                                       "body_hash": f"sha256:{sha}", "body_size": len(body),
                                       "body_type": "text/html", "body_truncated": False},
                          "redirects": [], "error": None, "elapsed_s": 0.01}],
            "redirects": [], "error": None}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A data dir `init` made, with one closed crawl segment of example.org whose bodies
    are in the primary store (as the crawler leaves them), not yet ingested."""
    data = tmp_path_factory.mktemp("readme") / "data"
    settings = Settings(data_dir=data)
    initialize(settings)
    storage = open_storage(settings)
    try:
        lines = []
        for offset, (url, body) in enumerate((("https://example.org/", HOME),
                                              ("https://example.org/about", ABOUT))):
            put = storage.primary.store.put_bytes(body)
            lines.append(json.dumps(record(url, body, put.sha256, offset)))
    finally:
        storage.close()
    folder = data / "sessions" / "2026-11-02" / SESSION
    folder.mkdir(parents=True)
    (folder / "20261102T100000000000Z_000001.jsonl").write_text("\n".join(lines) + "\n")
    return str(data)


@pytest.mark.unit
def test_the_readme_marks_every_runnable_block() -> None:
    text = README.read_text()
    assert len(marked_blocks(text)) >= 2
    assert unmarked_runnable_blocks(text) == []


def test_each_marked_command_runs_as_written(data_dir: str) -> None:
    for block in marked_blocks(README.read_text()):
        for line in block:
            words = shlex.split(line, comments=True)
            assert words[0] == "archive-pipelines", line
            done = run_cli("--data-dir", data_dir, *words[1:])
            assert done.returncode == 0, (line, done.stdout, done.stderr)
            assert done.stdout.strip(), line
            if words[1] == "captures":
                assert "0 capture(s)" not in done.stdout and '"captures": []' not in done.stdout
