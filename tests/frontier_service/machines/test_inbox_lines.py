"""An inbox field's lines as the consumer appends them: whole, non-empty, newline-terminated."""

from __future__ import annotations

import pytest

from frontier_service.machines.inbox import _lines


@pytest.mark.parametrize(("value", "expected"), [
    (b"", b""),
    (b"u|1|1|5\n", b"u|1|1|5\n"),
    (b"u|1|1|5\nv|1|1|5\n", b"u|1|1|5\nv|1|1|5\n"),
    (b"u|1|1|5", b"u|1|1|5\n"),  # the last line's newline added
    ("u|1|1|5\n", b"u|1|1|5\n"),  # str as well as bytes
    (b"\nu|1|1|5\n\n\nv|1|1|5\n", b"u|1|1|5\nv|1|1|5\n"),  # empty lines dropped
    (b"\0\0\nu|1|1|5\n", b"u|1|1|5\n"),  # a line of NULs dropped
    (b"\0u|1|1|5\n", b"\0u|1|1|5\n"),  # a line with more than NULs kept as it is
    (b"\n", b""),
])
def test_lines(value: bytes | str, expected: bytes) -> None:
    assert _lines(value) == expected
