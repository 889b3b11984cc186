import pytest

from frontier_service.archiving.stored_bodies import StoredBodies

pytestmark = pytest.mark.unit


def test_it_remembers_up_to_its_limit_forgetting_the_least_recently_seen() -> None:
    stored = StoredBodies(limit=3)
    for digest in ("a", "b", "c"):
        stored.add(digest)
    assert "a" in stored  # seen again: now the most recent
    stored.add("d")

    assert "b" not in stored and len(stored) == 3
    assert all(digest in stored for digest in ("a", "c", "d"))


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        StoredBodies(limit=0)
