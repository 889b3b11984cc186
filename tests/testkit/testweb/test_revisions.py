"""The test web's revisions and validators: which pages change, their ETag / Last-Modified,
and which conditional requests are answered 304."""

from __future__ import annotations

import pytest

from archive_testkit.testweb import TestWebConfig, host_name
from archive_testkit.testweb.revisions import last_change, not_modified, revised
from archive_testkit.testweb.routes import NOT_FOUND, Reply, resolve

pytestmark = pytest.mark.unit

WEB = TestWebConfig(seed=3, hosts=2, pages_per_host=200, special_fraction=0.0)
HOST = host_name(WEB, 0)
PATHS = [f"/p{n}" for n in range(400)]


def page(config: TestWebConfig, path: str = "/") -> Reply:
    return revised(config, HOST, path, resolve(config, HOST, path))


def headers(reply: Reply) -> dict[str, str]:
    return dict(reply.headers)


def test_a_200_carries_validators_and_a_404_none() -> None:
    found = headers(page(WEB))
    assert found["ETag"].startswith('"') and found["Last-Modified"].endswith(" GMT")
    assert "ETag" not in headers(revised(WEB, HOST, "/nowhere", NOT_FOUND))
    assert "ETag" not in headers(page(WEB.with_changes(validators_fraction=0.0)))


def test_a_revision_changes_its_share_of_the_pages_and_keeps_the_rest() -> None:
    later = WEB.with_changes(revision=1, changed_fraction=0.3)
    changed = [p for p in PATHS if last_change(later, HOST, p)]
    assert 0.2 * len(PATHS) < len(changed) < 0.4 * len(PATHS)
    assert all(last_change(WEB, HOST, p) == 0 for p in PATHS)  # revision 0: nothing changed
    body = resolve(WEB, HOST, "/").body
    path = next(p for p in PATHS if last_change(later, HOST, p))
    assert revised(later, HOST, path, Reply(200, body)).body.endswith(b"<!-- revision 1 -->\n")
    same = next(p for p in PATHS if not last_change(later, HOST, p))
    assert revised(later, HOST, same, Reply(200, body)).body == body
    two = WEB.with_changes(revision=2, changed_fraction=0.3)  # changes stay changed
    assert all(last_change(two, HOST, p) >= 1 for p in changed)


@pytest.mark.parametrize(("if_none_match", "if_modified_since", "expected"), [
    ("{etag}", None, True),
    ('W/{etag}', None, True),
    ('"other", {etag}', None, True),
    ("*", None, True),
    ('"other"', None, False),
    ('"other"', "{modified}", False),  # If-None-Match decides when both are sent
    (None, "{modified}", True),
    (None, "Mon, 01 Jan 2023 00:00:00 GMT", False),
    (None, "not a date", False),
    (None, None, False),
])
def test_conditional_requests(if_none_match: str | None, if_modified_since: str | None,
                              expected: bool) -> None:
    reply = page(WEB)
    values = {"etag": headers(reply)["ETag"], "modified": headers(reply)["Last-Modified"]}
    assert not_modified(reply, None if if_none_match is None else if_none_match.format(**values),
                        None if if_modified_since is None
                        else if_modified_since.format(**values)) is expected


def test_a_changed_page_no_longer_matches_the_old_validators() -> None:
    later = WEB.with_changes(revision=1, changed_fraction=0.3)
    path = next(p for p in PATHS if last_change(later, HOST, p))
    before = headers(revised(WEB, HOST, path, Reply(200, b"<p>x</p>")))
    after = revised(later, HOST, path, Reply(200, b"<p>x</p>"))
    assert not not_modified(after, before["ETag"], None)
    assert not not_modified(after, None, before["Last-Modified"])
