"""Binary and text bodies that are not ordinary pages.

The shared assets are identical on every host and every seed, so a deduplicating
store keeps one copy however many hosts are crawled.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from dataclasses import dataclass

from archive_testkit.testweb.seeding import stable_rng


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str


def png(width: int, height: int, rng: random.Random) -> bytes:
    """A valid RGB PNG of blocky pseudo-random colour."""
    palette = [bytes(rng.randrange(256) for _ in range(3)) for _ in range(8)]
    rows = []
    for y in range(height):
        row = b"".join(palette[(x // 8 + y // 8 * 3) % 8] for x in range(width))
        rows.append(b"\x00" + row)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + _png_chunk(b"IEND", b"")
    )


def pdf(title: str) -> bytes:
    """A small single-page PDF showing `title` (ASCII only)."""
    text = title.encode("ascii", "replace").replace(b"(", b"[").replace(b")", b"]")
    stream = b"BT /F1 18 Tf 72 720 Td (" + text + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def json_document(seed: int, host: str, path: str) -> bytes:
    """A small JSON API response naming a few pages of the host."""
    rng = stable_rng(seed, "json", host, path)
    items = [{"id": rng.randrange(10**6), "href": f"/s{n % 10}/p{n}.html"} for n in range(1, 6)]
    return json.dumps({"host": host, "path": path, "items": items}, indent=1).encode()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _app_js() -> bytes:
    rng = random.Random(7001)
    names = ["render", "fetchItems", "bindMenu", "track", "lazyLoad", "debounce", "toggle"]
    parts = ['"use strict";\n']
    for n in range(400):
        name, other = rng.choice(names), rng.choice(names)
        parts.append(
            f"function {name}_{n}(el, opts) {{\n"
            f"  const v = (opts && opts.v) || {rng.randrange(999)};\n"
            f"  if (!el) return {other}_{max(0, n - 1)}(document.body, {{v: v + 1}});\n"
            f"  el.dataset.k{n % 7} = String(v * {rng.randrange(2, 97)});\n  return el;\n}}\n"
        )
    return "".join(parts).encode()


def _site_css() -> bytes:
    rng = random.Random(7002)
    rules = [
        f".c{n} {{ margin: {rng.randrange(24)}px; color: #{rng.randrange(16**6):06x}; "
        f"font-size: {rng.randrange(10, 30)}px; }}\n"
        for n in range(300)
    ]
    return ("body { font-family: 'Test Sans', sans-serif; }\n" + "".join(rules)).encode()


def _font_woff2() -> bytes:
    rng = random.Random(7003)
    return b"wOF2\x00\x01\x00\x00" + rng.randbytes(24_000)


SHARED_ASSETS: dict[str, Asset] = {
    "/static/app.js": Asset(_app_js(), "application/javascript"),
    "/static/site.css": Asset(_site_css(), "text/css; charset=utf-8"),
    "/static/font.woff2": Asset(_font_woff2(), "font/woff2"),
    "/img/logo.png": Asset(png(120, 40, random.Random(7004)), "image/png"),
}
