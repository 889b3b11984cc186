"""The architecture is a test: every import-linter contract in pyproject.toml is kept.

The contracts (domain code never imports Dagster, the product never imports the test kits,
the wiring sits above the domain, no import cycles, ...) are `[tool.importlinter]` in
pyproject.toml; `make lint` runs the same `lint-imports`. Test helpers are never imported
from a conftest nor from another test module, and a function takes its dependencies beyond the
third by keyword.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_every_import_contract_is_kept() -> None:
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"lint-imports failed:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout


# Where Python of this repository lives (not the virtualenv, not data dirs).
SOURCE_DIRS = ("archive_pipelines", "archive_testkit", "frontier_service", "tests", "bench",
               "scripts")


def python_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        found.extend(Path(directory, name) for name in names if name.endswith(".py"))
    return sorted(found)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every module `path` imports, `from a.b import c` giving `a.b` and
    `a.b.c` (c may be a module); relative imports keep their leading dots."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def conftest_imports(root: Path, folders: tuple[str, ...] = SOURCE_DIRS) -> list[str]:
    """`file:line module` for every import of a conftest module in `folders` under `root`."""
    found: list[str] = []
    for path in (path for folder in folders for path in python_files(root / folder)):
        if "conftest" not in path.read_text(encoding="utf-8"):  # parse only the few that could
            continue
        found.extend(f"{path.relative_to(root)}:{line} {module}"
                     for line, module in imported_modules(path)
                     if module.split(".")[-1] == "conftest")
    return found


_MAY_IMPORT_A_TEST_MODULE = re.compile(
    r"(?:from|import)\s+(?:tests\.[\w.]*test_|\.+test_)"  # tests.a.test_b, .test_b
    r"|from\s+(?:tests[\w.]*|\.+)\s+import\s*\(?[^)]*?\btest_")  # from tests.a import test_b


def imports_of_test_modules(root: Path, folders: tuple[str, ...] = SOURCE_DIRS) -> list[str]:
    """`file:line module` for every import of a test module (`tests.….test_*`, or `.test_*`)."""
    found: list[str] = []
    for path in (path for folder in folders for path in python_files(root / folder)):
        if not _MAY_IMPORT_A_TEST_MODULE.search(path.read_text(encoding="utf-8")):
            continue  # parse only the files that could
        for line, module in imported_modules(path):
            if module.rsplit(".", 1)[-1].startswith("test_") and (
                    module.startswith("tests.") or module.startswith(".")):
                found.append(f"{path.relative_to(root)}:{line} {module}")
    return sorted(set(found))


@pytest.mark.unit
def test_no_module_imports_from_a_conftest() -> None:
    """Conftests hold fixtures; the helpers tests share live in tests/helpers or archive_testkit
    (a helper read out of a conftest hides where it lives and who shares it)."""
    assert conftest_imports(REPO) == []


@pytest.mark.unit
def test_the_conftest_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_x.py").write_text(
        "from tests.blobstore.conftest import MakeStore\nimport tests.storage.conftest\n"
        "from tests.migration import conftest\nfrom tests.helpers.storage import sha\n")
    assert conftest_imports(tmp_path, ("pkg",)) == [
        "pkg/test_x.py:1 tests.blobstore.conftest", "pkg/test_x.py:2 tests.storage.conftest",
        "pkg/test_x.py:3 tests.migration.conftest"]


def catalog_submodule_imports(root: Path, folders: tuple[str, ...] = (
        "archive_pipelines", "frontier_service")) -> list[str]:
    """`file:line module` for every import of a catalog submodule outside the catalog."""
    catalog = root / "archive_pipelines" / "catalog"
    found = []
    for path in (path for folder in folders for path in python_files(root / folder)):
        if path.is_relative_to(catalog):
            continue
        text = path.read_text(encoding="utf-8")
        if "archive_pipelines.catalog" not in text:
            continue
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "archive_pipelines.catalog":
                # `from archive_pipelines.catalog import <a submodule>` reaches past the face too
                modules = [f"{node.module}.{alias.name}" for alias in node.names
                           if (catalog / f"{alias.name}.py").exists() or (catalog / alias.name).is_dir()]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            found.extend(f"{path.relative_to(root)}:{node.lineno} {module}" for module in modules
                         if module.startswith("archive_pipelines.catalog."))
    return found


@pytest.mark.unit
def test_the_product_reaches_the_catalog_only_through_its_public_face() -> None:
    """Outside archive_pipelines/catalog the product imports catalog names from
    `archive_pipelines.catalog` (its `__init__`), never from a catalog module."""
    assert catalog_submodule_imports(REPO) == []


@pytest.mark.unit
def test_the_catalog_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "archive_pipelines" / "catalog").mkdir(parents=True)
    (tmp_path / "archive_pipelines" / "catalog" / "models.py").write_text("")
    (tmp_path / "archive_pipelines" / "storage").mkdir()
    (tmp_path / "archive_pipelines" / "storage" / "a.py").write_text(
        "from archive_pipelines.catalog import Catalog\n"
        "from archive_pipelines.catalog.models import Blob\n"
        "from archive_pipelines.catalog import models\n")
    assert catalog_submodule_imports(tmp_path) == [
        "archive_pipelines/storage/a.py:2 archive_pipelines.catalog.models",
        "archive_pipelines/storage/a.py:3 archive_pipelines.catalog.models"]


# `session` is supplied by the catalog's repository decorators, never by a caller.
NOT_PASSED = frozenset({"self", "cls", "session"})
MAX_POSITIONAL = 3


def positional_excess(root: Path, folders: tuple[str, ...] = (
        "archive_pipelines", "frontier_service")) -> list[str]:
    """`file:line name: why` for every function that takes more than three parameters by
    position, or a boolean by position."""
    found = []
    for path in (path for folder in folders for path in python_files(root / folder)):
        if "migrations" in path.relative_to(root).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            positional = [a for a in node.args.posonlyargs + node.args.args if a.arg not in NOT_PASSED]
            where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
            if len(positional) > MAX_POSITIONAL:
                found.append(f"{where}: {len(positional)} positional parameters")
            found.extend(f"{where}: boolean {a.arg} by position" for a in positional
                         if a.annotation is not None
                         and ast.unparse(a.annotation) in ("bool", "bool | None"))
    return found


@pytest.mark.unit
def test_dependencies_beyond_the_third_are_keyword_only() -> None:
    """A function takes at most three parameters by position, the rest after `*`, and
    never a boolean by position (STYLE.md, rule 16)."""
    assert positional_excess(REPO) == []


@pytest.mark.unit
def test_the_keyword_check_finds_both(tmp_path: Path) -> None:
    (tmp_path / "archive_pipelines").mkdir()
    (tmp_path / "archive_pipelines" / "a.py").write_text(
        "def fine(self, a, b, c, *, d, e): ...\n"
        "def wide(a, b, c, d): ...\n"
        "def flag(a, dry_run: bool): ...\n"
        "def flag_ok(a, *, dry_run: bool): ...\n")
    assert positional_excess(tmp_path) == [
        "archive_pipelines/a.py:2 wide: 4 positional parameters",
        "archive_pipelines/a.py:3 flag: boolean dry_run by position"]
@pytest.mark.unit
def test_no_module_imports_from_a_test_module() -> None:
    """A helper two test modules share lives in tests/helpers or archive_testkit: importing it
    out of another test module runs that module's import-time setup and hides the sharing."""
    assert imports_of_test_modules(REPO) == []


@pytest.mark.unit
def test_the_test_module_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_x.py").write_text(
        "from tests.cli.test_cli import run_cli\nimport tests.storage.test_gc\n"
        "from tests.migration import test_steps\nfrom .test_y import FLAT\n"
        "from tests.helpers.cli import run_cli as run\nfrom archive_pipelines import test_data\n")
    assert imports_of_test_modules(tmp_path, ("pkg",)) == [
        "pkg/test_x.py:1 tests.cli.test_cli", "pkg/test_x.py:2 tests.storage.test_gc",
        "pkg/test_x.py:3 tests.migration.test_steps", "pkg/test_x.py:4 .test_y"]
