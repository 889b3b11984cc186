"""Metadata helpers: pandas frames as typed Dagster tables."""

import dagster as dg
import pandas as pd
import pytest

from archive_pipelines.assets.metadata import table
from archive_pipelines.assets.replication import copies_frame

pytestmark = pytest.mark.unit


def test_a_frame_becomes_a_typed_table() -> None:
    frame = pd.DataFrame({"site": ["https://a.test", "https://b.test"], "pages": [3, 1],
                          "ratio": [1.5, 2.0]})
    value = table(frame)
    assert [(c.name, c.type) for c in value.schema.columns] == [
        ("site", "string"), ("pages", "int"), ("ratio", "float")]
    assert [dict(r.data) for r in value.records] == [
        {"site": "https://a.test", "pages": 3, "ratio": 1.5},
        {"site": "https://b.test", "pages": 1, "ratio": 2.0}]
    assert all(type(r.data["pages"]) is int for r in value.records)  # not numpy's int64
    assert isinstance(table(pd.DataFrame({"a": []})), dg.TableMetadataValue)


def test_copies_per_store_has_every_status_for_every_store() -> None:
    frame = copies_frame({"replica1": {"present": 7}, "primary": {"present": 9, "missing": 1}})
    assert frame.to_dict("records") == [
        {"store": "primary", "missing": 1, "ongoing": 0, "present": 9, "corrupted": 0},
        {"store": "replica1", "missing": 0, "ongoing": 0, "present": 7, "corrupted": 0}]
