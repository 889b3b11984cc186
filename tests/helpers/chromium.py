"""Headless Chromium for the browser tests (tests/ui, tests/replay): Debian's `chromium`
driven by Playwright (Playwright's own download is not used)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import psutil  # type: ignore[import-untyped]
import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM_ENV = "CHROMIUM"


def chromium_executable(needed_by: str) -> str:
    """$CHROMIUM, else Debian's `chromium` on the PATH; a test failure naming the fix."""
    found = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if not found or not os.access(found, os.X_OK):
        pytest.fail(f"{needed_by} need Chromium: install Debian's package "
                    "(`apt-get install chromium`; `make test` does it when it can) or set "
                    f"{CHROMIUM_ENV}=/path/to/chromium", pytrace=False)
    return found


@contextmanager
def headless_chromium(needed_by: str) -> Iterator[Browser]:
    """Chromium launched headless, closed afterwards; `needed_by` names the tests if it is missing."""
    executable = chromium_executable(needed_by)
    args = ["--disable-dev-shm-usage"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to sandbox as root
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=args)
        try:
            yield chromium
        finally:
            chromium.close()


def chromium_browsers(parent: psutil.Process | None = None) -> list[psutil.Process]:
    """Chromium's browser processes under `parent` (default: this process), not its zygotes,
    renderers or GPU process."""
    found = []
    for child in (parent or psutil.Process()).children(recursive=True):
        try:
            if child.exe().endswith("/chromium") and not any(
                    arg.startswith("--type=") for arg in child.cmdline()):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return found
