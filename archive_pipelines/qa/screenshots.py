"""How a capture's page is scrolled and shot, alike at capture time and in QA's replay.

`SCROLL_STEP` scrolls one viewport down and says whether the bottom is reached (lazy content
loads as it comes into view).

A page taller than `MAX_SCREENSHOT_HEIGHT` CSS pixels is shot from its top to that height:
a full-page PNG of a 13,600-pixel documentation page took 3-4 s of CPU to encode (most of a
browser capture's cost) and passed a 15 s time cap on a loaded machine; the first ten
screens show what the page looks like, and the capture's DOM holds all of it.
"""

from __future__ import annotations

from playwright.async_api import Page

from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT

MAX_SCREENSHOT_HEIGHT = 10 * CAPTURE_VIEWPORT[1]  # CSS pixels: ten screens

SCROLL_STEP = """() => {
  window.scrollBy(0, window.innerHeight);
  const root = document.scrollingElement || document.documentElement;
  return window.scrollY + window.innerHeight >= root.scrollHeight - 1;
}"""

_PAGE_HEIGHT = """() => Math.max(
  document.documentElement ? document.documentElement.scrollHeight : 0,
  document.body ? document.body.scrollHeight : 0)"""


async def page_screenshot(page: Page, *, timeout_ms: float) -> bytes:
    """A PNG of the whole page, or of its top `MAX_SCREENSHOT_HEIGHT` pixels if taller."""
    height = await page.evaluate(_PAGE_HEIGHT)
    if isinstance(height, int | float) and height > MAX_SCREENSHOT_HEIGHT:
        width = page.viewport_size["width"] if page.viewport_size else CAPTURE_VIEWPORT[0]
        return await page.screenshot(full_page=True, type="png", timeout=timeout_ms,
                                     clip={"x": 0, "y": 0, "width": width,
                                           "height": MAX_SCREENSHOT_HEIGHT})
    return await page.screenshot(full_page=True, type="png", timeout=timeout_ms)
