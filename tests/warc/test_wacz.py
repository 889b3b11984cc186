"""Our WACZ validated by py-wacz's `wacz validate` (a test-time validator), its hashes and paths
checked here, and its page list read back."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tracemalloc
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.warc.cdxj import sort_cdxj
from archive_pipelines.warc.wacz import PageEntry, write_wacz
from tests.helpers.warcs import PAGE, sample_warc_index_lines, write_sample_warc

TITLE = 'Café "quoted" — 日本語 \\ <b>'
CREATED = datetime(2024, 3, 6, 7, 8, 9, tzinfo=UTC)


def _sample_wacz(tmp_path: Path, *,
                 warc_names: tuple[str, ...] = ("crawl-1.warc.gz",)) -> tuple[Path, list[Path]]:
    warcs = []
    unsorted = tmp_path / "unsorted.cdxj"
    with unsorted.open("w") as sink:
        for name in warc_names:
            warc = tmp_path / name
            write_sample_warc(warc)
            warcs.append(warc)
            sink.writelines(line + "\n" for line in sample_warc_index_lines(warc, name))
    index = tmp_path / "index.cdxj"
    sort_cdxj(unsorted, index)
    pages = [PageEntry(url=PAGE, ts="20240301101112", title=TITLE),
             PageEntry(url="http://example.com/missing",
                       ts=datetime(2024, 3, 1, 10, 11, 12, 200_000, tzinfo=UTC)),
             PageEntry(url="https://bücher.example/straße?q=ä", ts="20240302101112", title="", id="page-3")]
    out = tmp_path / "out" / "export.wacz"
    summary = write_wacz(out, warcs=warcs, index=index, pages=iter(pages), title="Test export",
                         software="archive-pipelines test", created=CREATED, main_page_url=PAGE,
                         main_page_date=datetime(2024, 3, 1, 10, 11, 12, tzinfo=UTC))
    assert summary.path == out
    assert summary.pages == 3
    assert summary.warcs == len(warcs)
    assert summary.bytes == out.stat().st_size
    assert summary.sha256 == hashlib.sha256(out.read_bytes()).hexdigest()
    return out, warcs


# The console script: `python -m wacz` would exit 0 whatever `validate` returns.
WACZ = Path(sys.executable).parent / "wacz"


def _validate(wacz: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(WACZ), "validate", "-f", str(wacz)],
                          capture_output=True, text=True, timeout=300, check=False)


def test_wacz_validate_accepts_our_wacz(tmp_path: Path) -> None:
    wacz, _ = _sample_wacz(tmp_path, warc_names=("crawl-1.warc.gz", "Crawl 2.warc.gz"))
    done = _validate(wacz)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation succeeded, the passed WACZ is valid" in done.stdout


def test_wacz_validate_refuses_a_wacz_whose_warc_was_altered(tmp_path: Path) -> None:
    """The validator proves something: one flipped byte in a WARC fails it."""
    wacz, _ = _sample_wacz(tmp_path)
    altered = tmp_path / "altered.wacz"
    with zipfile.ZipFile(wacz) as source, zipfile.ZipFile(altered, "w") as sink:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.startswith("archive/"):
                data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
            sink.writestr(info, data)
    done = _validate(altered)
    assert done.returncode == 1
    assert "Validation failed" in done.stdout


def test_layout_hashes_and_metadata(tmp_path: Path) -> None:
    wacz, warcs = _sample_wacz(tmp_path)
    with zipfile.ZipFile(wacz) as archive:
        assert {info.filename for info in archive.infolist()} == {
            "archive/crawl-1.warc.gz", "indexes/index.cdxj", "pages/pages.jsonl", "datapackage.json",
            "datapackage-digest.json"}
        assert archive.getinfo("archive/crawl-1.warc.gz").compress_type == zipfile.ZIP_STORED
        assert archive.read("archive/crawl-1.warc.gz") == warcs[0].read_bytes()
        package_bytes = archive.read("datapackage.json")
        package = json.loads(package_bytes)
        digest = json.loads(archive.read("datapackage-digest.json"))
        assert digest == {"path": "datapackage.json",
                          "hash": "sha256:" + hashlib.sha256(package_bytes).hexdigest()}
        for resource in package["resources"]:
            data = archive.read(resource["path"])
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert resource["bytes"] == len(data)
        assert [resource["path"] for resource in package["resources"]] == [
            "archive/crawl-1.warc.gz", "indexes/index.cdxj", "pages/pages.jsonl"]
        index_lines = archive.read("indexes/index.cdxj").decode().splitlines()
    assert index_lines == sorted(index_lines)
    assert all('"filename": "crawl-1.warc.gz"' in line for line in index_lines)
    assert package["profile"] == "data-package"
    assert package["wacz_version"] == "1.1.1"
    assert package["title"] == "Test export"
    assert package["software"] == "archive-pipelines test"
    assert package["created"] == "2024-03-06T07:08:09Z"
    assert package["mainPageURL"] == PAGE
    assert package["mainPageDate"] == "2024-03-01T10:11:12Z"
    assert [path.name for path in wacz.parent.iterdir()] == ["export.wacz"]  # no partial file left


@pytest.mark.unit
def test_page_titles_survive_non_ascii_and_quotes(tmp_path: Path) -> None:
    warc = tmp_path / "a.warc.gz"
    warc.write_bytes(b"not read, only copied")
    index = tmp_path / "index.cdxj"
    index.write_text("")
    pages = [PageEntry(url="https://例え.jp/ä?q=\"x\"", ts="20240301101112", title=TITLE),
             PageEntry(url="https://example.com/", ts="20240301101113")]
    out = tmp_path / "t.wacz"
    write_wacz(out, warcs=[warc], index=index, pages=pages, title="t", software="s", created=CREATED)
    with zipfile.ZipFile(out) as archive:
        lines = [json.loads(line) for line in archive.read("pages/pages.jsonl").decode("utf-8").splitlines()]
    assert lines[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    assert lines[1]["title"] == TITLE
    assert lines[1]["url"] == "https://例え.jp/ä?q=\"x\""
    assert lines[1]["ts"] == "2024-03-01T10:11:12Z"
    assert "title" not in lines[2]
    assert lines[1]["id"] != lines[2]["id"]


@pytest.mark.unit
def test_a_failed_write_leaves_nothing_under_the_final_name(tmp_path: Path) -> None:
    warc = tmp_path / "a.warc.gz"
    warc.write_bytes(b"x" * 10_000)
    index = tmp_path / "index.cdxj"
    index.write_text("")

    def pages() -> list[PageEntry]:
        return [PageEntry(url="https://example.com/", ts="not a timestamp")]

    out = tmp_path / "out" / "t.wacz"
    with pytest.raises(ValueError, match="14 digits"):
        write_wacz(out, warcs=[warc], index=index, pages=pages(), title="t", software="s")
    assert list(out.parent.iterdir()) == []


@pytest.mark.unit
def test_two_warcs_of_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "x.warc.gz").write_bytes(b"x")
    with pytest.raises(ValueError, match="share a file name"):
        write_wacz(tmp_path / "t.wacz", warcs=[tmp_path / "a" / "x.warc.gz", tmp_path / "b" / "x.warc.gz"],
                   index=tmp_path / "a" / "x.warc.gz", pages=[], title="t", software="s")


@pytest.mark.unit
def test_memory_stays_flat_for_a_large_warc(tmp_path: Path) -> None:
    warc = tmp_path / "big.warc.gz"
    with warc.open("wb") as sink:
        block = bytes(range(256)) * 4096  # 1 MiB
        for _ in range(96):
            sink.write(block)
    index = tmp_path / "index.cdxj"
    index.write_text("")
    tracemalloc.start()
    try:
        summary = write_wacz(tmp_path / "big.wacz", warcs=[warc], index=index, pages=[], title="t",
                             software="s", created=CREATED)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary.bytes > 96 << 20
    assert peak < 8 << 20, f"peak {peak} bytes for a 96 MiB WARC"
