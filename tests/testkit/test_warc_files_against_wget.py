"""Our wget-style WARC beside one real `wget --warc-file` wrote for the same loopback site."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_testkit.archivebox.aged07.commands import wget_arguments
from archive_testkit.testweb.requestlog import RequestLog
from archive_testkit.testweb.static_server import StaticSiteServer
from archive_testkit.warc_files import WgetFetch, WgetRun, wget_warc
from archive_testkit.warc_reading import ReadRecord, read_warc, warcio_check

pytestmark = pytest.mark.skipif(shutil.which("wget") is None, reason="needs GNU wget")

SITE = {
    "index.html": b'<!DOCTYPE html><html><head><link rel="stylesheet" href="css/site.css"></head>'
    b'<body><img src="img/logo.png"><a href="about.html">About</a></body></html>\n',
    "css/site.css": b"body{margin:0}\n",
    "img/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(200)),
    "about.html": b"<html>not a requisite: never fetched</html>\n",
}
TYPES = {"index.html": "text/html", "css/site.css": "text/css", "img/logo.png": "image/png"}
# The log's variable parts (times, sizes, rate) masked, so the two logs compare by shape.
_LOG_MASKS = (
    (re.compile(r"\([\d.]+ [KMG]?B/s\)"), "(RATE)"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "TIME"),
    (re.compile(r"[\d.]+[KMG]?"), "N"),
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    for rel, body in SITE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body)
    server = StaticSiteServer(("127.0.0.1", 0), root, RequestLog(), keep_alive=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _arguments(site: str, warc: Path) -> tuple[str, ...]:
    """ArchiveBox 0.7's wget extractor command, without `wget` itself."""
    return tuple(wget_arguments(
        warc=str(warc), url=f"{site}/index.html",
        user_agent="Mozilla/5.0 (X11; Linux x86_64) ArchiveBox/0.7.2 wget/1.21.3"))


@pytest.fixture(scope="module")
def both(site: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("wget")
    (work / "warc").mkdir()
    arguments = _arguments(site, work / "warc" / "1700000000")
    subprocess.run(["wget", *arguments], cwd=work, check=True, timeout=60, capture_output=True)
    real = work / "warc" / "1700000000.warc.gz"
    host = site.removeprefix("http://").replace(":", "+")  # --restrict-file-names=windows
    fetches = [WgetFetch(f"{site}/{rel}", SITE[rel], TYPES[rel], f"{host}/{rel}") for rel in TYPES]
    run = WgetRun(arguments=arguments, started=datetime.now(UTC), warc_name=real.name)
    ours = work / "ours.warc.gz"
    ours.write_bytes(wget_warc(run, fetches))
    return real, ours


def test_the_warcio_check_cli_passes_ours_and_wgets(both: tuple[Path, Path]) -> None:
    warcio = Path(sys.executable).parent / "warcio"
    for path in both:
        done = subprocess.run(
            [str(warcio), "check", "-v", str(path)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "digest pass" in done.stdout and "failed" not in done.stdout
    assert warcio_check(list(both)) == 0


def test_ours_has_wgets_records_in_wgets_order(both: tuple[Path, Path]) -> None:
    real, ours = (read_warc(path.read_bytes()) for path in both)
    assert [r.kind for r in ours] == [r.kind for r in real]
    assert [r.header("WARC-Target-URI") for r in ours] == [r.header("WARC-Target-URI") for r in real]
    assert [r.payload for r in ours if r.kind == "response"] == [
        r.payload for r in real if r.kind == "response"
    ]


def test_each_record_type_carries_wgets_header_names(both: tuple[Path, Path]) -> None:
    real, ours = (read_warc(path.read_bytes()) for path in both)
    for mine, theirs in zip(ours, real, strict=True):
        assert mine.header_names == theirs.header_names, mine.kind
        assert mine.header("Content-Type") == theirs.header("Content-Type"), mine.kind
        if mine.kind == "request":
            assert [name for name, _ in mine.http_headers] == [name for name, _ in theirs.http_headers]
    assert _field_names(ours[0]) == _field_names(real[0])
    assert ours[-2].payload == real[-2].payload  # wget_arguments.txt: the same arguments, quoted alike


def test_our_wget_log_has_the_shape_of_wgets(both: tuple[Path, Path]) -> None:
    real, ours = (read_warc(path.read_bytes()) for path in both)
    assert _masked(ours[-1].payload) == _masked(real[-1].payload)


def _field_names(warcinfo: ReadRecord) -> list[str]:
    return [line.split(":", 1)[0] for line in warcinfo.payload.decode().splitlines() if line]


def _masked(log: bytes) -> list[str]:
    lines = []
    for line in log.decode().splitlines():
        for pattern, mask in _LOG_MASKS:
            line = pattern.sub(mask, line)
        lines.append(line)
    return lines
