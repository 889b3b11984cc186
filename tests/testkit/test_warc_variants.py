"""The same records per-record gzipped, whole-file gzipped and plain."""

from __future__ import annotations

import gzip
import zlib
from io import BytesIO
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from archive_testkit.warc_reading import read_warc
from archive_testkit.warc_variants import VARIANTS, write_warc_variants

pytestmark = pytest.mark.unit


def test_the_three_files_hold_the_same_bytes_once_decompressed(tmp_path: Path) -> None:
    paths = write_warc_variants(tmp_path)
    assert sorted(paths) == sorted(VARIANTS)
    plain = paths["plain"].read_bytes()
    assert plain.startswith(b"WARC/1.1\r\n")
    assert gzip.decompress(paths["per-record-gzip"].read_bytes()) == plain
    assert gzip.decompress(paths["whole-gzip"].read_bytes()) == plain
    records = read_warc(plain)
    assert [r.kind for r in records].count("revisit") == 3
    assert read_warc(paths["per-record-gzip"].read_bytes()) == records


def test_whole_gzip_is_one_member_that_warcio_refuses_to_read_as_records(tmp_path: Path) -> None:
    paths = write_warc_variants(tmp_path)
    data = paths["whole-gzip"].read_bytes()
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    inflater.decompress(data)
    assert inflater.eof and inflater.unused_data == b""  # one member, nothing after it
    with pytest.raises(ArchiveLoadFailed, match="non-chunked gzip"), paths["whole-gzip"].open("rb") as stream:
        list(ArchiveIterator(stream))
    with gzip.open(paths["whole-gzip"]) as stream:  # read as one stream, the records are all there
        kinds = [record.rec_type for record in ArchiveIterator(BytesIO(stream.read()), check_digests="raise")]
    assert kinds == [r.kind for r in read_warc(paths["plain"].read_bytes())]
