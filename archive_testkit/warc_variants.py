"""One set of records in the three ways WARC files are compressed in the field.

`per-record-gzip`: one gzip member per record (what the WARC standard recommends and most
writers do); `whole-gzip`: one gzip member over the whole file (`gzip file.warc`, as some
tools and people do), which a reader cannot seek into; `plain`: no compression. The records
are those of `revisit_warcs` (responses, resolvable revisits and one unresolvable revisit),
identical in all three files, byte for byte once decompressed.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from archive_testkit.revisit_warcs import SAMPLE_PAGES, write_revisit_records

VARIANTS = ("per-record-gzip", "whole-gzip", "plain")


def write_warc_variants(directory: Path) -> dict[str, Path]:
    """Write the sample records three ways into `directory`; returns their paths by variant name."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "per-record-gzip": directory / "per-record.warc.gz",
        "whole-gzip": directory / "whole.warc.gz",
        "plain": directory / "plain.warc",
    }
    with paths["per-record-gzip"].open("wb") as stream:
        write_revisit_records(stream, pages=SAMPLE_PAGES, gzip=True)
    with paths["plain"].open("wb") as stream:
        write_revisit_records(stream, pages=SAMPLE_PAGES, gzip=False)
    with paths["whole-gzip"].open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as stream:
        write_revisit_records(stream, pages=SAMPLE_PAGES, gzip=False)
    return paths
