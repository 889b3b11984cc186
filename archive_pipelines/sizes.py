"""Sizes as a person reads them: binary units (KiB, MiB, GiB), one way everywhere (command
output, logs, Dagit's text). JSON and typed metadata keep the raw integers."""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(value: float) -> str:
    """`16773939` -> `16.0 MiB`; bytes below 1 KiB exactly (`1,023 B`)."""
    size = float(value)
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            return f"{int(size):,} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def human_rate(bytes_per_second: float) -> str:
    """`1572864.0` -> `1.5 MiB/s`."""
    return f"{human_bytes(bytes_per_second)}/s"
