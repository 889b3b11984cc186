from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.legacy.index_json import MAX_INDEX_BYTES, InvalidFolder, load_index
from tests.legacy.index_docs import TS, URL, invalid, loaded, result, v04, write

pytestmark = pytest.mark.unit


def test_a_04_index_parses_to_utc_dates_and_results(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04()))
    assert (index.url, index.timestamp, index.title) == (URL, TS, "A post")
    assert index.tags == ("news", "python")
    assert index.fs_version == "0.4"
    assert index.bookmarked == datetime.fromtimestamp(int(TS), UTC)
    assert index.updated == datetime(2020, 7, 2, 11, 47, tzinfo=UTC)
    dom = index.results["dom"][0]
    assert dom.output == "output.html" and dom.status == "succeeded"
    assert dom.cmd == ("chromium", "--dump-dom", URL)
    assert dom.start_ts == datetime(2020, 7, 2, 11, 46, 37, 906467, tzinfo=UTC)
    assert index.results["title"][0].output == "A post / part 1"  # text, not a path
    assert index.warnings == ()


@pytest.mark.parametrize("content", [[1, 2], "a string", 42, None, True])
def test_a_document_that_is_not_an_object_is_invalid(tmp_path: Path, content: Any) -> None:
    assert invalid(write(tmp_path / TS, content)).reason == "not_object"


@pytest.mark.parametrize(
    "data",
    [
        json.dumps(v04()).encode()[:150],  # truncated mid-write
        b"",
        b"\xff\xfe\x00garbage",
        b'{"url": "https://example.com", "timestamp": "1"} trailing',
        b"[" * 200_000 + b"]" * 200_000,  # nesting deep enough to exhaust recursion
    ],
)
def test_unparseable_json_is_invalid(tmp_path: Path, data: bytes) -> None:
    assert invalid(write(tmp_path / TS, data)).reason == "not_json"


def test_a_huge_index_is_refused_without_parsing(tmp_path: Path) -> None:
    folder = write(tmp_path / TS, b'{"url": "https://example.com/", "title": "')
    with open(folder / "index.json", "r+b") as handle:
        handle.truncate(MAX_INDEX_BYTES + 1)  # sparse: cheap to create
    assert invalid(folder).reason == "too_large"
    write(folder, v04(title="x" * 5000))
    assert load_index(folder, max_bytes=4096) == InvalidFolder(
        folder, "too_large", "index.json is larger than 4096 bytes"
    )


def test_missing_and_special_index_files(tmp_path: Path) -> None:
    empty = tmp_path / "1"
    empty.mkdir()
    assert invalid(empty).reason == "missing_index"
    target = write(tmp_path / "real", v04())
    linked = tmp_path / "2"
    linked.mkdir()
    (linked / "index.json").symlink_to(target / "index.json")
    assert invalid(linked).reason == "not_a_file"  # never followed
    fifo = tmp_path / "3"
    fifo.mkdir()
    os.mkfifo(fifo / "index.json")
    assert invalid(fifo).reason == "not_a_file"  # and no hang on open
    directory = tmp_path / "4"
    (directory / "index.json").mkdir(parents=True)
    assert invalid(directory).reason == "not_a_file"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "",
        "   ",
        None,
        17,
        ["https://example.com"],
        "/relative/path",
        "example.com/no-scheme",
        "https://",
        "https://exa\nmple.com/",
        "http://[::1",
    ],
)
def test_unusable_urls_make_the_folder_invalid(tmp_path: Path, url: Any) -> None:
    assert invalid(write(tmp_path / TS, v04(url=url))).reason == "bad_url"


def test_missing_timestamp_falls_back_to_a_timestamp_like_folder_name(tmp_path: Path) -> None:
    doc = v04()
    del doc["timestamp"]
    index = loaded(write(tmp_path / "1593690397.5", doc))
    assert index.timestamp == "1593690397.5"
    assert any("folder name" in w for w in index.warnings)
    hostile = loaded(write(tmp_path / "1593690398", v04(timestamp="../../etc")))
    assert hostile.timestamp == "1593690398"
    assert invalid(write(tmp_path / "not-a-timestamp", doc)).reason == "bad_timestamp"


def test_numeric_timestamps_are_text(tmp_path: Path) -> None:
    assert loaded(write(tmp_path / "a", v04(timestamp=1593690397))).timestamp == "1593690397"
    assert loaded(write(tmp_path / "b", v04(timestamp=1593690397.25))).timestamp == "1593690397.25"


def test_wrong_types_are_dropped_with_warnings_not_fatal(tmp_path: Path) -> None:
    doc = v04(
        title=["not", "a", "title"],
        tags=42,
        history={
            "dom": [result(), "not a dict", 7, None],
            "wget": {"status": "succeeded"},
            "../evil": [result()],
            "pdf": [result("output.pdf", cmd="rm -rf /", start_ts="yesterday", output_extra=1)],
            "media": [result(output={"nested": True})],
        },
    )
    index = loaded(write(tmp_path / TS, doc))
    assert index.title is None
    assert index.tags == ()
    assert [r.output for r in index.results["dom"]] == ["output.html"]
    assert "wget" not in index.results and "../evil" not in index.results
    pdf = index.results["pdf"][0]
    assert pdf.cmd == () and pdf.start_ts is None and pdf.output == "output.pdf"
    assert index.results["media"][0].output is None
    text = "\n".join(index.warnings)
    for expected in (
        "title is list",
        "tags is int",
        "not an object",
        "history.wget is dict",
        "'../evil'",
        "cmd is not a list",
        "start_ts 'yesterday'",
        "output is dict",
    ):
        assert expected in text


def test_history_that_is_a_list_is_ignored(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04(history=[result()])))
    assert index.results == {}
    assert any("history is list" in w for w in index.warnings)


@pytest.mark.parametrize(
    "output",
    ["../../../etc/passwd", "/etc/passwd", "warc/../../x", "a\x00b", "..\\..\\boot.ini", "C:\\x"],
)
def test_path_tricks_in_outputs_are_dropped_never_followed(tmp_path: Path, output: str) -> None:
    history = {"dom": [result()], "wget": [result(output)]}
    index = loaded(write(tmp_path / TS, v04(history=history)))
    assert index.results["wget"][0].output is None
    assert index.results["wget"][0].status == "succeeded"  # the run is kept, the path is not
    assert index.results["dom"][0].output == "output.html"
    assert any(repr(output) in w and "dropped" in w for w in index.warnings)


def test_error_text_of_failed_results_is_kept(tmp_path: Path) -> None:
    history = {"wget": [result("ArchiveError: failed to fetch ../x", status="failed")]}
    index = loaded(write(tmp_path / TS, v04(history=history)))
    assert index.results["wget"][0].output == "ArchiveError: failed to fetch ../x"


def test_tags_from_text_list_and_tags_str(tmp_path: Path) -> None:
    folder = tmp_path / TS
    assert loaded(write(folder, v04(tags=" b, a ,,a"))).tags == ("a", "b")
    assert loaded(write(folder, v04(tags=["x", " y ", 3, ""]))).tags == ("x", "y")
    assert loaded(write(folder, v04(tags=None, tags_str="q,r"))).tags == ("q", "r")
    assert loaded(write(folder, v04(tags="A", tags_str="a"))).tags == ("A", "a")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("bookmarked_at", "2024-03-01T10:00:00Z", datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("bookmarked_at", "2024-03-01T12:00:00+02:00", datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("bookmarked_at", 1709287200.5, datetime(2024, 3, 1, 10, 0, 0, 500000, tzinfo=UTC)),
        ("bookmarked_at", "1709287200", datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("created_at", "2024-03-01 10:00", datetime(2024, 3, 1, 10, tzinfo=UTC)),
    ],
)
def test_dates_in_their_various_formats(tmp_path: Path, field: str, value: Any, expected: datetime) -> None:
    doc = v04(**{field: value})
    del doc["timestamp"]
    index = loaded(write(tmp_path / "x" / "1600000000", doc))
    got = index.bookmarked if field == "bookmarked_at" else index.created
    assert got == expected and got.tzinfo is not None


def test_unparseable_dates_are_warned_and_skipped(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04(updated="soon", downloaded_at=float("nan"))))
    assert index.updated is None
    assert sum("is not a date" in w for w in index.warnings) == 2


def test_09_archive_results_list_is_normalized(tmp_path: Path) -> None:
    doc = {
        "url": URL,
        "timestamp": TS,
        "fs_version": "0.9.0",
        "crawl_id": "c-1",
        "id": "0f0e",
        "archive_results": [
            {**result(), "extractor": "dom"},
            {**result("screenshot.png"), "plugin": "screenshot"},
            {**result()},
            "junk",
        ],
    }
    index = loaded(write(tmp_path / TS, doc))
    assert index.fs_version == "0.9"
    assert set(index.results) == {"dom", "screenshot"}
    assert (index.crawl_id, index.snapshot_id) == ("c-1", "0f0e")
    assert len(index.warnings) == 2


def test_warnings_quote_hostile_values_briefly(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04(updated="x" * 100_000)))
    (warning,) = index.warnings
    assert len(warning) < 200 and warning.startswith("updated 'xxx")
