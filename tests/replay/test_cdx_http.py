"""The CDX server over HTTP on real crawls of the test web: its lines agree with cdxj-indexer's
index of our WARC export of the same captures (a test-time validator); clients that page until
an error get every line once; both JSON forms; parameters through the query string; withdrawn
prefixes never answered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import CaptureScope, Catalog
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.settings import Settings
from archive_pipelines.warc.exporter import export_file
from archive_pipelines.warc.warc_info import WarcInfo
from archive_testkit.testweb import host_name
from archive_testkit.testweb.asset_pages import GALLERY
from tests.frontier_service.service.web import WEB
from tests.helpers.replay import RunningReplay, fetch, make_replayer, running_replay

HOST = host_name(WEB, 0)  # the crawled host of the `replay_data` fixture
GALLERY_URL = f"http://{HOST}{GALLERY}"
CDXJ_INDEXER = str(Path(sys.executable).parent / "cdxj-indexer")
EVERYTHING = f"url={HOST}/*"


def _lines(port: int, path: str) -> list[dict[str, str]]:
    answer = fetch(port, path)
    assert answer.status == 200, answer.text
    assert answer.header("Content-Type") == "text/x-ndjson"
    return [json.loads(line) for line in answer.text.splitlines()]


@pytest.fixture(scope="module")
def indexed(replay_data: Path, replay_catalog: Catalog,
            tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """cdxj-indexer's lines for a self-contained WARC export of every capture."""
    warc = tmp_path_factory.mktemp("cdx-export") / "all.warc.gz"
    store = open_store(Settings(data_dir=replay_data).primary_store, replay_data)
    report = export_file(warc, catalog=replay_catalog, store=store, data_dir=replay_data,
                         scope=CaptureScope(), info=WarcInfo(operator="tests", self_contained=True))
    assert report.responses > 10 and not report.problems
    done = subprocess.run([CDXJ_INDEXER, str(warc)], capture_output=True, text=True, check=True,
                          timeout=120)
    lines = []
    for line in done.stdout.splitlines():
        key, timestamp, fields = line.split(" ", 2)
        lines.append({"urlkey": key, "timestamp": timestamp, **json.loads(fields)})
    return lines


def test_lines_agree_with_cdxj_indexer_on_our_export(replay: RunningReplay,
                                                     indexed: list[dict[str, str]]) -> None:
    def seen(line: dict[str, str]) -> tuple[str, ...]:
        status = line.get("status", "-")
        # A redirect hop carries no body: we say "-", the export's record has an empty payload.
        digest = "-" if status.startswith("3") else line.get("digest", "-")
        return (line["urlkey"], line["timestamp"], line["url"], line.get("mime", "-"), status,
                digest)

    theirs = Counter(seen(line) for line in indexed
                     if line["urlkey"].startswith("test,") and "status" in line)
    ours = Counter(seen(line) for line in _lines(replay.port, f"/cdx?{EVERYTHING}&output=json"))
    assert ours == theirs
    assert {key[4][0] for key in ours} >= {"2", "3"}  # pages, assets and redirects alike


def test_paging_to_the_error_gives_every_line_once(replay: RunningReplay) -> None:
    whole = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}").text.splitlines()
    assert len(whole) > 20
    pages = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}&showNumPages=true&pageSize=7")
    assert pages.text == f"{-(-len(whole) // 7)}\n"
    walked: list[str] = []
    number = 0
    while True:
        answer = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}&pageSize=7&page={number}")
        if answer.status != 200:
            break
        walked += answer.text.splitlines()
        number += 1
    assert answer.status == 400 and "past the last page" in answer.text
    assert walked == whole and number == int(pages.text)


def test_the_internet_archive_json_and_query_parameters(replay: RunningReplay) -> None:
    rows = json.loads(fetch(replay.port, f"/cdx/search/cdx?url={GALLERY_URL}&output=json"
                            "&fl=timestamp,statuscode,mimetype&showDupeCount=true").body)
    assert rows[0] == ["timestamp", "statuscode", "mimetype", "dupecount"]
    assert len(rows) == 3 and [row[1:3] for row in rows[1:]] == [["200", "text/html"]] * 2
    assert [row[3] for row in rows[1:]] == ["0", "1"]  # the second crawl's page is the same bytes
    newest = fetch(replay.port, f"/cdx/search/cdx?url={GALLERY_URL}&limit=-1&fl=timestamp").text
    assert newest.strip() == rows[2][0]
    images = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}&fl=mimetype&collapse=urlkey"
                   f"&filter={quote('mimetype:image/.*')}").text.split()
    assert images and set(images) <= {"image/png", "image/jpeg", "image/gif", "image/svg+xml",
                                      "image/webp"}
    first = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}&limit=1&fl=timestamp").text.strip()
    closest = fetch(replay.port, f"/cdx/search/cdx?url={GALLERY_URL}&sort=closest"
                    f"&closest={first}&fl=timestamp&limit=1").text.strip()
    assert closest == rows[1][0]


@pytest.fixture(scope="module")
def withdrawn_replay(replay_data: Path, replay_catalog: Catalog) -> Iterator[RunningReplay]:
    withdrawn = Exclusions([f"http://{HOST}/assets/"])
    with running_replay(make_replayer(replay_data, replay_catalog, withdrawn=withdrawn)) as running:
        yield running


def test_withdrawn_prefixes_are_never_answered(replay: RunningReplay,
                                               withdrawn_replay: RunningReplay) -> None:
    every = fetch(replay.port, f"/cdx/search/cdx?{EVERYTHING}&fl=original").text.split()
    kept = fetch(withdrawn_replay.port, f"/cdx/search/cdx?{EVERYTHING}&fl=original").text.split()
    assert any("/assets/" in url for url in every)
    assert kept == [url for url in every if f"{HOST}/assets/" not in url] and kept
    asset = next(url for url in every if "/assets/" in url)
    assert fetch(withdrawn_replay.port, f"/cdx?url={quote(asset)}").status == 404
    assert fetch(withdrawn_replay.port, f"/cdx/search/cdx?url={quote(asset)}").body == b""
