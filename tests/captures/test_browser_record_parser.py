"""A browser page load's record -> its captures: the HTTP exchanges as for any page, refused
requests left out, the screenshot and the DOM as captures of their own; a bad `browser`
field refuses the record, naming the field."""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Callable

import pytest

from archive_pipelines.captures.record_parser import RecordRefused, parse_record
from tests.helpers.browser_records import (
    AT_S,
    DATA_URL,
    IMAGE_URL,
    PAGE_URL,
    BrowserBodies,
    Record,
    browser_record,
    record_line,
)

pytestmark = pytest.mark.unit

SESSION = str(uuid.uuid4())
BODIES = BrowserBodies()


def record() -> Record:
    return browser_record(SESSION, BODIES)


def test_a_browser_page_load_is_its_exchanges_then_its_screenshot_and_dom() -> None:
    parsed = parse_record(record_line(record()), session_id=SESSION)
    assert [(c.kind, c.url, c.status_code) for c in parsed.captures] == [
        ("page", PAGE_URL, 200), ("request", DATA_URL, 200), ("request", IMAGE_URL, 200),
        ("screenshot", PAGE_URL, None), ("dom", PAGE_URL, None)]
    page, *_, screenshot, dom = parsed.captures
    at_ms = round(AT_S * 1000)
    for rendering, body, content_type in ((screenshot, BODIES.screenshot, "image/png"),
                                          (dom, BODIES.dom, "text/html; charset=utf-8")):
        assert rendering.body_sha256 == hashlib.sha256(body).hexdigest()
        assert (rendering.body_size, rendering.content_type) == (len(body), content_type)
        assert (rendering.fetched_ms, rendering.navigation_id) == (at_ms, page.navigation_id)
        assert (rendering.error, rendering.title, rendering.depth, rendering.truncated) == (
            None, None, None, False)
    assert page.title == "Items" and page.fetched_ms == at_ms


def test_the_renderings_bear_the_pages_final_url() -> None:
    moved = record()
    final = "http://js.example.test/app/home"
    moved["final_url"] = final
    moved["requests"][0]["url"] = final
    moved["requests"][0]["redirects"] = [{"url": PAGE_URL, "status": 302, "location": final}]
    captures = parse_record(record_line(moved), session_id=SESSION).captures
    assert [(c.kind, c.url) for c in captures if c.kind in ("redirect", "screenshot", "dom")] == [
        ("redirect", PAGE_URL), ("screenshot", final), ("dom", final)]


def test_a_page_load_without_a_screenshot_or_dom_has_none() -> None:
    bare = record()
    bare["browser"].update(screenshot=None, dom=None, timed_out=True,
                           error="the page did not settle within 20 s")
    kinds = [c.kind for c in parse_record(record_line(bare), session_id=SESSION).captures]
    assert kinds == ["page", "request", "request"]


def test_a_page_whose_document_was_refused_is_a_failed_page_with_the_reason() -> None:
    refused = record()
    reason = "robots.txt of js.example.test disallows /app/"
    refused["requests"] = [{**refused["requests"][0], "response": None, "error": reason,
                            "refused": reason}]
    refused["browser"].update(screenshot=None, dom=None, error=f"the page's document was refused: {reason}")
    [page] = parse_record(record_line(refused), session_id=SESSION).captures
    assert (page.kind, page.url, page.status_code, page.error) == ("page", PAGE_URL, None, reason)


def test_a_record_without_browser_parses_as_before() -> None:
    plain = record()
    del plain["browser"]
    for entry in plain["requests"]:
        for key in ("request_id", "method", "resource_type"):
            del entry[key]
    plain["requests"] = [entry for entry in plain["requests"] if "refused" not in entry]
    kinds = [c.kind for c in parse_record(record_line(plain), session_id=SESSION).captures]
    assert kinds == ["page", "request", "request"]


def _set(path: str, value: object) -> Callable[[Record], None]:
    *parents, last = path.split(".")

    def change(target: Record) -> None:
        for name in parents:
            target = target[int(name)] if name.isdigit() else target[name]
        target[last] = value
    return change


REFUSALS: dict[str, tuple[Callable[[Record], None], str]] = {
    "not an object": (_set("browser", ["always"]), "browser is not an object"),
    "unknown mode": (_set("browser.mode", "sometimes"), "browser.mode 'sometimes'"),
    "no mode": (_set("browser.mode", None), "browser.mode None"),
    "signals not a list": (_set("browser.signals", "script-fetch"), "browser.signals"),
    "a signal not a name": (_set("browser.signals", ["script fetch; rm"]), "browser.signals"),
    "timed_out not a bool": (_set("browser.timed_out", "no"), "browser.timed_out"),
    "negative allowance": (_set("browser.over_allowance", -1), "browser.over_allowance"),
    "error not text": (_set("browser.error", {"message": "x"}), "browser.error"),
    "screenshot not an object": (_set("browser.screenshot", "shot.png"),
                                 "browser.screenshot is not an object"),
    "screenshot without hash": (_set("browser.screenshot.body_hash", None),
                                "browser.screenshot.body_hash is missing"),
    "bad dom hash": (_set("browser.dom.body_hash", "md5:00"), "browser.dom.body_hash"),
    "bad screenshot size": (_set("browser.screenshot.body_size", -5),
                            "browser.screenshot.body_size"),
    "screenshot not an image": (_set("browser.screenshot.body_type", "text/html"),
                                "browser.screenshot.body_type"),
    "dom not html": (_set("browser.dom.body_type", "image/png"), "browser.dom.body_type"),
    "refused not text": (_set("requests.3.refused", True), "requests[3].refused"),
    "refused without a url": (_set("requests.4.url", None), "requests[4].url"),
}


@pytest.mark.parametrize("name", REFUSALS)
def test_a_bad_browser_field_refuses_the_record_naming_it(name: str) -> None:
    change, words = REFUSALS[name]
    bad = copy.deepcopy(record())
    change(bad)
    with pytest.raises(RecordRefused, match=words.replace("[", r"\[").replace("(", r"\(")):
        parse_record(record_line(bad), session_id=SESSION)


def test_an_answered_request_to_a_non_http_url_still_refuses_the_record() -> None:
    bad = record()
    bad["requests"][4].pop("refused")  # the WebSocket, as if it had been fetched
    with pytest.raises(RecordRefused, match=r"requests\[4\]\.url"):
        parse_record(record_line(bad), session_id=SESSION)
