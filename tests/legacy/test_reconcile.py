from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from archive_pipelines.legacy.archive_result import LegacyResult
from archive_pipelines.legacy.reconcile import (
    CatalogSnapshotView,
    best_title,
    merge_results,
    reconcile,
)

URL = "https://example.com/a"


@dataclass(frozen=True)
class Record:
    url: str = URL
    timestamp: str = "1600000000"
    title: str | None = None
    tags: Sequence[str] = ()
    results: Mapping[str, Sequence[LegacyResult]] = field(default_factory=dict)


def at(minute: int) -> datetime:
    return datetime(2024, 1, 1, 12, minute, tzinfo=UTC)


def run(minute: int | None, output: str | None = "out", status: str = "succeeded") -> LegacyResult:
    return LegacyResult(output=output, status=status, start_ts=None if minute is None else at(minute))


@pytest.mark.parametrize(
    ("catalog", "index", "expected"),
    [
        ("Short", "A longer title", "A longer title"),
        ("A longer title", "Short", "A longer title"),
        (URL, "Short", "Short"),  # the URL is not a title, however long
        ("Short", f"  {URL}  ", "Short"),
        (None, "  padded  ", "padded"),
        ("", None, None),
        (URL, URL, None),
        ("Same", "Same", "Same"),
        ("Tie1", "Tie2", "Tie1"),  # equal length: the catalog's
    ],
)
def test_title_is_the_longest_that_is_not_the_url(
    catalog: str | None, index: str | None, expected: str | None
) -> None:
    assert best_title(URL, catalog, index) == expected
    merged = reconcile(Record(title=index), CatalogSnapshotView(URL, "1600000000", title=catalog))
    assert merged.title == expected
    assert merged.catalog.title == (catalog != expected)
    assert merged.index.title == (index != expected)


@pytest.mark.unit
def test_tags_are_a_trimmed_case_sensitive_sorted_union() -> None:
    merged = reconcile(
        Record(tags=["python", " News ", "", "a"]),
        CatalogSnapshotView(URL, "1600000000", tags=("news", "python", "zeta")),
    )
    assert merged.tags == ("News", "a", "news", "python", "zeta")
    assert merged.new_tags_for_catalog == ("News", "a")
    assert merged.catalog.tags and merged.index.tags


@pytest.mark.unit
def test_equal_tags_change_nothing() -> None:
    merged = reconcile(Record(tags=["b", "a"]), CatalogSnapshotView(URL, "1", tags=("a", "b")))
    assert not merged.catalog.tags and not merged.index.tags
    assert merged.new_tags_for_catalog == ()


@pytest.mark.unit
def test_results_merge_by_extractor_and_the_catalog_wins_conflicts() -> None:
    catalog_wget = run(1, "example.com/a.html", "succeeded")
    index_wget_same_start = run(1, None, "failed")  # same run, index says otherwise
    index_pdf_same_output = run(9, "output.pdf")
    catalog_pdf = run(5, "output.pdf")
    index_only = run(3, "screenshot.png")
    merged = reconcile(
        Record(
            results={
                "wget": [index_wget_same_start],
                "pdf": [index_pdf_same_output],
                "screenshot": [index_only],
            }
        ),
        CatalogSnapshotView(URL, "1", results={"wget": [catalog_wget], "pdf": [catalog_pdf]}),
    )
    assert merged.results == {
        "pdf": (catalog_pdf,),
        "screenshot": (index_only,),
        "wget": (catalog_wget,),
    }
    assert merged.new_results_for_catalog == {"screenshot": (index_only,)}
    assert merged.catalog.results
    assert merged.index.results  # index.json must learn the catalog's version of wget/pdf


@pytest.mark.unit
def test_distinct_runs_of_one_extractor_are_all_kept_in_time_order() -> None:
    older, newer = run(1, "a.html"), run(7, "b.html")
    naive = LegacyResult(output="c.html", start_ts=datetime(2024, 1, 1, 12, 4))  # naive = UTC
    merged, added = merge_results({"wget": [newer]}, {"wget": [older, naive, run(None, None)]})
    assert merged["wget"][0] == run(None, None)
    assert merged["wget"][1:] == (older, naive, newer)
    assert len(added["wget"]) == 3


@pytest.mark.unit
def test_duplicate_runs_inside_the_index_collapse() -> None:
    merged, added = merge_results({}, {"dom": [run(1, "output.html"), run(1, "output.html")]})
    assert merged == {"dom": (run(1, "output.html"),)}
    assert added == merged


@pytest.mark.unit
def test_nothing_changes_when_both_sides_agree() -> None:
    results = {"dom": (run(1, "output.html"),)}
    merged = reconcile(
        Record(title="T", tags=["a"], results=results),
        CatalogSnapshotView(URL, "1600000000", title="T", tags=("a",), results=results),
    )
    assert not merged.catalog.any and not merged.index.any
    assert merged.new_results_for_catalog == {}


@pytest.mark.unit
def test_a_snapshot_missing_from_the_catalog_takes_everything_from_the_index() -> None:
    results = {"dom": (run(1, "output.html"),)}
    merged = reconcile(Record(title="T", tags=["a"], results=results), None)
    assert (merged.url, merged.timestamp, merged.title, merged.tags) == (URL, "1600000000", "T", ("a",))
    assert merged.new_results_for_catalog == results
    assert merged.catalog.title and merged.catalog.tags and merged.catalog.results
    assert not merged.index.any


@pytest.mark.unit
def test_catalog_url_and_timestamp_win() -> None:
    merged = reconcile(Record(timestamp="1600000000.0"), CatalogSnapshotView(URL, "1600000000"))
    assert merged.timestamp == "1600000000"
