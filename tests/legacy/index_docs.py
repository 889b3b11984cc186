"""index.json documents and folder helpers shared by the index.json tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archive_pipelines.legacy.index_json import InvalidFolder, LegacyIndex, load_index

TS = "1593690397"
URL = "https://example.com/post"


def result(output: Any = "output.html", status: str = "succeeded", **extra: Any) -> dict[str, Any]:
    return {
        "schema": "ArchiveResult",
        "cmd": ["chromium", "--dump-dom", URL],
        "pwd": f"/data/archive/{TS}",
        "cmd_version": "Chromium 118",
        "output": output,
        "status": status,
        "start_ts": "2020-07-02T11:46:37.906467",
        "end_ts": "2020-07-02T11:46:40.000000",
        "index_texts": None,
        **extra,
    }


def v04(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "Link",
        "url": URL,
        "timestamp": TS,
        "title": "A post",
        "tags": "news,python",
        "sources": ["/data/sources/import.txt"],
        "history": {"dom": [result()], "title": [result("A post / part 1")]},
        "updated": "2020-07-02T11:47:00",
        "bookmarked_date": "2020-07-02 11:46",
        "canonical": {"dom_path": "output.html"},
    }
    doc.update(overrides)
    return doc


def write(folder: Path, content: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (folder / "index.json").write_bytes(data)
    return folder


def loaded(folder: Path) -> LegacyIndex:
    index = load_index(folder)
    assert isinstance(index, LegacyIndex), index
    return index


def invalid(folder: Path) -> InvalidFolder:
    index = load_index(folder)
    assert isinstance(index, InvalidFolder), index
    return index
