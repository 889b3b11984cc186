"""A cut body's page record says why it was cut, and the captures ingest takes it."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from archive_pipelines.blobstore import PutResult
from archive_pipelines.captures.record_parser import parse_record
from archive_pipelines.content_coding import CutKind
from frontier_service.archiving.page_record import page_record
from frontier_service.fetch.result import FetchResult

pytestmark = pytest.mark.unit

BODY = bytes(1_500_000)


def fetched(**fields: Any) -> FetchResult:
    return FetchResult(url="http://bombs.test/bomb/gzip/0", final_url="http://bombs.test/bomb/gzip/0",
                       status=200, body=BODY, content_type="text/html", started_at=time.time(),
                       **fields)


def record_line(result: FetchResult) -> bytes:
    put = PutResult(hashlib.sha256(BODY).hexdigest(), len(BODY), stored_bytes=len(BODY), created=True)
    record = page_record(session_id="s1", page_url=result.url, depth=1, page=(result, put))
    return json.dumps(record).encode()


@pytest.mark.parametrize(("kind", "reason"), [
    (CutKind.SIZE, "body over the 20 MiB cap"),
    (CutKind.DECODED_SIZE, "decoded size over the 20 MiB cap"),
    (CutKind.DECODE_RATIO, "decode ratio over 1000:1"),
])
def test_a_cut_record_carries_its_reason_and_ingests(kind: CutKind, reason: str) -> None:
    line = record_line(fetched(truncated=True, truncated_reason=reason, cut_kind=kind))
    response = json.loads(line)["requests"][0]["response"]
    assert response["body_truncated"] is True and response["body_truncated_reason"] == reason
    [capture] = parse_record(line, session_id="s1").captures
    assert capture.truncated and capture.error is None and capture.body_size == len(BODY)


def test_a_whole_body_has_no_reason_and_an_undecoded_one_says_its_coding() -> None:
    whole = json.loads(record_line(fetched()))["requests"][0]["response"]
    assert whole["body_truncated"] is False and whole["body_truncated_reason"] is None
    assert "body_encoding" not in whole
    line = record_line(fetched(body_encoding="x-hostile"))
    assert json.loads(line)["requests"][0]["response"]["body_encoding"] == "x-hostile"
    [capture] = parse_record(line, session_id="s1").captures
    assert not capture.truncated
