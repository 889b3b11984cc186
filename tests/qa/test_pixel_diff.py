"""The pixel score on generated images: identical, a region changed, other heights, noise
within the tolerance, transparency, and bytes that are no PNG."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from archive_pipelines.qa.pixel_diff import NotAScreenshot, pixel_score

pytestmark = pytest.mark.unit


def png(width: int, height: int, *, colour: tuple[int, ...] = (240, 240, 250),
        box: tuple[int, int, int, int] | None = None, box_colour: tuple[int, ...] = (200, 30, 30),
        mode: str = "RGB") -> bytes:
    image = Image.new(mode, (width, height), colour)
    if box is not None:
        ImageDraw.Draw(image).rectangle(box, fill=box_colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_identical_images_score_one() -> None:
    page = png(400, 300, box=(10, 10, 109, 59))
    result = pixel_score(page, page)
    assert result.score == 1.0
    assert result.differing == 0
    assert result.canvas == (400, 300)


def test_a_changed_region_costs_its_share_of_the_canvas() -> None:
    before = png(400, 400)
    after = png(400, 400, box=(100, 100, 199, 199))  # 100 x 100 of 400 x 400 changed
    result = pixel_score(before, after)
    assert result.differing == 100 * 100
    assert result.score == pytest.approx(1 - 10_000 / 160_000)


@pytest.mark.parametrize(("short", "expected"), [(200, 0.5), (300, 0.75), (400, 1.0)])
def test_other_heights_count_the_rows_only_one_has_as_different(short: int, expected: float) -> None:
    tall = png(400, 400)
    result = pixel_score(tall, png(400, short))
    assert result.score == pytest.approx(expected)
    assert result.canvas == (400, 400)
    assert result.sizes == ((400, 400), (400, short))
    assert pixel_score(png(400, short), tall).score == pytest.approx(expected)  # either way round


def test_other_widths_too() -> None:
    assert pixel_score(png(400, 100), png(200, 100)).score == pytest.approx(0.5)


def test_small_shifts_within_the_tolerance_match_larger_ones_do_not() -> None:
    base = png(100, 100, colour=(100, 100, 100))
    assert pixel_score(base, png(100, 100, colour=(110, 92, 100))).score == 1.0
    assert pixel_score(base, png(100, 100, colour=(110, 92, 100)), tolerance=5).score == 0.0
    assert pixel_score(base, png(100, 100, colour=(100, 100, 140))).score == 0.0


def test_transparency_is_flattened_on_white() -> None:
    clear = png(50, 50, colour=(0, 0, 0, 0), mode="RGBA")
    assert pixel_score(clear, png(50, 50, colour=(255, 255, 255))).score == 1.0


def test_bytes_that_are_no_png_are_refused_clearly() -> None:
    with pytest.raises(NotAScreenshot, match="second screenshot is not a readable PNG"):
        pixel_score(png(10, 10), b"<html>not an image</html>")
    jpeg = io.BytesIO()
    Image.new("RGB", (10, 10)).save(jpeg, format="JPEG")
    with pytest.raises(NotAScreenshot, match="first screenshot is JPEG, not PNG"):
        pixel_score(jpeg.getvalue(), png(10, 10))
    with pytest.raises(ValueError, match="tolerance"):
        pixel_score(png(10, 10), png(10, 10), tolerance=256)
