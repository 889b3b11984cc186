"""The blob store kinds the store tests run on, and the type of the fixture that makes one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from archive_pipelines.blobstore import BlobStore

STORE_KINDS = ["local-raw", "local-zstd", "s3-raw", "s3-zstd"]
MakeStore = Callable[..., BlobStore]


def store_kind_params(kinds: Iterable[str]) -> list[Any]:
    """`kinds` as fixture params, the local ones marked unit: they need no server."""
    return [pytest.param(kind, marks=pytest.mark.unit) if kind.startswith("local-") else kind
            for kind in kinds]
