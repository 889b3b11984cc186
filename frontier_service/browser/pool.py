"""One Chromium with N contexts, each running one page load at a time, that survives its
browser: a Chromium that crashes or is killed is relaunched and the pages it was loading are
loaded again, once, on the new one (no URL is lost to a crash); `close` drains.

A crash is seen by Playwright's `disconnected` event on the browser. Every load runs against
the browser of its time (a generation): the loads of a dead generation are cancelled, the
first to notice relaunches (one restart per crash, however many loads it cut) and each loads
its page again on a context of the new browser. A page whose retry is cut by a crash too is
returned with an error, counted as a failure, never retried forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from playwright.async_api import Browser, BrowserContext, Playwright
from playwright.async_api import Error as PlaywrightError

from frontier_service.browser.chromium import launch_chromium, new_context
from frontier_service.browser.header_hashing import HeaderHasher
from frontier_service.browser.page_load import BrowserSettings, Fetch, PageLoad, load_page

_CRASH_GRACE_S = 0.25  # how long a failed load waits for the browser's `disconnected` event
_CANCEL_WAIT_S = 5.0  # a cancelled load of a dead browser gets this long to unwind


@dataclass(frozen=True)
class PoolStats:
    """The pool's counters (for the health endpoint and metrics). `pages`: loads returned;
    `failures`: of those, the ones with an error; `restarts`: browsers relaunched after a
    crash; `retried`: loads started again because their browser died; `busy`: contexts
    loading now; `waiting`: loads waiting for a free context."""

    contexts: int
    pages: int
    failures: int
    restarts: int
    retried: int
    busy: int
    waiting: int


class PoolClosed(RuntimeError):
    """A load asked of a pool that is closing or closed."""


class _Generation:
    """One launched browser, its contexts (one per slot) and whether it is gone."""

    def __init__(self, browser: Browser, contexts: list[BrowserContext]) -> None:
        self.browser = browser
        self.contexts = contexts
        self.dead = asyncio.Event()
        browser.on("disconnected", lambda _browser: self.dead.set())
        if not browser.is_connected():
            self.dead.set()


class BrowserPool:
    """N contexts of one Chromium; `load` waits for a free one.

    Use as `async with BrowserPool(playwright, contexts=2) as pool: await pool.load(...)`, or
    `start()` then `close()`. The contexts live as long as their browser: a slot's cookies
    carry over between its pages (a login profile's `storage_state` is loaded into each).
    """

    def __init__(self, playwright: Playwright, *, contexts: int = 2,
                 executable: str | Path | None = None, extra_args: Sequence[str] = (),
                 storage_state: str | Path | None = None, drain_timeout_s: float = 30.0) -> None:
        if contexts < 1:
            raise ValueError(f"a browser pool needs at least 1 context, not {contexts}")
        if drain_timeout_s < 0:
            raise ValueError("drain_timeout_s must be >= 0")
        self._playwright = playwright
        self._size = contexts
        self._executable = executable
        self._extra_args = tuple(extra_args)
        self._storage_state = storage_state
        self._drain_timeout_s = drain_timeout_s
        self._generation: _Generation | None = None
        self._relaunch_lock = asyncio.Lock()
        self._free: asyncio.Queue[int] = asyncio.Queue()
        self._closing = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._pages = self._failures = self._restarts = self._retried = self._busy = 0

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def start(self) -> None:
        """Launch the browser and its contexts (ChromiumMissing when there is no Chromium)."""
        if self._generation is not None:
            raise RuntimeError("the browser pool is already started")
        self._generation = await self._launch()
        for slot in range(self._size):
            self._free.put_nowait(slot)

    def stats(self) -> PoolStats:
        return PoolStats(contexts=self._size, pages=self._pages, failures=self._failures,
                         restarts=self._restarts, retried=self._retried, busy=self._busy,
                         waiting=self._in_flight - self._busy)

    async def load(self, url: str, *, fetch: Fetch, settings: BrowserSettings,
                   hasher: HeaderHasher) -> PageLoad:
        """`load_page` of `url` on the next free context; loaded again once on a relaunched
        browser if the browser dies meanwhile. Never raises for web trouble or a crash (see
        `PageLoad.error`); PoolClosed once `close` has begun."""
        if self._closing or self._generation is None:
            raise PoolClosed("the browser pool is closed" if self._generation is not None
                             else "the browser pool is not started")
        self._in_flight += 1
        self._idle.clear()
        try:
            slot = await self._free.get()
            self._busy += 1
            try:
                load = await self._load_in(slot, url, fetch=fetch, settings=settings,
                                           hasher=hasher)
            finally:
                self._busy -= 1
                self._free.put_nowait(slot)
            self._pages += 1
            self._failures += load.error is not None
            return load
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def close(self, timeout_s: float | None = None) -> bool:
        """Refuse new loads, wait for those in flight (at most `timeout_s`, default the pool's
        `drain_timeout_s`), then close the browser. True if every load finished first."""
        self._closing = True
        drained = True
        if self._in_flight:
            wait = self._drain_timeout_s if timeout_s is None else timeout_s
            try:
                await asyncio.wait_for(self._idle.wait(), wait)
            except TimeoutError:
                drained = False
        generation, self._generation = self._generation, None
        if generation is not None:
            with contextlib.suppress(PlaywrightError):
                await generation.browser.close()
        return drained

    async def _load_in(self, slot: int, url: str, *, fetch: Fetch, settings: BrowserSettings,
                       hasher: HeaderHasher) -> PageLoad:
        for attempt in range(2):
            generation = await self._live_generation()
            if generation is None:
                return _lost(url, "the browser pool closed before the page loaded")
            load = await self._attempt(generation, slot, url, fetch=fetch, settings=settings,
                                       hasher=hasher)
            if load is not None:
                return load
            if attempt == 0:
                self._retried += 1
        return _lost(url, "the browser died while loading the page, twice")

    async def _attempt(self, generation: _Generation, slot: int, url: str, *, fetch: Fetch,
                       settings: BrowserSettings, hasher: HeaderHasher) -> PageLoad | None:
        """The load on `generation`'s context `slot`; None when the browser died under it."""
        loading = asyncio.create_task(load_page(generation.contexts[slot], url, fetch=fetch,
                                                settings=settings, hasher=hasher))
        dying = asyncio.create_task(generation.dead.wait())
        try:
            await asyncio.wait({loading, dying}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller gave up (a drain's timeout): so does the load
            loading.cancel()
            await asyncio.wait({loading}, timeout=_CANCEL_WAIT_S)
            raise
        finally:
            dying.cancel()
        if not loading.done():  # the browser died first: this load is lost with it
            loading.cancel()
            await asyncio.wait({loading}, timeout=_CANCEL_WAIT_S)
            return None
        try:
            load = loading.result()
        except PlaywrightError as exc:
            if await self._died(generation):
                return None
            return _lost(url, f"browser error: {str(exc).strip().splitlines()[0][:300]}")
        if load.error is not None and await self._died(generation):
            return None
        return load

    @staticmethod
    async def _died(generation: _Generation) -> bool:
        """Whether the browser is gone (its `disconnected` event may trail a failed call)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(generation.dead.wait(), _CRASH_GRACE_S)
        return generation.dead.is_set()

    async def _live_generation(self) -> _Generation | None:
        """The current browser, relaunched first if it died (once per death, whoever asks)."""
        async with self._relaunch_lock:
            generation = self._generation
            if generation is None or not generation.dead.is_set():
                return generation
            if self._closing:
                return None
            with contextlib.suppress(PlaywrightError):
                await generation.browser.close()  # lets Playwright forget the dead one
            self._generation = await self._launch()
            self._restarts += 1
            return self._generation

    async def _launch(self) -> _Generation:
        browser = await launch_chromium(self._playwright, executable=self._executable,
                                        extra_args=self._extra_args)
        try:
            contexts = [await new_context(browser, storage_state=self._storage_state)
                        for _ in range(self._size)]
        except BaseException:
            with contextlib.suppress(PlaywrightError):
                await browser.close()
            raise
        return _Generation(browser, contexts)


def _lost(url: str, error: str) -> PageLoad:
    """A load that produced nothing: no requests, no DOM, `error` says why."""
    return PageLoad(url=url, final_url=url, navigation_id=str(uuid.uuid4()), requests=(),
                    dom=None, screenshot=None, timed_out=False, over_allowance=0, error=error)
