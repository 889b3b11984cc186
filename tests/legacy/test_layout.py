from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.legacy.index_json import LegacyIndex
from archive_pipelines.legacy.layout import (
    FileMove,
    classify,
    display_path,
    looks_like_host,
    plan_organize,
)

URL = "https://www.example.com/blog/post"


def index_for(folder: Path, url: str = URL) -> LegacyIndex:
    return LegacyIndex(
        folder=folder,
        url=url,
        timestamp="1600000000",
        title=None,
        tags=(),
        bookmarked=None,
        created=None,
        updated=None,
        snapshot_id=None,
        abid=None,
        crawl_id=None,
        fs_version="0.4",
        results={},
    )


def make(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.mark.parametrize(
    ("rel", "extractor", "dst"),
    [
        ("output.html", "dom", "dom/output.html"),
        ("singlefile.html", "singlefile", "singlefile/singlefile.html"),
        ("screenshot.png", "screenshot", "screenshot/screenshot.png"),
        ("output.pdf", "pdf", "pdf/output.pdf"),
        ("htmltotext.txt", "htmltotext", "htmltotext/htmltotext.txt"),
        ("headers.json", "headers", "headers/headers.json"),
        ("favicon.ico", "favicon", "favicon/favicon.ico"),
        ("archive.org.txt", "archive_org", "archive_org/archive.org.txt"),
        ("warc/1600000000.warc.gz", "warc", "warc/1600000000.warc.gz"),
        ("media/video.mp4", "media", "media/video.mp4"),
        ("git/repo/.git/HEAD", "git", "git/repo/.git/HEAD"),
        ("readability/content.html", "readability", "readability/content.html"),
        ("mercury/content.txt", "mercury", "mercury/content.txt"),
        ("index.json", "index", "index.json"),
        ("index.html", "index", "index.html"),
        ("www.example.com/blog/post.html", "wget", "wget/www.example.com/blog/post.html"),
        ("cdn.other-host.net/jquery.js", "wget", "wget/cdn.other-host.net/jquery.js"),
        ("WWW.EXAMPLE.COM:8080/index.html", "wget", "wget/WWW.EXAMPLE.COM:8080/index.html"),
        ("10.0.0.1/index.html", "wget", "wget/10.0.0.1/index.html"),
        ("notes.txt", "unknown", "notes.txt"),
        ("sources/list.txt", "unknown", "sources/list.txt"),
        ("v1.2/x", "unknown", "v1.2/x"),  # a dot is not enough: no hostname shape
        ("output.html/x", "unknown", "output.html/x"),
        ("backup.tar.gz/x", "unknown", "backup.tar.gz/x"),
        ("files.zip/x", "wget", "wget/files.zip/x"),  # .zip is a real TLD
        ("dom", "unknown", "unknown/dom"),  # a flat file named like an extractor folder
        ("unknown", "unknown", "unknown/unknown"),
        # A folder wget saved as `index/`: top-level files are extractor `index`, so it moves.
        ("index/index.html", "unknown", "unknown/index/index.html"),
        ("index/a/b.css", "unknown", "unknown/index/a/b.css"),
        ("index", "unknown", "index"),  # a top-level file: stays, stored as index/index
    ],
)
def test_classify_flat_names(rel: str, extractor: str, dst: str) -> None:
    assert classify(rel.split("/"), "www.example.com") == (extractor, dst)


def test_organized_paths_classify_to_themselves() -> None:
    for dst in (
        "dom/output.html",
        "wget/www.example.com/blog/post.html",
        "unknown/dom",
        "unknown/index/index.html",
        "screenshot/screenshot.png",
        "archive_org/archive.org.txt",
    ):
        extractor, again = classify(dst.split("/"), "www.example.com")
        assert again == dst
        assert extractor == dst.split("/")[0]


def test_host_detection() -> None:
    assert looks_like_host("intranet", "intranet")  # the snapshot's own host, even dotless
    assert looks_like_host("xn--bcher-kva.example")
    assert not looks_like_host("readme.md5sum1")
    assert not looks_like_host(".hidden.com")
    assert not looks_like_host("intranet")


def test_plan_organize_a_flat_folder(tmp_path: Path) -> None:
    files = {
        "index.json": b"{}",
        "index.html": b"<html>",
        "output.html": b"dom",
        "screenshot.png": b"png",
        "warc/1600000000.warc.gz": b"warc",
        "www.example.com/blog/post.html": b"wget",
        "www.example.com/static/jquery.min.js": b"jq",
        "notes.txt": b"kept",
        "media/a/b/c.mp4": b"deep",
    }
    make(tmp_path, files)
    plan = plan_organize(tmp_path, index_for(tmp_path))
    assert plan.skipped == []
    by_src = {m.src_rel: m for m in plan.moves}
    assert set(by_src) == set(files)
    assert by_src["output.html"] == FileMove("output.html", "dom", "dom/output.html", 3)
    assert by_src["www.example.com/static/jquery.min.js"].dst_rel == (
        "wget/www.example.com/static/jquery.min.js"
    )
    assert by_src["notes.txt"].is_noop and by_src["notes.txt"].extractor == "unknown"
    assert by_src["media/a/b/c.mp4"].is_noop
    assert plan.total_bytes == sum(len(v) for v in files.values())
    assert plan.shared_destinations() == {}


def test_a_half_organized_folder_shows_both_copies(tmp_path: Path) -> None:
    make(tmp_path, {"output.html": b"x", "dom/output.html": b"x"})
    plan = plan_organize(tmp_path)
    shared = plan.shared_destinations()
    assert list(shared) == ["dom/output.html"]
    assert sorted(shared["dom/output.html"]) == ["dom/output.html", "output.html"]


def test_symlinks_fifos_and_sockets_are_skipped_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make(outside, {"secret.txt": b"secret", "dir/inner.txt": b"inner"})
    folder = tmp_path / "1600000000"
    make(folder, {"output.html": b"dom"})
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "www.example.com").symlink_to(outside / "dir", target_is_directory=True)
    (folder / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(folder / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(folder / "sock"))
        plan = plan_organize(folder)
    finally:
        sock.close()
    assert [m.src_rel for m in plan.moves] == ["output.html"]
    reasons = {s.rel_path: s.reason for s in plan.skipped}
    assert set(reasons) == {"link.txt", "www.example.com", "dangling", "pipe", "sock"}
    assert reasons["link.txt"].startswith("symlink")
    assert reasons["www.example.com"].startswith("symlink")
    assert reasons["pipe"].startswith("FIFO")
    assert reasons["sock"].startswith("socket")


def test_a_symlinked_snapshot_folder_is_not_walked(tmp_path: Path) -> None:
    make(tmp_path / "real", {"output.html": b"x"})
    (tmp_path / "1600000000").symlink_to(tmp_path / "real", target_is_directory=True)
    plan = plan_organize(tmp_path / "1600000000")
    assert plan.moves == []
    assert plan.skipped[0].rel_path == "." and "symlink" in plan.skipped[0].reason


def test_device_files_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "1600000000"
    folder.mkdir()
    try:
        os.mknod(folder / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")
    plan = plan_organize(folder)
    assert plan.moves == []
    assert [(s.rel_path, s.reason.split(",")[0]) for s in plan.skipped] == [("null", "device file")]


def test_names_with_odd_bytes_are_planned_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "1600000000"
    folder.mkdir()
    odd = os.fsencode(folder) + b"/caf\xe9.html"  # latin-1, not UTF-8
    with open(odd, "wb") as handle:
        handle.write(b"odd")
    host = os.fsencode(folder) + b"/www.example.com"
    os.mkdir(host)
    with open(host + b"/line\nbreak.html", "wb") as handle:
        handle.write(b"nl")
    plan = plan_organize(folder, index_for(folder))
    assert len(plan.moves) == 2 and plan.skipped == []
    assert sorted(plan.odd_names) == sorted(m.src_rel for m in plan.moves)
    latin = next(m for m in plan.moves if m.extractor == "unknown")
    assert os.fsencode(latin.src_rel) == b"caf\xe9.html"  # round-trips to the bytes on disk
    assert display_path(latin.src_rel) == "caf\\xe9.html"
    assert (folder / latin.src_rel).read_bytes() == b"odd"


def test_an_unreadable_subfolder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, {"media/a.mp4": b"x", "output.html": b"y"})
    real_scandir = os.scandir

    def scandir(path: str) -> Any:
        if path.endswith("media"):  # chmod 000 does not stop root, so refuse here
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    plan = plan_organize(tmp_path)
    assert [m.src_rel for m in plan.moves] == ["output.html"]
    assert plan.skipped[0].rel_path == "media"
    assert "Permission denied" in plan.skipped[0].reason
