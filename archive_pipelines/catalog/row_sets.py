"""A batch of rows as one bound parameter: a table to join, insert from or update from.

Bulk catalog writes used to bind one parameter set per row (executemany) or a few hundred
parameters per `IN (...)` list; building and binding those was most of an ingest batch's
catalog time. Here the whole batch is one value the database unpacks in C:
SQLite's `json_each` over a JSON array of rows, PostgreSQL's `unnest` of one array per
column. The same statements then serve both databases.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Boolean, String, Subquery, bindparam, func, select, true, type_coerce
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

# Column kinds a row set may hold (the arrays PostgreSQL needs are typed).
TEXT = "text"
INT = "int"
BOOL = "bool"
_TYPES: dict[str, TypeEngine[Any]] = {TEXT: String(), INT: BigInteger(), BOOL: Boolean()}


def row_set(session: Session, columns: Sequence[tuple[str, str]],
            rows: Sequence[Sequence[object]], *, name: str = "rows") -> Subquery:
    """`rows` (tuples in `columns` order; columns are (name, TEXT | INT | BOOL)) as a subquery
    whose columns are `.c.<name>`."""
    if session.get_bind().dialect.name == "postgresql":
        # Imported here: only PostgreSQL catalogs pay for importing its dialect (~70 ms).
        from sqlalchemy.dialects.postgresql import ARRAY

        arrays = [
            func.unnest(bindparam(f"{name}_{col}", [row[i] for row in rows],
                                  type_=ARRAY(_TYPES[kind]))).label(col)
            for i, (col, kind) in enumerate(columns)]
        return select(*arrays).subquery(name)
    each = func.json_each(bindparam(f"{name}_json", json.dumps(rows, separators=(",", ":")))
                          ).table_valued("value")
    values = [type_coerce(func.json_extract(each.c.value, f"$[{i}]"), _TYPES[kind]).label(col)
              for i, (col, kind) in enumerate(columns)]
    # WHERE true: lets an INSERT ... SELECT from it take an ON CONFLICT clause in SQLite.
    return select(*values).select_from(each).where(true()).subquery(name)
