"""Small helpers ArchiveBox uses (timestamps, URL hashes, slugs) and tiny PNG/ICO/PDF bytes."""

from __future__ import annotations

import hashlib
import random
import re
import struct
import unicodedata
import uuid
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import urlparse

# 0.7 STATICFILE_EXTENSIONS (subset that matters here).
STATIC_EXTENSIONS = frozenset(
    (
        *("gif", "jpeg", "jpg", "png", "tif", "tiff", "wbmp", "ico", "jng", "bmp", "svg", "svgz", "webp"),
        *("ps", "eps", "ai", "mp3", "mp4", "m4a", "mpeg", "mpg", "mkv", "mov", "webm", "m4v", "flv", "wmv"),
        *("avi", "ogg", "ts", "m3u8", "pdf", "apk", "txt", "rtf", "rtfd", "doc", "docx", "ppt", "pptx"),
        *("xls", "xlsx", "atom", "rss", "css", "js", "json", "dmg", "iso", "img", "rar", "war", "hqx"),
        *("zip", "gz", "bz2", "7z"),
    )
)


def django_datetime(value: datetime) -> str:
    """How Django's SQLite backend stores an aware datetime: naive UTC `str(datetime)`."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")


def django_minute(value: datetime) -> str:
    # ArchiveBox's ts_to_date_str.
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _crockford(number: int) -> str:
    digits = []
    while True:
        number, rest = divmod(number, 32)
        digits.append(_CROCKFORD[rest])
        if number == 0:
            break
    return "".join(reversed(digits))


def without_scheme(url: str) -> str:
    # ArchiveBox writes .strip('//'), which strips every leading/trailing '/'.
    return urlparse(url)._replace(scheme="").geturl().strip("/")


def hashurl(url: str) -> str:
    """ArchiveBox's `hashurl`: crockford base32 of sha256(base_url), first 20 chars."""
    return _crockford(int(hashlib.sha256(without_scheme(url).encode("utf-8")).hexdigest(), 16))[:20]


def url_extension(url: str) -> str:
    basename = urlparse(url).path.rsplit("/", 1)[-1]
    return basename.rsplit(".", 1)[-1].lower() if "." in basename else ""


def is_static_url(url: str) -> bool:
    return url_extension(url) in STATIC_EXTENSIONS


def slugify(value: str) -> str:
    """Django's `slugify` (allow_unicode=False)."""
    value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def printable_filesize(num_bytes: float) -> str:
    for unit in ("Bytes", "KB", "MB", "GB"):
        if -1024.0 < num_bytes < 1024.0:
            return f"{num_bytes:3.1f} {unit}"
        num_bytes /= 1024.0
    return f"{num_bytes:3.1f} TB"


def random_uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def png_bytes(width: int, height: int, rgb: tuple[int, int, int], *, noise: int = 0) -> bytes:
    """A valid truecolour PNG; `noise` > 0 varies the pixels so files differ."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            shade = (x * 7 + y * 13 + noise) % 32 if noise else 0
            rows += bytes(((rgb[0] + shade) % 256, (rgb[1] + shade) % 256, (rgb[2] + shade) % 256))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def ico_bytes(png: bytes, size: int) -> bytes:
    """An ICO file holding one PNG image (what Google's favicon service returns)."""
    entry = struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png), 22)
    return struct.pack("<HHH", 0, 1, 1) + entry + png


def pdf_bytes(lines: Sequence[str]) -> bytes:
    """A small, structurally valid one-page PDF (Chrome's --print-to-pdf output in miniature)."""

    def pdf_text(text: str) -> str:
        ascii_text = text.encode("ascii", "replace").decode("ascii")
        return ascii_text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    body = "BT /F1 14 Tf 72 740 Td 16 TL " + " ".join(f"({pdf_text(line)}) '" for line in lines) + " ET"
    stream = body.encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Producer (Skia/PDF m120) /Creator (Chromium) >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def noise_bytes(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size)


def seeded_bytes(label: str, size: int) -> bytes:
    """Bytes that depend only on `label`: identical wherever the same asset is written."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])
