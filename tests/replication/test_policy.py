"""Pure decisions: what counts as a copy, which pairs to copy, batching and cursors."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.catalog import CopyState, NeedyPage
from archive_pipelines.replication.director import chunk, next_cursor_after
from archive_pipelines.replication.policy import (
    ObjectPlan,
    choose_pairs,
    counts_as_copy,
    group_by_pair,
    plan_object,
)

pytestmark = pytest.mark.unit

NOW = datetime(2025, 1, 1, 12, tzinfo=UTC)
HOUR = timedelta(hours=1)


def state(status: str, minutes_ago: float | None = 0) -> CopyState:
    return CopyState(status, None if minutes_ago is None else NOW - timedelta(minutes=minutes_ago))


@pytest.mark.parametrize(("copy", "counts"), [
    (None, False),
    (state("present"), True),
    (state("present", None), True),
    (state("ongoing", 5), True),  # younger than max age: presumed in flight
    (state("ongoing", 61), False),  # older: its copier presumably died
    (state("ongoing", None), False),
    (state("missing"), False),
    (state("corrupted"), False),
])
def test_counts_as_copy(copy: CopyState | None, counts: bool) -> None:
    assert counts_as_copy(copy, now=NOW, max_age=HOUR) is counts


def plan(copies: dict[str, CopyState], retention: int, readable: set[str] | None = None,
         writable: set[str] | None = None, seed: int = 0) -> ObjectPlan:
    stores = {"a", "b", "c", "d"}
    return plan_object(copies, retention=retention, now=NOW, max_age=HOUR,
                       readable=stores if readable is None else readable,
                       writable=stores if writable is None else writable,
                       rng=random.Random(seed))


def test_an_object_at_the_policy_needs_nothing() -> None:
    result = plan({"a": state("present"), "b": state("ongoing", 1)}, retention=2)
    assert result.needed == 0 and result.pairs == [] and result.problem is None


@pytest.mark.parametrize("seed", range(20))
def test_pairs_have_distinct_destinations_and_present_sources(seed: int) -> None:
    copies = {"a": state("present"), "b": state("ongoing", 90), "c": state("corrupted")}
    result = plan(copies, retention=3, seed=seed)
    assert result.needed == 2 and result.problem is None
    destinations = [d for _s, d in result.pairs]
    assert len(destinations) == len(set(destinations)) == 2
    assert set(destinations) <= {"b", "d"}  # not a (present), not c (corrupted: left alone)
    assert all(source == "a" for source, _d in result.pairs)


def test_random_choice_spreads_over_destinations() -> None:
    seen = {plan({"a": state("present")}, retention=2, seed=s).pairs[0][1] for s in range(40)}
    assert seen == {"b", "c", "d"}


def test_no_source_or_too_few_destinations_is_a_problem() -> None:
    lost = plan({"a": state("corrupted"), "b": state("missing")}, retention=2)
    assert lost.pairs == [] and lost.problem == "no readable store holds a present copy"
    unreadable = plan({"a": state("present")}, retention=2, readable={"b"})
    assert unreadable.problem is not None
    short = plan({"a": state("present")}, retention=4, writable={"a", "b"})
    assert short.pairs == [("a", "b")] and short.needed == 3
    assert short.problem is not None and "only 1 writable" in short.problem


def test_choose_pairs_never_exceeds_what_exists() -> None:
    rng = random.Random(1)
    assert choose_pairs(["a"], [], 2, rng=rng) == []
    pairs = choose_pairs(["a", "b"], ["c", "d", "e"], 2, rng=rng)
    assert len(pairs) == 2 and len({d for _s, d in pairs}) == 2


def test_choose_pairs_draws_only_where_there_is_a_choice() -> None:
    rng = random.Random(7)
    before = rng.getstate()
    assert choose_pairs(["a"], ["b", "c"], 2, rng=rng) == [("a", "b"), ("a", "c")]
    assert choose_pairs(["a"], ["b"], 3, rng=rng) == [("a", "b")]
    assert rng.getstate() == before
    sources = {s for _ in range(40) for s, _d in choose_pairs(["a", "b"], ["c"], 1, rng=rng)}
    assert sources == {"a", "b"}


def test_group_by_pair() -> None:
    groups = group_by_pair([("x", [("a", "b")]), ("y", [("a", "b"), ("a", "c")]),
                            ("z", [])])
    assert groups == {("a", "b"): ["x", "y"], ("a", "c"): ["y"]}


def test_chunk() -> None:
    assert chunk(["a", "b", "c"], 2) == [["a", "b"], ["c"]]
    assert chunk([], 5) == []
    with pytest.raises(ValueError):
        chunk(["a"], 0)


@pytest.mark.parametrize(("page", "cursor", "expected"), [
    (NeedyPage([(5, "x")], 9, reached_end=False), 0, (9, False)),  # window done
    (NeedyPage([(5, "x")], 5, reached_end=False), 0, (5, False)),  # page full
    (NeedyPage([(5, "x")], 5, reached_end=True), 3, (0, True)),  # end of the catalog
    (NeedyPage([], None, reached_end=True), 40, (0, True)),  # cursor past the end
])
def test_next_cursor(page: NeedyPage, cursor: int, expected: tuple[int, bool]) -> None:
    assert next_cursor_after(page, cursor) == expected


@pytest.mark.parametrize(("prefix", "expected"), [
    (None, ("", None)), ("", ("", None)), ("00", ("00", "01")), ("0f", ("0f", "10")),
    ("ab", ("ab", "ac")), ("ff", ("ff", None)), ("a", ("a", "b")), ("f", ("f", None)),
])
def test_prefix_range(prefix: str | None, expected: tuple[str, str | None]) -> None:
    assert prefix_range(prefix) == expected


@pytest.mark.parametrize("bad", ["AB", "zz", "0x", "a" * 65])
def test_prefix_range_refuses_non_hex(bad: str) -> None:
    with pytest.raises(ValueError):
        prefix_range(bad)
