"""The browser window of a capture: the crawler renders pages in it, and QA replays them in the
same one, so the two full-page screenshots are laid out alike."""

from __future__ import annotations

CAPTURE_VIEWPORT: tuple[int, int] = (1280, 800)  # CSS pixels, width x height
