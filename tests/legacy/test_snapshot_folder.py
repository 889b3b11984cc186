from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.legacy.snapshot_folder import (
    FolderFile,
    FolderLink,
    SkippedEntry,
    display_path,
    extractor_of,
    iter_folder,
    link_stays_inside,
    looks_like_host,
)

URL = "https://www.example.com/blog/post"


def make(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def walk(folder: Path, url: str | None = URL
         ) -> tuple[list[FolderFile], list[FolderLink], list[SkippedEntry]]:
    files, links, skipped = [], [], []
    for entry in iter_folder(folder, url):
        if isinstance(entry, FolderFile):
            files.append(entry)
        elif isinstance(entry, FolderLink):
            links.append(entry)
        else:
            skipped.append(entry)
    return files, links, skipped


@pytest.mark.unit
@pytest.mark.parametrize(
    ("rel", "extractor"),
    [
        ("output.html", "dom"),
        ("singlefile.html", "singlefile"),
        ("screenshot.png", "screenshot"),
        ("output.pdf", "pdf"),
        ("htmltotext.txt", "htmltotext"),
        ("headers.json", "headers"),
        ("favicon.ico", "favicon"),
        ("archive.org.txt", "archive_org"),
        ("warc/1600000000.warc.gz", "warc"),
        ("media/video.mp4", "media"),
        ("git/repo/.git/HEAD", "git"),
        ("readability/content.html", "readability"),
        ("mercury/content.txt", "mercury"),
        ("index.json", "index"),
        ("index.html", "index"),
        ("www.example.com/blog/post.html", "wget"),
        ("cdn.other-host.net/jquery.js", "wget"),
        ("WWW.EXAMPLE.COM:8080/index.html", "wget"),
        ("10.0.0.1/index.html", "wget"),
        ("notes.txt", "unknown"),
        ("sources/list.txt", "unknown"),
        ("v1.2/x", "unknown"),  # a dot is not enough: no hostname shape
        ("output.html/x", "unknown"),
        ("backup.tar.gz/x", "unknown"),
        ("files.zip/x", "wget"),  # .zip is a real TLD
        ("dom", "unknown"),  # a flat file named like an extractor folder
        ("index/index.html", "unknown"),  # a folder wget saved as `index/`
        # Folders an earlier version of this project organized keep their extractor.
        ("dom/output.html", "dom"),
        ("wget/www.example.com/blog/post.html", "wget"),
        ("screenshot/screenshot.png", "screenshot"),
    ],
)
def test_extractor_of_a_path(rel: str, extractor: str) -> None:
    assert extractor_of(rel.split("/"), "www.example.com") == extractor


@pytest.mark.unit
def test_host_detection() -> None:
    assert looks_like_host("intranet", "intranet")  # the snapshot's own host, even dotless
    assert looks_like_host("xn--bcher-kva.example")
    assert not looks_like_host("readme.md5sum1")
    assert not looks_like_host(".hidden.com")
    assert not looks_like_host("intranet")


@pytest.mark.unit
def test_a_flat_folder_is_walked_as_it_is(tmp_path: Path) -> None:
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
    found, links, skipped = walk(tmp_path)
    assert skipped == [] and links == []
    by_rel = {f.rel_path: f for f in found}
    assert set(by_rel) == set(files)  # every file at its own path
    assert by_rel["output.html"] == FolderFile("output.html", "dom", 3)
    assert by_rel["www.example.com/static/jquery.min.js"].extractor == "wget"
    assert by_rel["notes.txt"].extractor == "unknown"
    assert sum(f.size or 0 for f in found) == sum(len(v) for v in files.values())


@pytest.mark.unit
@pytest.mark.parametrize(("rel", "target", "inside"), [
    ("a", "b", True),
    ("x/a", "../b", True),
    ("x/y/a", "../../b/c", True),
    ("a", "../b", False),
    ("x/a", "../../b", False),
    ("a", "/etc/passwd", False),
    ("x/a", "./../y/../../z", False),
    ("a", "", False),
])
def test_link_stays_inside(rel: str, target: str, inside: bool) -> None:
    assert link_stays_inside(rel, target) is inside


def test_symlinks_are_listed_fifos_and_sockets_skipped_nothing_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make(outside, {"secret.txt": b"secret", "dir/inner.txt": b"inner"})
    folder = tmp_path / "1600000000"
    make(folder, {"output.html": b"dom"})
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "www.example.com").symlink_to(outside / "dir", target_is_directory=True)
    (folder / "dangling").symlink_to(tmp_path / "nowhere")
    (folder / "same.html").symlink_to("output.html")
    os.mkfifo(folder / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(folder / "sock"))
        found, links, skipped = walk(folder)
    finally:
        sock.close()
    assert [f.rel_path for f in found] == ["output.html"]
    assert {link.rel_path: link.inside for link in links} == {
        "link.txt": False, "www.example.com": False, "dangling": False, "same.html": True}
    reasons = {s.rel_path: s.reason for s in skipped}
    assert set(reasons) == {"pipe", "sock"}
    assert reasons["pipe"].startswith("FIFO")
    assert reasons["sock"].startswith("socket")


@pytest.mark.unit
def test_a_symlinked_snapshot_folder_is_not_walked(tmp_path: Path) -> None:
    make(tmp_path / "real", {"output.html": b"x"})
    (tmp_path / "1600000000").symlink_to(tmp_path / "real", target_is_directory=True)
    found, _links, skipped = walk(tmp_path / "1600000000")
    assert found == []
    assert skipped[0].rel_path == "." and "symlink" in skipped[0].reason


@pytest.mark.unit
def test_device_files_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "1600000000"
    folder.mkdir()
    try:
        os.mknod(folder / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")
    found, _links, skipped = walk(folder)
    assert found == []
    assert [(s.rel_path, s.reason.split(",")[0]) for s in skipped] == [("null", "device file")]


@pytest.mark.unit
def test_names_with_odd_bytes_are_walked_and_flagged(tmp_path: Path) -> None:
    folder = tmp_path / "1600000000"
    folder.mkdir()
    odd = os.fsencode(folder) + b"/caf\xe9.html"  # latin-1, not UTF-8
    with open(odd, "wb") as handle:
        handle.write(b"odd")
    host = os.fsencode(folder) + b"/www.example.com"
    os.mkdir(host)
    with open(host + b"/line\nbreak.html", "wb") as handle:
        handle.write(b"nl")
    found, _links, skipped = walk(folder)
    assert len(found) == 2 and skipped == []
    assert all(f.odd_name for f in found)
    latin = next(f for f in found if f.extractor == "unknown")
    assert os.fsencode(latin.rel_path) == b"caf\xe9.html"  # round-trips to the bytes on disk
    assert display_path(latin.rel_path) == "caf\\xe9.html"
    assert (folder / latin.rel_path).read_bytes() == b"odd"


@pytest.mark.unit
def test_an_unreadable_subfolder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, {"media/a.mp4": b"x", "output.html": b"y"})
    real_scandir = os.scandir

    def scandir(path: str) -> Any:
        if path.endswith("media"):  # chmod 000 does not stop root, so refuse here
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found, _links, skipped = walk(tmp_path)
    assert [f.rel_path for f in found] == ["output.html"]
    assert skipped[0].rel_path == "media"
    assert "Permission denied" in skipped[0].reason
