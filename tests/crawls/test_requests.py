"""The crawl request protocol on a real catalog (SQLite and PostgreSQL): queued, taken once,
kept alive, taken again once its crawler went quiet, finished; crawlers seen or not."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.crawls.requests import (
    cancel_crawl,
    claim_crawl,
    crawler_alive,
    crawler_presence,
    finish_crawl,
    get_crawl,
    heartbeat,
    list_crawls,
    queue_crawl,
    release_crawl,
    waiting_too_long,
)

DEFINITION = {"seeds": ["http://site.test/"], "max_depth": 2}


def test_a_queued_crawl_is_taken_once_and_finished(catalog: Catalog) -> None:
    first = queue_crawl(catalog, DEFINITION, name="weekly", requested_by="dagster run r1")
    second = queue_crawl(catalog, DEFINITION, name="weekly", requested_by="schedule weekly")
    assert first.state == "queued" and first.crawl_id.startswith("weekly-")
    assert first.crawl_id.endswith(f"-{first.id}") and first.crawl_id != second.crawl_id
    assert first.definition == DEFINITION

    taken = claim_crawl(catalog, worker="a:1")
    assert taken is not None and taken.id == first.id  # oldest first
    assert (taken.state, taken.claimed_by, taken.attempts) == ("running", "a:1", 1)
    other = claim_crawl(catalog, worker="b:2")
    assert other is not None and other.id == second.id
    assert claim_crawl(catalog, worker="c:3") is None  # nothing left

    assert heartbeat(catalog, taken.id, worker="a:1", progress={"pages": 5})
    assert not heartbeat(catalog, taken.id, worker="b:2", progress={"pages": 9})  # not b's
    assert get_crawl(catalog, taken.crawl_id).progress == {"pages": 5}  # type: ignore[union-attr]
    assert not finish_crawl(catalog, taken.id, worker="b:2", state="finished", outcome={})
    assert finish_crawl(catalog, taken.id, worker="a:1", state="finished",
                        outcome={"stopped_because": "nothing left"}, progress={"pages": 7})
    done = get_crawl(catalog, taken.crawl_id)
    assert done is not None and done.done and done.progress == {"pages": 7}
    assert done.outcome == {"stopped_because": "nothing left"} and done.finished_at is not None
    assert not heartbeat(catalog, taken.id, worker="a:1", progress={})  # ended: stop it
    with pytest.raises(ValueError, match="ends as one of"):
        finish_crawl(catalog, other.id, worker="b:2", state="running", outcome={})
    assert [r.crawl_id for r in list_crawls(catalog, name="weekly")] == [second.crawl_id,
                                                                          first.crawl_id]
    assert [r.id for r in list_crawls(catalog, states=("running",))] == [second.id]


def test_a_crawl_whose_crawler_went_quiet_is_taken_again_first(catalog: Catalog) -> None:
    running = queue_crawl(catalog, DEFINITION, name="daily", requested_by="test")
    assert claim_crawl(catalog, worker="dead:1") is not None
    fresh = queue_crawl(catalog, DEFINITION, name="daily", requested_by="test")
    # Its heartbeat is recent: the queued one is next.
    taken = claim_crawl(catalog, worker="b:2", stale_after_s=60)
    assert taken is not None and taken.id == fresh.id
    # Once the first crawler's heartbeat is older than stale_after_s, it is resumed.
    resumed = claim_crawl(catalog, worker="new:3", stale_after_s=0)
    assert resumed is not None and resumed.id == running.id
    assert (resumed.crawl_id, resumed.attempts, resumed.claimed_by) == (running.crawl_id, 2, "new:3")
    assert not heartbeat(catalog, running.id, worker="dead:1", progress={})  # not its own now


def test_a_crawler_late_with_its_own_heartbeat_never_takes_its_crawl_a_second_time(
        catalog: Catalog) -> None:
    request = queue_crawl(catalog, DEFINITION, name="daily", requested_by="test")
    assert claim_crawl(catalog, worker="busy:1") is not None
    # Its heartbeat is stale (a loaded machine), but it still runs the crawl: not again.
    assert claim_crawl(catalog, worker="busy:1", stale_after_s=0) is None
    assert heartbeat(catalog, request.id, worker="busy:1", progress={})
    taken = claim_crawl(catalog, worker="other:2", stale_after_s=0)  # another crawler may
    assert taken is not None and (taken.id, taken.attempts) == (request.id, 2)


def test_released_crawls_are_queued_again_and_cancelled_ones_never_run(catalog: Catalog) -> None:
    request = queue_crawl(catalog, DEFINITION, name="n", requested_by="test")
    taken = claim_crawl(catalog, worker="a:1")
    assert taken is not None and release_crawl(catalog, taken.id, worker="a:1")
    again = claim_crawl(catalog, worker="b:2")
    assert again is not None and again.id == request.id and again.attempts == 2
    later = queue_crawl(catalog, DEFINITION, name="n", requested_by="test")
    cancelled = cancel_crawl(catalog, later.crawl_id)
    assert cancelled is not None and cancelled.state == "cancelled"
    assert claim_crawl(catalog, worker="c:3") is None
    assert cancel_crawl(catalog, "no-such-crawl") is None
    assert cancel_crawl(catalog, again.crawl_id).state == "running"  # type: ignore[union-attr]


def test_crawlers_racing_for_requests_take_each_one_once(catalog: Catalog) -> None:
    requests = [queue_crawl(catalog, DEFINITION, name="race", requested_by="test").id
                for _ in range(12)]
    taken: list[int] = []
    lock = threading.Lock()

    def crawler(number: int) -> None:
        while (request := claim_crawl(catalog, worker=f"w:{number}")) is not None:
            with lock:
                taken.append(request.id)

    threads = [threading.Thread(target=crawler, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == sorted(requests)


def test_a_queued_crawl_with_no_crawler_is_seen_as_such(catalog: Catalog) -> None:
    presence = crawler_presence(catalog)
    assert not presence.alive and "no crawler has ever run" in presence.describe()
    request = queue_crawl(catalog, DEFINITION, name="n", requested_by="test")
    assert waiting_too_long(catalog, older_than_s=600) == []
    later = utcnow() + timedelta(minutes=11)
    assert [r.id for r in waiting_too_long(catalog, older_than_s=600, now=later)] == [request.id]

    crawler_alive(catalog, "host:7", running=0)
    presence = crawler_presence(catalog)
    assert presence.alive and "host:7 (0 running)" in presence.describe()
    assert not crawler_presence(catalog, now=later).alive  # quiet for 11 minutes: gone
    assert "was last seen" in crawler_presence(catalog, now=later).describe()
    crawler_alive(catalog, "host:7", running=0, stopping=True)
    assert not crawler_presence(catalog).alive
