"""srcset parsing by the HTML standard's algorithm: the standard's own examples, the comma
rules, and the descriptor rules that make a browser drop a candidate."""

from __future__ import annotations

import pytest

from frontier_service.fetch.srcset import srcset_urls

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("srcset", "urls"), [
    # The standard's examples (HTML, "Images" and the img element).
    ("images/team-photo.jpg 1x, images/team-photo-retina.jpg 2x",
     ["images/team-photo.jpg", "images/team-photo-retina.jpg"]),
    ("pic1.jpg 160w, pic2.jpg 320w, pic3.jpg 640w, pic4.jpg 1280w, pic5.jpg 2560w",
     ["pic1.jpg", "pic2.jpg", "pic3.jpg", "pic4.jpg", "pic5.jpg"]),
    ("/uploads/100-marie-lloyd.jpeg 1x, /uploads/150-marie-lloyd.jpeg 1.5x, "
     "/uploads/200-marie-lloyd.jpeg 2x", ["/uploads/100-marie-lloyd.jpeg",
                                          "/uploads/150-marie-lloyd.jpeg",
                                          "/uploads/200-marie-lloyd.jpeg"]),
    ("a.png", ["a.png"]),  # no descriptor: 1x
    ("", []),
    (" \t\n,, ", []),
])
def test_the_standards_examples(srcset: str, urls: list[str]) -> None:
    assert srcset_urls(srcset) == urls


@pytest.mark.parametrize(("srcset", "urls"), [
    # A comma inside a URL (not followed by whitespace) belongs to it ...
    ("a.png?x=1,2 2x, b.png 3x", ["a.png?x=1,2", "b.png"]),
    ("data:image/png;base64,iVBO,RK 1x, c.png 2x", ["data:image/png;base64,iVBO,RK", "c.png"]),
    # ... but commas ending a URL separate candidates, and no descriptors follow them.
    ("a.png,b.png", ["a.png,b.png"]),
    ("a.png, b.png", ["a.png", "b.png"]),
    ("a.png,,, b.png 2x", ["a.png", "b.png"]),
    ("a.png 1x,b.png 2x", ["a.png", "b.png"]),  # the descriptor's comma ends the candidate
    (",a.png ,, b.png,", ["a.png", "b.png"]),
    ("a.png\t1x,\nb.png\f2x", ["a.png", "b.png"]),
    # Parentheses keep commas in a descriptor (which is then an unknown one: dropped).
    ("a.png (x, y) 1x, b.png 2x", ["b.png"]),
    ("a.png 1x (unclosed, b.png 2x", []),
])
def test_commas(srcset: str, urls: list[str]) -> None:
    assert srcset_urls(srcset) == urls


@pytest.mark.parametrize(("srcset", "urls"), [
    ("a.png 0w, b.png 100w", ["b.png"]),  # a width must be positive
    ("a.png 100w 2x, b.png 1x", ["b.png"]),  # width and density
    ("a.png 2x 3x, b.png 1x", ["b.png"]),  # two densities
    ("a.png -1x, b.png 0x, c.png 1e1x, d.png .5x", ["b.png", "c.png", "d.png"]),
    ("a.png 1.x, b.png +2x, c.png 2X", []),  # not valid floating-point numbers / unknown
    ("a.png 50h, b.png 100w 50h, c.png 100w 0h", ["b.png"]),  # a height needs a width
    ("a.png 100w 50h 60h", []),
    ("a.png 12, b.png foo, c.png 1x", ["c.png"]),
])
def test_invalid_descriptors_drop_the_candidate(srcset: str, urls: list[str]) -> None:
    assert srcset_urls(srcset) == urls
