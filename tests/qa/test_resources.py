"""Resources replayed: expected URLs matched to the replay's request chains by the archived
URL they asked for (redirects followed, root-relative paths redirected into the archive),
answered only by a memento; browser-internal requests aside; leaks counted once each."""

from __future__ import annotations

import pytest

from archive_pipelines.qa.resources import (
    ExpectedResource,
    ReplayAnswer,
    archived_url,
    resource_score,
    stays_on,
)
from archive_pipelines.qa.scores import overall_score

pytestmark = pytest.mark.unit

ORIGIN = "http://replay.qa.invalid"
PAGE = "http://site.test/js/fetched.html"
JSON = "http://site.test/js/data/fetched.json"
IMAGE = "http://site.test/js/img/a.png"


def web(url: str, stamp: str = "20261128050000", modifier: str = "") -> str:
    return f"{ORIGIN}/web/{stamp}{modifier}/{url}"


def test_archived_urls_and_the_replay_origin() -> None:
    assert archived_url(web(IMAGE, modifier="im_"), ORIGIN) == IMAGE
    assert archived_url(f"{ORIGIN}/js/img/a.png", ORIGIN) is None
    assert archived_url("http://elsewhere.test/web/2026/x", ORIGIN) is None
    assert stays_on(f"{ORIGIN}/anything", ORIGIN) and stays_on("data:image/png;base64,AA", ORIGIN)
    assert stays_on("ws://replay.qa.invalid/js/socket", ORIGIN)
    assert not stays_on("http://replay.qa.invalid.evil.test/", ORIGIN)
    assert not stays_on("ws://10.0.0.1/socket", ORIGIN)


def test_chains_count_by_the_first_archived_url_and_only_mementos_answer() -> None:
    expected = [ExpectedResource(PAGE, 200), ExpectedResource(JSON, 200),
                ExpectedResource(IMAGE, 200), ExpectedResource("http://site.test/favicon.ico", 404),
                ExpectedResource(IMAGE, 200)]
    answers = [
        ReplayAnswer((web(PAGE, modifier="if_"),), 200, memento=True),
        # fetch("/js/data/fetched.json"): the replay redirects it into the archive, then to the
        # JSON's own second, where a memento answers.
        ReplayAnswer((f"{ORIGIN}/js/data/fetched.json", web(JSON), web(JSON, "20261128050001")),
                     200, memento=True),
        ReplayAnswer((web(IMAGE, modifier="im_"),), 404, memento=False),  # not in the archive
    ]
    score = resource_score(expected, answers, origin=ORIGIN, leaks=["http://x.test/", "http://x.test/"])
    assert (score.expected, score.replayed, score.missing) == (3, 2, (IMAGE,))
    assert score.fraction == pytest.approx(2 / 3)
    assert (score.leaks, score.leak_count) == (("http://x.test/",), 1)


def test_urls_match_on_their_canonical_form() -> None:
    expected = [ExpectedResource("http://Site.test:80/js/img/a.png", 200)]
    score = resource_score(expected, [ReplayAnswer((web(IMAGE),), 200, memento=True)], origin=ORIGIN)
    assert score.replayed == 1 and score.missing == ()


@pytest.mark.parametrize(("pixel", "replayed", "leaks", "overall"), [
    (1.0, 4, 0, 1.0), (0.95, 4, 0, 0.95), (1.0, 2, 0, 0.5), (0.4, 4, 0, 0.4),
    (1.0, 4, 1, 0.0), (None, 4, 0, 0.0)])
def test_the_overall_score_is_the_weaker_side_and_zero_with_a_leak_or_no_screenshot(
        pixel: float | None, replayed: int, leaks: int, overall: float) -> None:
    expected = [ExpectedResource(f"http://site.test/{n}", 200) for n in range(4)]
    answers = [ReplayAnswer((web(f"http://site.test/{n}"),), 200, memento=True) for n in range(replayed)]
    score = resource_score(expected, answers, origin=ORIGIN, leaks=["http://x.test/"] * leaks)
    assert overall_score(pixel, score) == pytest.approx(overall)
