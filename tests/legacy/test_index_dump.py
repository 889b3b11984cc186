from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.legacy.archive_result import LegacyResult
from archive_pipelines.legacy.index_json import dump_index
from tests.legacy.index_docs import TS, URL, loaded, result, v04, write

pytestmark = pytest.mark.unit


def test_dump_index_keeps_unknown_keys_and_the_history_shape(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04()))
    extra = LegacyResult(
        cmd=("wget", URL),
        output="example.com/post.html",
        status="succeeded",
        start_ts=datetime(2021, 1, 1, tzinfo=UTC),
    )
    merged = {**index.results, "wget": (extra,)}
    data = dump_index(index, title="A longer post title", tags=["python", "new"], results=merged)
    written = json.loads(data)
    assert written["canonical"] == {"dom_path": "output.html"}  # unknown keys survive
    assert written["sources"] == ["/data/sources/import.txt"]
    assert written["tags"] == "new,python"
    assert "archive_results" not in written and "fs_version" not in written
    assert written["history"]["dom"][0]["index_texts"] is None  # unknown result keys survive
    assert written["history"]["dom"][0]["schema"] == "ArchiveResult"
    again = loaded(write(tmp_path / "again" / TS, data))
    assert again.title == "A longer post title"
    assert again.tags == ("new", "python")
    assert again.results["wget"] == (extra,)
    assert again.results["dom"] == index.results["dom"]
    assert again.fs_version == index.fs_version


def test_dump_index_keeps_list_tags_archive_results_and_writes_fs_version(tmp_path: Path) -> None:
    doc = {"url": URL, "timestamp": TS, "tags": ["a"], "archive_results": [{**result(), "extractor": "dom"}]}
    index = loaded(write(tmp_path / TS, doc))
    data = dump_index(index, title=None, tags=["b", "a"], results=index.results, fs_version="organized")
    written = json.loads(data)
    assert written["tags"] == ["a", "b"]
    assert written["archive_results"][0]["extractor"] == "dom"
    assert "history" not in written
    assert written["fs_version"] == "organized"
    assert loaded(write(tmp_path / "b" / TS, data)).fs_version == "organized"


def test_dump_index_does_not_write_a_dropped_path_back(tmp_path: Path) -> None:
    index = loaded(write(tmp_path / TS, v04(history={"wget": [result("../../etc/passwd")]})))
    written = json.loads(dump_index(index, title=index.title, tags=index.tags, results=index.results))
    assert written["history"]["wget"][0]["output"] is None
    assert "../" not in json.dumps(written)
