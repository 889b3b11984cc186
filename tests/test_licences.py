"""The runtime dependencies stay permissively licensed (the project is MIT): no GPL or AGPL
distribution in the installed closure of archive-pipelines, LGPL only where reviewed, and the
AGPL `surt` (with cdxj-indexer and py-wacz, which pull it in) out of it. README's licence table
is the closure's."""

from __future__ import annotations

import importlib.metadata
import re
from email.message import Message
from pathlib import Path

import pytest

from archive_testkit.licences import (
    Copyleft,
    Licensed,
    copyleft_of,
    licence_text,
    licences,
    markdown_table,
    refused,
    runtime_closure,
)

TEST_TIME_ONLY = ("surt", "cdxj-indexer", "wacz")


def test_no_runtime_dependency_is_gpl_or_agpl() -> None:
    entries = licences(runtime_closure())
    print(markdown_table(entries))  # what the closure holds, for the log (-s)
    assert len(entries) > 50  # the walk went past the direct requirements
    assert {"dagster", "warcio", "sqlalchemy", "grpcio", "packaging"} <= {entry.name for entry in entries}
    assert refused(entries) == []
    # LGPL today: psycopg2-binary alone (reviewed: used by import, LGPL with an OpenSSL exception).
    assert [entry.name for entry in entries if entry.copyleft == Copyleft.LGPL] == ["psycopg2-binary"]


def test_the_validators_are_installed_but_not_runtime_dependencies() -> None:
    closure = runtime_closure()
    for name in TEST_TIME_ONLY:
        importlib.metadata.distribution(name)  # installed (the dev extra): the check means something
        assert name not in closure


def test_the_check_refuses_the_validators_own_closure() -> None:
    """Run on py-wacz's closure, the check finds the AGPL `surt`: it would refuse it at run time.

    (It also refuses text-unidecode, "Artistic License or GPL" by its classifiers: classifiers
    do not say whether they are a choice, so the strictest counts.)"""
    entries = licences(runtime_closure("wacz"))
    assert ("surt", Copyleft.AGPL) in [(entry.name, entry.copyleft) for entry in refused(entries)]


def test_readme_lists_the_closures_licences() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = re.search(r"^## Licences\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    assert section is not None, "README.md has no '## Licences' section"
    assert markdown_table(licences(runtime_closure())) in section.group(1), (
        "README's licence table is out of date: python -m archive_testkit.licences")


def _metadata(**fields: str | list[str]) -> Message:
    message = Message()
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            message[name.replace("_", "-")] = item
    return message


@pytest.mark.unit
@pytest.mark.parametrize(("fields", "expected"), [
    ({"License_Expression": "MIT"}, Copyleft.NONE),
    ({"License_Expression": "GPL-3.0-or-later"}, Copyleft.GPL),
    ({"License_Expression": "AGPL-3.0-only"}, Copyleft.AGPL),
    ({"License_Expression": "LGPL-2.1-or-later"}, Copyleft.LGPL),
    ({"License_Expression": "MIT OR GPL-2.0-only"}, Copyleft.NONE),
    ({"License_Expression": "MIT AND GPL-2.0-only"}, Copyleft.GPL),
    ({"License_Expression": "(MIT OR Apache-2.0) AND AGPL-3.0-only"}, Copyleft.AGPL),
    ({"License_Expression": "GPL-2.0-only WITH Classpath-exception-2.0"}, Copyleft.GPL),
    ({"License": "GPLv3"}, Copyleft.GPL),
    ({"License": "GNU Affero General Public License v3"}, Copyleft.AGPL),
    ({"License": "LGPL with exceptions"}, Copyleft.LGPL),
    ({"License": "MPL-2.0 AND MIT"}, Copyleft.NONE),
    ({"Classifier": ["License :: OSI Approved :: GNU General Public License v3 (GPLv3)"]}, Copyleft.GPL),
    ({"Classifier": ["License :: OSI Approved :: GNU Affero General Public License v3"]}, Copyleft.AGPL),
    ({"Classifier": ["License :: OSI Approved :: GNU Library or Lesser General Public License (LGPL)"]},
     Copyleft.LGPL),
    ({"Classifier": ["License :: OSI Approved :: MIT License",
                     "License :: OSI Approved :: GNU General Public License v2 (GPLv2)"]}, Copyleft.GPL),
    ({"Classifier": ["License :: OSI Approved :: BSD License", "Programming Language :: Python"],
      "License": "Dual License"}, Copyleft.NONE),
    ({"License": "MIT", "Classifier": ["License :: OSI Approved :: GNU General Public License (GPL)"]},
     Copyleft.GPL),
    ({"License": "Permission is hereby granted...\n" + "x" * 500}, Copyleft.NONE),
    ({"Classifier": ["License :: OSI Approved :: Python Software Foundation License"],
      "License": "1. This LICENSE AGREEMENT ... not the GPL ...\n" + "x" * 500}, Copyleft.NONE),
    ({}, None),
])
def test_copyleft_of_synthetic_metadata(fields: dict[str, str | list[str]],
                                        expected: Copyleft | None) -> None:
    assert copyleft_of(_metadata(**fields)) == expected


@pytest.mark.unit
def test_refused_entries() -> None:
    def entry(name: str, copyleft: Copyleft | None) -> Licensed:
        return Licensed(name=name, version="1", licence="x", copyleft=copyleft)

    entries = [entry("mit", Copyleft.NONE), entry("gpl", Copyleft.GPL), entry("agpl", Copyleft.AGPL),
               entry("psycopg2-binary", Copyleft.LGPL), entry("new-lgpl", Copyleft.LGPL),
               entry("silent", None)]
    assert [e.name for e in refused(entries)] == ["gpl", "agpl", "new-lgpl", "silent"]


class _FakeDistribution(importlib.metadata.Distribution):
    """A distribution made of metadata text (the closure walk reads nothing else)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def read_text(self, filename: str) -> str | None:
        return self._text if filename == "METADATA" else None

    def locate_file(self, path: str | importlib.metadata.PackagePath) -> Path:  # type: ignore[override]
        raise FileNotFoundError(path)


_FAKES = {
    "app": "Name: app\nVersion: 1\nLicense-Expression: MIT\nRequires-Dist: lib\n"
           "Requires-Dist: extra-only; extra == 'dev'\nRequires-Dist: win-only; sys_platform == 'win32'\n"
           "Requires-Dist: lib2[fancy]\n",
    "lib": "Name: lib\nVersion: 1\nLicense: BSD\n",
    "lib2": "Name: lib2\nVersion: 1\nLicense: MIT\nRequires-Dist: gpl-thing; extra == 'fancy'\n",
    "gpl-thing": "Name: gpl-thing\nVersion: 1\nClassifier: License :: OSI Approved :: "
                 "GNU General Public License v3 (GPLv3)\n",
}


@pytest.mark.unit
def test_a_gpl_package_pulled_in_through_an_extra_is_refused() -> None:
    closure = runtime_closure("app", find=lambda name: _FakeDistribution(_FAKES[name]))
    assert sorted(closure) == ["app", "gpl-thing", "lib", "lib2"]  # no dev extra, no Windows-only
    entries = licences(closure)
    assert [e.name for e in refused(entries)] == ["gpl-thing"]
    assert licence_text(closure["gpl-thing"].metadata) == "GNU General Public License v3 (GPLv3)"
