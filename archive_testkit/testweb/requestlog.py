"""The test web's record of every request it answered, in memory and optionally as JSON lines."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import IO, NamedTuple


class RequestRecord(NamedTuple):
    time: float  # time.monotonic() when the request arrived (comparable across processes)
    host: str  # Host header, lowercased, port removed
    path_qs: str  # path and query exactly as sent on the request line
    status: int  # 0 when the connection was closed without a response
    conditional: bool = False  # sent If-None-Match or If-Modified-Since


class RequestLog:
    """Append-only request log, safe to read from other threads while the server writes."""

    def __init__(self, path: Path | str | None = None, *, keep_in_memory: bool = True) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._keep = keep_in_memory
        self._total = 0
        self._path = path
        self._file: IO[str] | None = None  # opened on the first record, closed by close()

    def record(self, record: RequestRecord) -> None:
        with self._lock:
            self._total += 1
            if self._keep:
                self._records.append(record)
            if self._path is not None:
                if self._file is None:
                    self._file = open(self._path, "a", encoding="utf-8")  # noqa: SIM115
                self._file.write(json.dumps(record._asdict(), ensure_ascii=False) + "\n")

    def records(self) -> list[RequestRecord]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._records)

    def requests_for(self, host: str) -> list[RequestRecord]:
        """The requests made to one host (name as in the records: lowercase, no port)."""
        name = host.lower()
        return [r for r in self.records() if r.host == name]

    def fetch_counts(self) -> Counter[tuple[str, str]]:
        """How many times each (host, path_qs) was requested."""
        return Counter((r.host, r.path_qs) for r in self.records())

    @property
    def total(self) -> int:
        """Requests recorded since start, including any not kept in memory or cleared."""
        return self._total

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        """Close the file; records after this are kept in memory only."""
        with self._lock:
            self._path = None
            if self._file is not None:
                self._file.close()
                self._file = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


def read_jsonl(path: Path | str) -> list[RequestRecord]:
    """Records written by a RequestLog to a JSON-lines file (e.g. by the CLI in another process)."""
    with open(path, encoding="utf-8") as lines:
        return [RequestRecord(**json.loads(line)) for line in lines if line.strip()]
