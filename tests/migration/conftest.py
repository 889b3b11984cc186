"""Fixtures for the migration tests (storage on SQLite and PostgreSQL comes from the root
conftest; the helpers they share are in tests/helpers/migration.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Paths appended here get `chattr +i` by the test; cleared again at teardown."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        subprocess.run(["chattr", "-i", str(path)], check=False, capture_output=True)
