"""WARC files written by Debian's real `wget --warc-file`, crawling a site of the test web.

The third-party writer the WARC import is checked against. wget cannot map a host name to
an address, so it reaches the test web's virtual hosts (`site0000.test`) through the test web
itself used as an HTTP proxy: wget then sends `GET http://site0000.test/... HTTP/1.1` and
the test web answers by the Host header, and the WARC-Target-URIs are the realistic
`http://site0000.test/...` rather than `http://127.0.0.1:PORT/...`.

GNU Wget 1.21.3 sends `Accept-Encoding: identity` unless `--compression=auto` (then `gzip`),
and writes, one gzip member each: a `warcinfo`, a `request` and a `response` per URL (404s
and redirects included, robots.txt first among the recursive ones), then a `metadata`
MANIFEST and two `resource`s (`wget_arguments.txt`, `wget.log`). Its `--no-verbose` log
lists the files it saved (a redirect under its final URL), not the errors.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archive_testkit.wget_log import parse_no_verbose_log

WGET = "/usr/bin/wget"
WGET_LOG_URI = "metadata://gnu.org/software/wget/warc/wget.log"
_CLEAN_EXITS = (0, 8)  # 8: the server answered an error (a 404) for some URL, as sites do


class WgetFailed(RuntimeError):
    """wget exited with a code other than success or "some server error"."""


@dataclass(frozen=True)
class FetchedPayload:
    """One response record wget wrote: its URL, status and the sha256 of its payload.

    `sent_sha256` is over the payload as the record holds it (the server's bytes after the
    HTTP headers, content encoding kept); `decoded_sha256` over it with transfer and content
    encoding removed (what a browser renders, and the form a store of decoded bodies holds).
    """

    url: str
    status: int
    content_encoding: str | None
    sent_sha256: str
    decoded_sha256: str
    offset: int  # of the record's gzip member in the WARC


@dataclass(frozen=True)
class WgetCrawl:
    """What one wget run wrote: the WARC, the command, every response and wget's own log."""

    warc: Path
    arguments: tuple[str, ...]  # wget's, without `wget`
    exit_code: int
    responses: tuple[FetchedPayload, ...]  # in the order wget fetched them
    logged_urls: tuple[str, ...]  # the `URL:` lines of wget's log (saved files)

    @property
    def urls(self) -> list[str]:
        """Every URL wget fetched (one response record each), in fetch order."""
        return [response.url for response in self.responses]

    def payload(self, url: str) -> FetchedPayload:
        """The (first) response wget recorded for `url`."""
        return next(response for response in self.responses if response.url == url)


def wget_command(
    start_url: str, warc_base: Path, *, proxy: str | None = None, recursive_depth: int = 1,
    compression: bool = False,
) -> list[str]:
    """The wget command line: WARC at `warc_base` + `.warc.gz`, saved files beside it in `files/`."""
    command = [WGET, "--no-config", f"--warc-file={warc_base}", "--page-requisites", "--recursive",
               f"--level={recursive_depth}", "--no-verbose", "--tries=1", "--timeout=5",
               f"--directory-prefix={warc_base.parent / 'files'}"]
    if compression:
        command.append("--compression=auto")
    if proxy is not None:
        command += ["-e", "use_proxy=yes", "-e", f"http_proxy=http://{proxy}/"]
    return [*command, start_url]


def wget_crawl(
    start_url: str, out_dir: Path, *, proxy: str | None = None, recursive_depth: int = 1,
    timeout_s: float = 120, compression: bool = False, name: str = "wget",
) -> WgetCrawl:
    """Run Debian's wget from `start_url` into `out_dir/<name>.warc.gz` and read back what it wrote.

    `proxy` is `HOST:PORT` of an HTTP proxy (the test web's own port, to reach its virtual
    hosts); wget's config files and the caller's proxy variables are ignored.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    command = wget_command(start_url, out_dir / name, proxy=proxy, recursive_depth=recursive_depth,
                           compression=compression)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(out_dir), "LC_ALL": "C", "TZ": "UTC"}
    done = subprocess.run(command, capture_output=True, timeout=timeout_s, env=env, check=False)
    if done.returncode not in _CLEAN_EXITS:
        raise WgetFailed(f"wget exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    warc = out_dir / f"{name}.warc.gz"
    responses, log = read_wget_warc(warc)
    return WgetCrawl(warc=warc, arguments=tuple(command[1:]), exit_code=done.returncode,
                     responses=tuple(responses),
                     logged_urls=tuple(download.url for download in parse_no_verbose_log(log)))


def read_wget_warc(warc: Path) -> tuple[list[FetchedPayload], bytes]:
    """The response records (digests checked by warcio) and the wget.log resource's bytes."""
    responses, log = [], b""
    with warc.open("rb") as stream:
        records = ArchiveIterator(stream, check_digests="raise")
        for record in records:
            uri = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type == "resource" and uri == WGET_LOG_URI:
                log = record.content_stream().read()
            if record.rec_type != "response":
                continue
            raw = record.raw_stream.read()  # read through warcio's digest check
            offset = records.get_record_offset()  # (reads the record to its end: after the payload)
            record.raw_stream = BytesIO(raw)  # so content_stream() decodes the same bytes again
            decoded = hashlib.sha256(record.content_stream().read()).hexdigest()
            encoding = record.http_headers.get_header("Content-Encoding")
            responses.append(FetchedPayload(uri, int(record.http_headers.get_statuscode()), encoding,
                                            hashlib.sha256(raw).hexdigest(), decoded, offset))
    return responses, log

