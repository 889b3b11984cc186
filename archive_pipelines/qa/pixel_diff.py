"""How alike two screenshots are: the share of pixels that match, within a small tolerance.

Both PNGs are laid on one canvas as wide and as high as the larger of them, top-left aligned
(full-page screenshots of one page start at its top); a pixel matches when both images have it
and no colour channel differs by more than `tolerance` (0-255: anti-aliasing and font
rasterising shift edges by a few levels). Pixels only one image has never match, so a replay
that is half the capture's height scores at most 0.5. Transparency is flattened on white first.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, ImageChops, UnidentifiedImageError

DEFAULT_TOLERANCE = 16
MAX_PIXELS = 64_000_000  # a canvas larger than this is refused (a full-page PNG of a huge page)


class NotAScreenshot(ValueError):
    """Bytes that are not a readable PNG, or a canvas too large to compare."""


@dataclass(frozen=True)
class PixelScore:
    """`score` in [0, 1], 1 for identical images; the sizes (width, height) compared."""

    score: float
    differing: int  # pixels of the canvas that do not match
    canvas: tuple[int, int]
    sizes: tuple[tuple[int, int], tuple[int, int]]


def pixel_score(first: bytes, second: bytes, *, tolerance: int = DEFAULT_TOLERANCE) -> PixelScore:
    """The share of the common canvas where `first` and `second` (PNG bytes) match."""
    if not 0 <= tolerance <= 255:
        raise ValueError(f"tolerance must be 0..255, not {tolerance}")
    a, b = _rgb(first, "first"), _rgb(second, "second")
    width, height = max(a.width, b.width), max(a.height, b.height)
    total = width * height
    if total > MAX_PIXELS:
        raise NotAScreenshot(f"screenshots of {width}x{height} pixels: more than {MAX_PIXELS:,} to compare")
    if total == 0:
        return PixelScore(1.0, 0, (width, height), (a.size, b.size))
    common = (min(a.width, b.width), min(a.height, b.height))
    box = (0, 0, *common)
    same = 0
    if common[0] and common[1]:
        # Largest channel difference per pixel, then matching pixels counted by histogram.
        red, green, blue = ImageChops.difference(a.crop(box), b.crop(box)).split()
        largest = ImageChops.lighter(ImageChops.lighter(red, green), blue)
        same = sum(largest.histogram()[:tolerance + 1])
    differing = total - same
    return PixelScore(same / total, differing, (width, height), (a.size, b.size))


def _rgb(data: bytes, name: str) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data))
        if image.format != "PNG":
            raise NotAScreenshot(f"the {name} screenshot is {image.format}, not PNG")
        if image.width * image.height > MAX_PIXELS:
            raise NotAScreenshot(f"the {name} screenshot has {image.width}x{image.height} pixels: "
                                 f"more than {MAX_PIXELS:,}")
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise NotAScreenshot(f"the {name} screenshot is not a readable PNG: {exc}") from None
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", image.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB")
