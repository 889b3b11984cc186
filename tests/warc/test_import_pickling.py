"""A worker's read records reach the importing process whole: the compact pickling of the
import's records (`__reduce__`, for speed) keeps every field, whatever fields they have."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

from archive_pipelines.catalog import CaptureRow
from archive_pipelines.warc.import_record import Body, ReadRecord, Revisit
from archive_pipelines.warc.import_spans import StoredBody


def _every_field_set(cls: type) -> object:
    made = {}
    for number, field in enumerate(dataclasses.fields(cls)):
        made[field.name] = f"{field.name}-{number}"
    return cls(**made)


def test_every_field_survives_pickling() -> None:
    row = CaptureRow("page", "nav", "http://a.test/", "hash", "http://a.test", "http://a.test/",
                     1, 200, "http://a.test/", "[]", "text/html", "sha", 3, True, "err", 2, 1,
                     title="title")
    records = [
        ReadRecord(capture=row, body=Body("sha", 3, data=b"abc", path=Path("/x"), truncated=True),
                   revisit=Revisit("sha1:AB", "http://b.test/", "2024-01-01T00:00:00Z"),
                   payload_digest="sha1:AB", notes=["a note"]),
        StoredBody("sha", 3, created=True),
    ]
    for cls in (ReadRecord, Body, Revisit, StoredBody):  # any field added later is covered
        records.append(_every_field_set(cls))
    for record in records:
        loaded = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(loaded) is type(record)
        assert dataclasses.asdict(loaded) == dataclasses.asdict(record)  # type: ignore[call-overload]
