"""Header blocks parsed from the reader's buffer (`header_blocks`) read WARC files exactly as
warcio's own line-by-line parser does: every record's WARC and HTTP headers, lengths, the
header lines kept, the bytes after the headers and every broken stretch the same, on ordinary,
hostile and mutated files in every layout."""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.warc import header_blocks
from archive_pipelines.warc.warc_files import BrokenSpan, Layout, detect_layout, iter_records
from archive_testkit import hostile_warcs
from archive_testkit.hostile_records import member, page, response_bytes
from archive_testkit.warc_variants import write_warc_variants


def _block(headers: Any) -> Any:
    if headers is None:
        return None
    return (headers.protocol, headers.statusline, list(headers.headers), headers.total_len)


def _reading(path: Path, *, http_requests: bool) -> list[Any]:
    """Everything the import sees of `path`, item by item."""
    layout = detect_layout(path)
    seen: list[Any] = []
    for item in iter_records(path, layout, http_requests=http_requests):
        if isinstance(item, BrokenSpan):
            seen.append(("broken", item.offset, item.reason))
            continue
        record = item.record
        seen.append((item.offset, record.rec_type, _block(record.rec_headers),
                     _block(record.http_headers), record.length, record.payload_length,
                     record.content_type, item.header_problem, record.raw_stream.read()))
    return seen


def _same_as_warcio(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    fast = [_reading(path, http_requests=flag) for flag in (True, False)]
    with monkeypatch.context() as patched:  # every block read by warcio's own parser
        patched.setattr(header_blocks, "_buffered_lines", lambda stream: None)
        slow = [_reading(path, http_requests=flag) for flag in (True, False)]
    assert fast == slow
    return fast[0]


def test_the_layouts_read_as_warcio_reads_them(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for path in write_warc_variants(tmp_path).values():
        assert len(_same_as_warcio(path, monkeypatch)) > 5


HOSTILE: dict[str, Callable[[Path], Any]] = {
    "truncated gzip member": hostile_warcs.truncated_member_warc,
    "content-length too long": hostile_warcs.content_length_too_long_warc,
    "content-length too long, plain": partial(hostile_warcs.content_length_too_long_warc,
                                              gzipped=False),
    "content-length too short": hostile_warcs.content_length_too_short_warc,
    "content-length too short, plain": partial(hostile_warcs.content_length_too_short_warc,
                                               gzipped=False),
    "content-length of 2 GB": hostile_warcs.content_length_2gb_warc,
    "no target URI": hostile_warcs.no_target_uri_warc,
    "wrong payload digest": hostile_warcs.wrong_payload_digest_warc,
    "warc 1.0": hostile_warcs.warc_1_0_file,
    **{f"target URI {case}": partial(hostile_warcs.odd_target_uri_warc, case=case)
       for case in hostile_warcs.ODD_URIS},
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_read_as_warcio_reads_them(case: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = HOSTILE[case](tmp_path / "hostile.warc.gz")
    _same_as_warcio(hostile.path, monkeypatch)


# Header lines as hostile writers write them: each replaces or joins a line of a block.
ODD_LINES = [
    b"X-Bare: lf\n", b" folded into the line before\r\n", b"\tfolded with a tab\r\n",
    b" X-Folded: a field if first\r\n",
    b"no colon at all\r\n", b"   \r\n", b"\x0c\r\n", b"\xc2\x85\r\n", b"X-Latin: caf\xe9\r\n",
    b"X-Utf8: caf\xc3\xa9\r\n", b"X-Spaces  :   padded   \r\n", b": no name\r\n",
    b"X-Empty:\r\n", b"X-Trailing: \xc2\xa0\r\n", b"X-Cr: a\rb\r\n", b"\r\n", b"\n",
    b"X-Long: " + b"a" * 20_000 + b"\r\n", b"Content-Length: 7\r\n",
]


def _mutated(data: bytes, rng: random.Random) -> bytes:
    """`data` (one record) with a few odd lines put into its WARC or its HTTP header block."""
    warc_end = data.index(b"\r\n\r\n") + 2
    http_end = data.index(b"\r\n\r\n", warc_end + 2) + 2
    lines = data[:http_end].split(b"\r\n")[:-1]
    for _ in range(rng.randint(1, 3)):
        where = rng.randint(1, len(lines) - 1)
        lines.insert(where, rng.choice(ODD_LINES).removesuffix(b"\r\n"))
    return b"\r\n".join(lines) + b"\r\n" + data[http_end:]


@pytest.mark.parametrize("seed", range(40))
def test_mutated_header_blocks_read_as_warcio_reads_them(seed: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    records = []
    for index in range(6):
        url, body = page(index)
        data = response_bytes(url, body * rng.choice((1, 50, 3000)), index=index).data
        records.append(_mutated(data, rng) if rng.random() < 0.6 else data)
    plain = tmp_path / "mutated.warc"
    plain.write_bytes(b"".join(records))
    gzipped = tmp_path / "mutated.warc.gz"
    gzipped.write_bytes(b"".join(member(data) for data in records))
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(b"".join(records), mtime=0))
    assert detect_layout(whole) is Layout.WHOLE_GZIP
    for path in (plain, gzipped, whole):
        _same_as_warcio(path, monkeypatch)


def test_a_record_cut_inside_its_http_headers_reads_as_warcio_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Content-Length ends the record in the middle of its HTTP header block: the limit cuts
    a line there, and the next record follows."""
    url, body = page(1)
    data = response_bytes(url, body, index=1).data
    warc_end = data.index(b"\r\n\r\n") + 4
    for cut in (3, 20, 40):
        length = str(cut).encode()
        head = b"\r\n".join(line if not line.startswith(b"Content-Length:")
                            else b"Content-Length: " + length
                            for line in data[:warc_end].split(b"\r\n"))
        record = head + data[warc_end:warc_end + cut] + b"\r\n\r\n"
        follow = response_bytes(*page(2), index=2).data
        path = tmp_path / f"cut-{cut}.warc.gz"
        path.write_bytes(member(record) + member(follow))
        _same_as_warcio(path, monkeypatch)
        plain = tmp_path / f"cut-{cut}.warc"
        plain.write_bytes(record + follow)
        _same_as_warcio(plain, monkeypatch)


def test_each_odd_line_at_each_place_reads_as_warcio_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, body = page(3)
    data = response_bytes(url, body, index=3).data
    http_end = data.index(b"\r\n\r\n", data.index(b"\r\n\r\n") + 2) + 2
    lines = data[:http_end].split(b"\r\n")[:-1]
    follow = response_bytes(*page(4), index=4).data
    for number, odd in enumerate(ODD_LINES):
        for where in range(1, len(lines)):
            changed = [*lines[:where], odd.removesuffix(b"\r\n"), *lines[where:]]
            record = b"\r\n".join(changed) + b"\r\n" + data[http_end:]
            plain = tmp_path / f"odd-{number}-{where}.warc"
            plain.write_bytes(record + follow)
            gzipped = tmp_path / f"odd-{number}-{where}.warc.gz"
            gzipped.write_bytes(member(record) + member(follow))
            for path in (plain, gzipped):
                assert _same_as_warcio(path, monkeypatch)
