"""Which fetch failures are worth retrying, and how to say what went wrong in one line."""

from __future__ import annotations

import errno
from typing import NamedTuple

import aiohttp

from archive_pipelines.content_coding import DecodingError
from frontier_service.fetch.result import FetchErrorKind

_MAX_MESSAGE_CHARS = 300


class AddressRefused(OSError):
    """A host's address is not one the crawl may reach; the message says why and what to list."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)  # aiohttp shows strerror in its connect error

    def __str__(self) -> str:
        return str(self.strerror)


class Failure(NamedTuple):
    kind: FetchErrorKind
    retryable: bool
    message: str


def classify(exc: BaseException) -> Failure:
    """The kind of a request exception, whether a retry may help, and a one-line message."""
    message = one_line(exc)
    refused = _refusal(exc)
    if refused is not None:  # out of the crawl's network scope: asking again cannot help
        return Failure(FetchErrorKind.REFUSED, retryable=False, message=f"address refused: {refused}")
    if isinstance(exc, DecodingError):  # the same bytes would come again
        return Failure(FetchErrorKind.PROTOCOL, retryable=False, message=f"content decoding failed: {exc}")
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError is one too
        return Failure(FetchErrorKind.TIMEOUT, retryable=True, message=message)
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return Failure(FetchErrorKind.INVALID_URL, retryable=False, message=message)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        # NXDOMAIN does not heal in 1 s
        return Failure(FetchErrorKind.CONNECT, retryable=False, message=message)
    if isinstance(exc, aiohttp.ClientConnectionError | ConnectionError):
        return Failure(FetchErrorKind.CONNECT, retryable=True, message=message)  # refused, reset, hung up
    if isinstance(exc, aiohttp.ClientPayloadError):
        return Failure(FetchErrorKind.PROTOCOL, retryable=True, message=message)  # body cut off mid-transfer
    if isinstance(exc, aiohttp.ClientResponseError):
        return Failure(FetchErrorKind.PROTOCOL, retryable=False, message=message)  # unparsable status/headers
    if isinstance(exc, ValueError | UnicodeError):
        return Failure(FetchErrorKind.INVALID_URL, retryable=False, message=message)
    return Failure(FetchErrorKind.OTHER, retryable=False, message=message)


def _refusal(exc: BaseException) -> AddressRefused | None:
    """The AddressRefused behind `exc` (aiohttp wraps the resolver's error), if any."""
    for candidate in (exc, getattr(exc, "os_error", None), exc.__cause__, exc.__context__):
        if isinstance(candidate, AddressRefused):
            return candidate
    return None


def one_line(exc: BaseException) -> str:
    """`ExceptionType: message` on one line, cut to a readable length."""
    text = str(exc).strip()
    line = type(exc).__name__ + (f": {text}" if text else "")
    line = " ".join(line.split())
    return line if len(line) <= _MAX_MESSAGE_CHARS else line[: _MAX_MESSAGE_CHARS - 3] + "..."
