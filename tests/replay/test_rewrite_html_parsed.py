"""The HTML rewriter checked by a browser's parser (lexbor, through selectolax): the rewritten
page has the same elements, text and attributes as the original, and each URL attribute
is the original URL inside the archive, on the test web's pages and on hostile soup."""

from __future__ import annotations

import random
import re
from urllib.parse import urljoin

import pytest
from selectolax.lexbor import LexborHTMLParser

from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.html_attributes import URL_ATTRIBUTES
from archive_pipelines.replay.rewrite_html import HtmlRewriter
from archive_testkit.testweb import TestWebConfig, absolute_links, hosts_where, page_path, render_page
from archive_testkit.testweb.asset_pages import GALLERY, asset_file

pytestmark = pytest.mark.unit

TS = "20240102030405"
WEB = TestWebConfig(seed=11, hosts=40, pages_per_host=50, special_fraction=0.5)
HOSTS = hosts_where(WEB, lambda traits: traits.alive)[:4]
_ARCHIVED = re.compile(rf"/web/{TS}(?P<modifier>[a-z]{{2}}_)?/(?P<url>https?://.*)", re.DOTALL)
_SRCSET_URL = re.compile(r"(?:^|,)[\t\n\f\r ]*([^\t\n\f\r ,][^\t\n\f\r ]*)")


def rewrite(page: bytes, page_url: str, *, chunk: int) -> bytes:
    rewriter = HtmlRewriter(ArchiveUrls(timestamp=TS, page_url=page_url), banner=None)
    pieces = [rewriter.feed(page[start:start + chunk]) for start in range(0, len(page), chunk)]
    return b"".join(pieces) + rewriter.close()


def nodes(page: bytes) -> list[tuple[str, str, dict[str, str | None]]]:
    """(tag, text, attributes) of every node as a browser builds the document."""
    tree = LexborHTMLParser(page.decode("utf-8", "replace"))
    return [(node.tag or "", node.text_content or "" if node.tag == "-text" else "",
             dict(node.attributes)) for node in tree.root.traverse(include_text=True)]


def unarchived(value: str) -> str:
    match = _ARCHIVED.fullmatch(value)
    assert match is not None, f"not an archive URL: {value!r}"
    return match.group("url")


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("index", [0, 7, 23])
def test_every_link_of_a_test_web_page_is_its_archive_url(host: str, index: int) -> None:
    path = page_path(index)
    page_url = f"http://{host}{path}"
    out = rewrite(render_page(WEB, host, path), page_url, chunk=4096)
    links = [attributes["href"] for tag, _, attributes in nodes(out) if tag == "a"]
    archived = [unarchived(link) for link in links if link and link.startswith("/web/")]
    expected = absolute_links(WEB, host, path)
    assert [url.split("#", 1)[0] for url in archived] == expected
    for link in links:  # what is not in the archive is no http(s) URL
        assert link is None or link.startswith("/web/") or not _resolves_to_http(page_url, link)


def test_every_asset_of_the_gallery_is_named_by_its_archive_url() -> None:
    found = asset_file(GALLERY)
    assert found is not None
    page_url = f"http://{HOSTS[0]}{GALLERY}"
    out = rewrite(found[0], page_url, chunk=97)
    urls: list[tuple[str, str]] = []  # (element.attribute, value)
    for tag, text, attributes in nodes(out):
        for name, value in attributes.items():
            if value is None:
                continue
            if name in URL_ATTRIBUTES.get(tag, {}) and "srcset" not in name:
                urls.append((f"{tag}.{name}", value))
            elif "srcset" in name:
                urls.extend((f"{tag}.{name}", url) for url in _SRCSET_URL.findall(value))
            elif name == "style":
                urls.extend((f"{tag}.style", url) for url in re.findall(r"url\(\"?([^\")]*)", value))
        if tag == "-text" and "url(" in text:  # the <style> (its comments left out)
            css = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
            urls.extend(("style", url) for url in re.findall(r"""url\(["']?([^"')]*)""", css))
    assert urls, "the gallery names assets"
    for where, value in urls:
        if value.startswith("data:"):
            continue
        assert value.startswith(f"/web/{TS}"), (where, value)
        assert unarchived(value).startswith(f"http://{HOSTS[0]}/") or "cdn.invalid" in value
    modifiers = {where: _ARCHIVED.fullmatch(value).group("modifier")  # type: ignore[union-attr]
                 for where, value in urls if value.startswith("/web/")}
    assert modifiers["img.src"] == "im_" and modifiers["script.src"] == "js_"
    assert modifiers["style"] in ("im_", "cs_") and modifiers["video.poster"] == "im_"


@pytest.mark.parametrize("seed", range(10))
def test_hostile_soup_parses_to_the_same_document_but_its_urls(seed: int) -> None:
    pieces = ["<", ">", "</", "<!--", "-->", '"', "'", "=", " ", "\n", "/", "a", "p", "b",
              "<a href=", "<img src=", "<img srcset=", " style=", "url(", ")", "x.png", "#f",
              "&amp;", "&", "<script>", "</script>", "<style>", "</style>", "<title>", "</title>",
              "<svg>", "</svg>", "<![CDATA[", "]]>", "<textarea>", "</textarea>", "<!", "<?",
              "<p>", "<div class=", "<base href=", "<iframe src=", "</iframe>", "javascript:",
              "é", "<plaintext>", "<math>", "</math>", "<mtext>", "</mtext>", "<foreignObject>",
              "</foreignObject>", "<template>", "</template>", "<xmp>", "</xmp>", "<!-->",
              "<meta http-equiv=refresh content=", "<iframe srcdoc=", "&lt;"]
    # (no <noscript>: lexbor parses as if scripts were off, a browser replaying runs them)
    generator = random.Random(seed)
    for _ in range(200):
        page = "".join(generator.choice(pieces) for _ in range(generator.randint(1, 60))).encode()
        out = rewrite(page, "http://example.com/dir/page.html", chunk=generator.randint(1, 12))
        before, after = nodes(page), nodes(out)
        assert [tag for tag, _, _ in after] == [tag for tag, _, _ in before], page
        for (tag, text, attributes), (_, new_text, new_attributes) in zip(before, after, strict=True):
            if tag == "-text":
                assert new_text == text or "url(" in text, page  # style text is CSS, rewritten
                continue
            assert new_attributes.keys() == attributes.keys(), page
            for name, value in attributes.items():
                new = new_attributes[name]
                if new != value:
                    assert value is not None and new is not None, page
                    assert name in URL_ATTRIBUTES.get(tag, {}) or name in (
                        "style", "srcset", "background") or (tag, name) in (
                        ("meta", "content"), ("iframe", "srcdoc")), (page, name)


def _resolves_to_http(base: str, link: str) -> bool:
    stripped = link.strip().lower()
    if not stripped or stripped.startswith("#"):
        return False
    return urljoin(base, stripped).startswith(("http://", "https://")) and ":" not in stripped.split("/")[0]
