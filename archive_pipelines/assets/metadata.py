"""Metadata an operator reads in Dagit: typed numbers (plotted over time), and tables built
with pandas (grouping and pivots are one call there). Sizes in text: `sizes.human_bytes`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg
import pandas as pd


def count(value: int) -> dg.IntMetadataValue:
    return dg.MetadataValue.int(int(value))


def rate(value: float, digits: int = 1) -> dg.FloatMetadataValue:
    """A ratio or a rate, rounded for reading (the plot keeps the shape)."""
    return dg.MetadataValue.float(round(float(value), digits))


def counts(values: Mapping[str, int]) -> dict[str, dg.IntMetadataValue]:
    return {key: count(value) for key, value in values.items()}


def problem_list(problems: list[str], limit: int = 50) -> dg.MarkdownMetadataValue:
    """The first `limit` problems as a Markdown list (the rest counted: the run log has them)."""
    listed = "\n".join(f"- {line}" for line in problems[:limit])
    if len(problems) > limit:
        listed += f"\n- ... and {len(problems) - limit} more (see the run log)"
    return dg.MetadataValue.md(listed or "none")


def table(frame: pd.DataFrame) -> dg.TableMetadataValue:
    """A DataFrame as a Dagster table: its columns typed (int, float, string), its rows."""
    columns = []
    for name, dtype in frame.dtypes.items():
        kind = ("int" if pd.api.types.is_integer_dtype(dtype) else
                "float" if pd.api.types.is_float_dtype(dtype) else "string")
        columns.append(dg.TableColumn(str(name), kind))
    records = [dg.TableRecord({str(k): _plain(v) for k, v in row.items()})
               for row in frame.to_dict("records")]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns))


def _plain(value: object) -> str | int | float | bool | None:
    """numpy scalars (what pandas hands out) as the plain Python values Dagster takes."""
    if hasattr(value, "item"):
        value = value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def code_references(*functions: Callable[..., Any]) -> dict[str, dg.CodeReferencesMetadataValue]:
    """Definition metadata linking an asset to the domain functions that do its work (Dagit's
    "Code references"; `definitions.py` adds the asset's own function)."""
    references: list[dg.LocalFileCodeReference | dg.UrlCodeReference] = [dg.LocalFileCodeReference(
        file_path=str(inspect.getsourcefile(function)),
        line_number=inspect.getsourcelines(function)[1],
        label=f"{function.__module__}.{function.__qualname__}") for function in functions]
    return {"dagster/code_references": dg.CodeReferencesMetadataValue(code_references=references)}

