"""What every catalog repository shares: where its sessions come from.

A repository built by `Catalog` opens one transaction per call (a write transaction, or a
read-only one for queries); one built by `Catalog.transaction()` / `Catalog.reading()` runs
every call in that transaction's session, so several calls commit together.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Concatenate, ParamSpec, Protocol, Self, TypeVar

from sqlalchemy.orm import Session

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R", bound="Repository")


class SessionSource(Protocol):
    """Sessions for writes and for reads."""

    def session(self) -> AbstractContextManager[Session]: ...
    def read_session(self) -> AbstractContextManager[Session]: ...


class BoundSession:
    """One open session for every call: the calls share its transaction."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def session(self) -> AbstractContextManager[Session]:
        return nullcontext(self._session)

    def read_session(self) -> AbstractContextManager[Session]:
        return nullcontext(self._session)


class Repository:
    """A repository over one source of sessions (see the module docstring)."""

    def __init__(self, sessions: SessionSource) -> None:
        self._sessions = sessions

    def _on(self, session: Session) -> Self:
        """This repository bound to `session` (calls from inside another call's transaction)."""
        return type(self)(BoundSession(session))


def _writes(method: Callable[Concatenate[R, Session, P], T]) -> Callable[Concatenate[R, P], T]:
    """The method runs in a write transaction (its own, or the bound one)."""

    @functools.wraps(method)
    def run(self: R, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._sessions.session() as session:
            return method(self, session, *args, **kwargs)

    return run


def _reads(method: Callable[Concatenate[R, Session, P], T]) -> Callable[Concatenate[R, P], T]:
    """The method runs in a read-only transaction (its own, or the bound one)."""

    @functools.wraps(method)
    def run(self: R, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._sessions.read_session() as session:
            return method(self, session, *args, **kwargs)

    return run


def _streams(method: Callable[Concatenate[R, Session, P], Iterator[T]]
             ) -> Callable[Concatenate[R, P], Iterator[T]]:
    """The generator method yields its rows inside one read-only transaction."""

    @functools.wraps(method)
    def run(self: R, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        with self._sessions.read_session() as session:
            yield from method(self, session, *args, **kwargs)

    return run
