"""An adopted ArchiveBox collection for the replay tests: generated as ArchiveBox 0.7 leaves
one, adopted in place by the CLI (`update --import-orphans --migrate-fs`), and the response
records its snapshots' WARCs hold, read with warcio."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.archivebox import Aged07, generate_collection
from tests.helpers.cli import run_cli


@dataclass(frozen=True)
class WarcResponse:
    """A response record of a snapshot's WARC."""

    url: str
    sha256: str  # of the payload
    content_type: str  # as the recorded HTTP headers say, parameters dropped
    first: bool  # the first response of its WARC: the snapshot's page (wget saves it first)


def warc_responses(data: Path) -> list[WarcResponse]:
    """Every response record of the snapshots' WARCs under `data`, WARC by WARC."""
    found = []
    for path in sorted(data.glob("archive/*/warc/*.warc.gz")):
        with open(path, "rb") as handle:
            first = True
            for record in ArchiveIterator(handle):
                if record.rec_type != "response":
                    continue
                assert record.http_headers is not None, path
                found.append(WarcResponse(
                    url=record.rec_headers.get_header("WARC-Target-URI"),
                    sha256=hashlib.sha256(record.content_stream().read()).hexdigest(),
                    content_type=(record.http_headers.get_header("Content-Type") or "")
                    .split(";")[0].strip().lower(),
                    first=first))
                first = False
    return found


def adopted_collection(data: Path, *, snapshots: int, seed: int,
                       files_per_snapshot: int = 20) -> list[WarcResponse]:
    """An ArchiveBox 0.7 collection of `snapshots` written to `data`, made our data dir and
    adopted by the CLI; the response records of its WARCs."""
    generate_collection(data, Aged07(files_per_snapshot=files_per_snapshot),
                        snapshots=snapshots, seed=seed)
    initialize(Settings(data_dir=data))
    responses = warc_responses(data)
    adopted = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    return responses
