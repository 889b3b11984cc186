"""The licences of archive-pipelines' runtime dependencies, read from the installed metadata.

`runtime_closure` walks the `Requires-Dist` of the installed distribution recursively (extras
only where a requirement asks for them, environment markers evaluated with `packaging`);
`copyleft_of` reads a distribution's licence (its SPDX `License-Expression`, else its
`License ::` classifiers and a short `License` field) and says whether it is GPL, AGPL or LGPL.
tests/test_licences.py fails on a GPL or AGPL runtime dependency, and on an LGPL one not
reviewed below; README.md's "Licences" table is `python -m archive_testkit.licences`.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = "archive-pipelines"
# LGPL libraries reviewed for use by import (dynamic linking): psycopg2's licence is the LGPL
# with an exception for linking OpenSSL. A new LGPL dependency fails the test until added here.
REVIEWED_LGPL = frozenset({"psycopg2-binary"})
_SHORT_LICENCE = 100  # a longer `License` field is the licence's whole text


class Copyleft(IntEnum):
    """How strongly a licence binds the code that uses it (ordered: the larger, the stricter)."""

    NONE = 0
    LGPL = 1
    GPL = 2
    AGPL = 3


class Metadata(Protocol):
    """What importlib.metadata's PackageMetadata (and email.message.Message) offer."""

    def get_all(self, name: str) -> list[Any] | None: ...


def _field(metadata: Metadata, name: str) -> str | None:
    values = metadata.get_all(name)
    return str(values[0]) if values else None


@dataclass(frozen=True)
class Licensed:
    """One distribution of the closure, its licence as written and how copyleft it is."""

    name: str
    version: str
    licence: str
    copyleft: Copyleft | None  # None: no licence information at all


def runtime_closure(root: str = ROOT, *,
                    find: Callable[[str], importlib.metadata.Distribution] = importlib.metadata.distribution,
                    ) -> dict[str, importlib.metadata.Distribution]:
    """Every installed distribution `root` needs at run time, by canonical name (root included)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    walked: dict[str, set[str]] = {}  # name -> the extras its requirements were read with
    pending: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name)
        if key in walked and extras <= walked[key]:
            continue
        walked.setdefault(key, set()).update(extras)
        distribution = found.get(key) or find(name)
        found[key] = distribution
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if _applies(requirement, walked[key]):
                pending.append((requirement.name, frozenset(requirement.extras)))
    return found


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    """Whether a requirement holds here, with the extras its dependent was asked for."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *extras))


def licence_text(metadata: Metadata) -> str:
    """The licence as the distribution states it, short: SPDX expression, field or classifiers."""
    expression = _field(metadata, "License-Expression")
    if expression:
        return expression.strip()
    field = (_field(metadata, "License") or "").strip()
    classifiers = _licence_classifiers(metadata)
    if field and len(field) <= _SHORT_LICENCE and "\n" not in field and len(classifiers) < 2:
        return field
    if classifiers:  # several say more than a short field ("Dual License")
        return " / ".join(classifier.rsplit(" :: ", 1)[-1] for classifier in classifiers)
    return field.splitlines()[0] if field else ""


def copyleft_of(metadata: Metadata) -> Copyleft | None:
    """How copyleft a distribution's licence is; None when it states none.

    An SPDX expression is read as written (`MIT OR GPL-2.0` is MIT's choice, `MIT AND GPL-2.0`
    binds as the GPL); without one, the strictest of its classifiers and `License` field counts.
    """
    expression = _field(metadata, "License-Expression")
    if expression:
        return _expression_copyleft(expression)
    texts = list(_licence_classifiers(metadata))
    field = (_field(metadata, "License") or "").strip()
    if field and (len(field) <= _SHORT_LICENCE or not texts):
        texts.append(field)
    if not texts:
        return None
    return max(_text_copyleft(text) for text in texts)


def _expression_copyleft(expression: str) -> Copyleft:
    if "(" in expression:  # nested choices: read every identifier as binding
        return _text_copyleft(expression)
    alternatives = re.split(r"\s+OR\s+", expression.strip())
    return min(_text_copyleft(alternative) for alternative in alternatives)


def _text_copyleft(text: str) -> Copyleft:
    if re.search(r"\bAGPL|Affero", text):
        return Copyleft.AGPL
    if re.search(r"\bLGPL|Lesser General Public|Library General Public|Library or Lesser", text):
        return Copyleft.LGPL
    if re.search(r"\bGPL|General Public License", text):
        return Copyleft.GPL
    return Copyleft.NONE


def _licence_classifiers(metadata: Metadata) -> list[str]:
    return [classifier for classifier in metadata.get_all("Classifier") or []
            if classifier.startswith("License ::")]


def licences(closure: dict[str, importlib.metadata.Distribution]) -> list[Licensed]:
    """Each distribution of a closure with its licence, by name."""
    return [Licensed(name=key, version=distribution.version, licence=licence_text(distribution.metadata),
                     copyleft=copyleft_of(distribution.metadata))
            for key, distribution in sorted(closure.items())]


def refused(entries: Iterable[Licensed], *, reviewed_lgpl: frozenset[str] = REVIEWED_LGPL) -> list[Licensed]:
    """The entries a permissively licensed product cannot ship with: GPL, AGPL, unreviewed LGPL,
    and those that state no licence at all."""
    return [entry for entry in entries
            if entry.copyleft is None or entry.copyleft >= Copyleft.GPL
            or (entry.copyleft == Copyleft.LGPL and entry.name not in reviewed_lgpl)]


def markdown_table(entries: Iterable[Licensed]) -> str:
    """The README table: package and licence, one row each (the project itself left out)."""
    rows = ["| Package | Licence |", "| --- | --- |"]
    rows += [f"| {entry.name} | {entry.licence.replace('|', '/')} |"
             for entry in entries if entry.name != ROOT]
    return "\n".join(rows) + "\n"


def main() -> None:
    print(markdown_table(licences(runtime_closure())), end="")


if __name__ == "__main__":
    main()
