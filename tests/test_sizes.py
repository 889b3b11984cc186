"""Sizes for people: binary units, one formatter everywhere."""

import pytest

from archive_pipelines.sizes import human_bytes, human_rate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("value", "shown"), [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.0 KiB"), (105_779, "103.3 KiB"),
    (16_773_939, "16.0 MiB"), (115_101_207, "109.8 MiB"), (3 * 1024**3, "3.0 GiB"),
    (3 * 1024**5, "3.0 PiB"), (5 * 1024**6, "5,120.0 PiB"),
])
def test_sizes_are_in_binary_units(value: int, shown: str) -> None:
    assert human_bytes(value) == shown


def test_a_rate_is_a_size_per_second() -> None:
    assert human_rate(1.5 * 1024**2) == "1.5 MiB/s"
