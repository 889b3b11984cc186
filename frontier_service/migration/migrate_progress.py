"""The migration's progress line on stderr: rows done of the total, rows per second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class MigrateProgress:
    """One line per table every `every_s` (and when it ends); `\\r`-rewritten on a terminal."""

    def __init__(self, *, every_s: float = 2.0, stream: TextIO | None = None) -> None:
        self.every_s = every_s
        self.stream = stream or sys.stderr
        self._tty = self.stream.isatty()
        self.table = ""
        self.total = 0
        self.exact = True
        self.done = 0
        self._started = self._shown = time.monotonic()
        self._first = 0

    def start(self, table: str, *, total: int, exact: bool, done: int) -> None:
        self.table, self.total, self.exact, self.done = table, total, exact, done
        self._first = done
        self._started = self._shown = time.monotonic()

    def advance(self, rows: int) -> None:
        self.done += rows
        if time.monotonic() - self._shown >= self.every_s:
            self._show(final=False)

    def finish(self) -> None:
        self._show(final=True)

    def rate(self) -> float:
        return (self.done - self._first) / max(time.monotonic() - self._started, 1e-9)

    def _show(self, *, final: bool) -> None:
        self._shown = time.monotonic()
        total = max(self.total, self.done)
        share = f" ({100 * self.done / total:.0f}%)" if total else ""
        about = "" if self.exact else "~"
        line = (f"{self.table}: {self.done:,}/{about}{total:,} rows{share}, "
                f"{self.rate():,.0f} rows/s")
        if self._tty:
            self.stream.write(f"\r{line}\033[K" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
