"""`archive-pipelines crawls list | queue NAME | show CRAWL_ID`, run as a person runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.crawls.requests import claim_crawl, finish_crawl
from archive_pipelines.settings import load_settings
from tests.helpers.cli import run_cli
from tests.helpers.crawl_definitions import data_dir_defining

DEFINITIONS = """
[[crawls]]
name = "docs-weekly"
seeds = ["http://docs.test/", "http://docs.test/b"]
cadence = "@weekly"

[[crawls]]
name = "by-hand"
seeds = ["http://hand.test/"]
"""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return data_dir_defining(tmp_path / "data", DEFINITIONS)


def test_queue_list_and_show_a_crawl(data: Path) -> None:
    listed = run_cli("--data-dir", str(data), "crawls", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["docs-weekly", "@weekly", "http://docs.test/", "http://docs.test/b"]
    assert lines[1].split() == ["by-hand", "by", "hand", "http://hand.test/"]
    assert "0 crawl(s)" in listed.stdout

    queued = run_cli("--data-dir", str(data), "crawls", "queue", "docs-weekly")
    assert queued.returncode == 0, queued.stderr
    first, status = queued.stdout.splitlines()
    crawl_id = first.removeprefix("queued crawl ")
    assert crawl_id.startswith("docs-weekly-")
    assert status.startswith("queued; no crawler has taken it yet; no crawler has ever run")

    catalog = Catalog.open(load_settings(data, environ={}).catalog_url)
    taken = claim_crawl(catalog, worker="host:9")
    assert taken is not None and taken.crawl_id == crawl_id
    assert finish_crawl(catalog, taken.id, worker="host:9", state="finished",
                        outcome={"pages": 2, "new_bodies": 2, "stopped_because": "nothing left"})
    catalog.engine.dispose()

    shown = run_cli("--data-dir", str(data), "crawls", "show", crawl_id)
    assert shown.returncode == 0, shown.stderr
    assert f"crawl_id      {crawl_id}" in shown.stdout
    assert "state         finished: nothing left" in shown.stdout
    assert "pages         2" in shown.stdout and "crawler       host:9 (attempts: 1)" in shown.stdout
    assert "requested_by  command line (" in shown.stdout
    as_json = json.loads(run_cli("--data-dir", str(data), "crawls", "show", crawl_id,
                                 "--json").stdout)
    assert as_json["state"] == "finished" and as_json["new_bodies"] == 2
    assert as_json["definition"]["seeds"] == ["http://docs.test/", "http://docs.test/b"]

    after = json.loads(run_cli("--data-dir", str(data), "crawls", "list", "--json").stdout)
    assert [c["crawl_id"] for c in after["crawls"]] == [crawl_id]
    assert [d["name"] for d in after["definitions"]] == ["docs-weekly", "by-hand"]
    only = run_cli("--data-dir", str(data), "crawls", "list", "--name", "by-hand")
    assert "0 crawl(s) of by-hand" in only.stdout


@pytest.mark.parametrize(("args", "status", "message"), [
    (["crawls", "queue", "nope"], 2,
     "no crawl definition is named 'nope' in {data}/archive.toml (defined: docs-weekly, by-hand)"),
    (["crawls", "show", "docs-weekly-20250101T000000-9"], 1,
     "no crawl has the crawl_id 'docs-weekly-20250101T000000-9'"),
])
def test_a_bad_name_or_id_is_one_clear_line(data: Path, args: list[str], status: int,
                                            message: str) -> None:
    result = run_cli("--data-dir", str(data), *args)
    assert result.returncode == status
    assert message.format(data=data) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_bad_definition_in_the_file_is_named(data: Path) -> None:
    (data / "archive.toml").write_text('[[crawls]]\nname = "x"\nseeds = ["ftp://x.test/"]\n')
    result = run_cli("--data-dir", str(data), "crawls", "list")
    assert result.returncode == 2
    assert "`crawls.'x'.seeds`: 'ftp://x.test/' is not an http:// or https:// URL" in result.stderr
