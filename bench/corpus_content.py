"""What the corpus's files hold: word-salad HTML, JS and CSS, binary blobs with the right
magic bytes, and the sites whose assets snapshots share byte for byte (see corpus.py)."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

_STEMS = ("archive", "browse", "content", "data", "editor", "feature", "global", "history",
          "index", "journal", "local", "market", "network", "office", "policy", "report",
          "search", "travel", "update", "value", "weather", "year", "zone", "about", "budget",
          "city", "design", "energy", "forum", "garden", "health", "image", "kitchen", "labor",
          "music", "nation", "open", "people", "quality", "river", "school", "table", "union",
          "video", "water", "world", "paper", "story", "court", "field", "light", "money",
          "night", "order", "power", "record", "season", "trade", "voice", "wind", "garage",
          "bridge", "camera", "detail")
# 256 words, so one random byte picks one word.
WORDS = tuple(f"{stem}{suffix}".encode() for suffix in ("", "s", "ed", "ing") for stem in _STEMS)
JS_TOKENS = tuple(w + p for w in WORDS[:64] for p in (b"(", b")", b";", b"=function(e,t){"))
CSS_TOKENS = tuple(b".%s-%d{margin:%dpx}" % (w, i % 7, i % 24) for i, w in enumerate(WORDS))
PNG, JPEG, PDF, WOFF2, MP4 = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0\x00\x10JFIF",
                              b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", b"wOF2\x00\x01\x00\x00",
                              b"\x00\x00\x00\x18ftypmp42")


@dataclass(frozen=True)
class Blob:
    data: bytes
    sha256: str

    @classmethod
    def of(cls, data: bytes) -> Blob:
        return cls(data, hashlib.sha256(data).hexdigest())


def text(rng: random.Random, size: int, tokens: tuple[bytes, ...], sep: bytes) -> bytes:
    """About `size` bytes of tokens picked by random bytes (fast: no Python-level loop)."""
    average = sum(map(len, tokens)) / len(tokens) + len(sep)
    return sep.join(map(tokens.__getitem__, rng.randbytes(max(1, int(size / average)))))


def binary(rng: random.Random, magic: bytes, size: int) -> bytes:
    return magic + rng.randbytes(max(0, size - len(magic)))


def html_page(rng: random.Random, title: str, size: int) -> bytes:
    head = (f"<!doctype html>\n<html><head><meta charset=utf-8><title>{title}</title>"
            '<link rel=stylesheet href="static/bootstrap.min.css"></head>\n<body>\n'
            f"<h1>{title}</h1>\n").encode()
    paragraphs = [b"<p>" + text(rng, 700, WORDS, b" ") + b"</p>" for _ in range(size // 700)]
    return head + b"\n".join(paragraphs) + b"\n</body></html>\n"


@dataclass(frozen=True)
class Site:
    domain: str
    jquery: Blob
    bootstrap: Blob | None
    font: tuple[str, Blob]
    logo: Blob
    hero: Blob
    stylesheets: tuple[Blob, ...]


def shared_library(rng: random.Random) -> dict[str, list[Blob]]:
    """Assets several sites use byte for byte: two jQuery and Bootstrap builds, four fonts."""
    return {
        "jquery": [Blob.of(b"/*! jQuery v3.%d | (c) OpenJS Foundation */\n" % v
                           + text(rng, 87_000 + v * 500, JS_TOKENS, b"")) for v in (6, 7)],
        "bootstrap": [Blob.of(b"/*! Bootstrap v5.%d */\n" % v
                              + text(rng, 160_000 + v * 30_000, CSS_TOKENS, b"\n"))
                      for v in (2, 3)],
        "fonts": [Blob.of(binary(rng, WOFF2, rng.randint(20_000, 80_000))) for _ in range(4)],
    }


def make_sites(rng: random.Random, count: int) -> list[Site]:
    library = shared_library(rng)
    fonts = ("inter", "roboto", "merriweather", "source-sans")
    sites = []
    for number in range(count):
        font = number % len(fonts)
        sites.append(Site(
            domain=f"{WORDS[number * 7 % 64].decode()}-{WORDS[(number * 13 + 5) % 64].decode()}"
                   f"{number}.example",
            jquery=library["jquery"][number % 2],
            bootstrap=library["bootstrap"][number % 2] if number % 4 else None,
            font=(fonts[font], library["fonts"][font]),
            logo=Blob.of(binary(rng, PNG, rng.randint(5_000, 40_000))),
            hero=Blob.of(binary(rng, JPEG, rng.randint(50_000, 300_000))),
            stylesheets=tuple(Blob.of(text(rng, rng.randint(5_000, 30_000), CSS_TOKENS, b"\n"))
                              for _ in range(4)),
        ))
    return sites
