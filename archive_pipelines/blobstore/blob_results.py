"""What puts and checks report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CheckStatus = Literal["ok", "missing", "corrupt"]


@dataclass(frozen=True)
class PutResult:
    """The outcome of storing one blob."""

    sha256: str  # hex of the raw bytes
    size: int  # raw size
    stored_bytes: int  # bytes the store now holds for this put (0 if it already existed)
    created: bool  # False if an identical object was already there


@dataclass(frozen=True)
class CheckResult:
    """The outcome of reading, decoding and rehashing one blob."""

    sha256: str
    status: CheckStatus
    detail: str = ""
    # The verified raw bytes, when `check(keep_up_to=...)` was asked to keep them.
    data: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
