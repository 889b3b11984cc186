"""`status` reads the schema revision without Alembic (catalog/schema_revision.py): its answers
are Alembic's, at every revision, and whatever it cannot read plainly is left to Alembic."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import text

from archive_pipelines.catalog import make_engine, migrate, schema_revision
from archive_pipelines.catalog.schema_revision import _script_head, current_revision, head_revision


def test_the_revisions_are_alembics_at_every_step(catalog_url: str) -> None:
    engine = make_engine(catalog_url)
    try:
        assert current_revision(engine) is None and migrate.current_revision(engine) is None
        oldest_first = reversed(list(ScriptDirectory(str(migrate.MIGRATIONS_DIR)).walk_revisions()))
        for script in oldest_first:
            command.upgrade(migrate.alembic_config(engine), script.revision)
            assert current_revision(engine) == migrate.current_revision(engine) == script.revision
        assert head_revision() == migrate.head_revision() == current_revision(engine)
    finally:
        engine.dispose()


@pytest.mark.unit
def test_several_version_rows_fail_as_alembic_does(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'catalog.sqlite3'}")
    migrate.upgrade_catalog(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0001_initial_catalog')"))
    with pytest.raises(CommandError) as alembics:
        migrate.current_revision(engine)
    with pytest.raises(CommandError) as ours:
        current_revision(engine)
    assert str(ours.value) == str(alembics.value)
    engine.dispose()


def _script(versions: Path, name: str, body: str) -> None:
    versions.mkdir(exist_ok=True)
    (versions / f"{name}.py").write_text(f'"""{name}"""\nfrom alembic import op\n\n{body}\n')


@pytest.mark.unit
def test_the_head_is_the_script_no_other_revises(tmp_path: Path) -> None:
    _script(tmp_path, "a", "revision = 'a'\ndown_revision = None")
    _script(tmp_path, "b", "revision: str = 'b'\ndown_revision = 'a'\nbranch_labels = None")
    _script(tmp_path, "c", "revision = 'c'\ndown_revision = ('b',)\ndepends_on = None")
    (tmp_path / "__init__.py").write_text("revision = 'not a migration'\n")
    assert _script_head(tmp_path) == "c"


@pytest.mark.unit
@pytest.mark.parametrize("body", [
    "revision = 'b'\ndown_revision = 'a'",  # a second head
    "revision = 'b'\ndown_revision = 'x'",  # revises a revision no script has
    "revision = 'a'\ndown_revision = None",  # the same revision twice
    "revision = 'b' + ''\ndown_revision = 'a'",  # not a literal
    "down_revision = 'a'",  # no revision
    "revision = 'b'\ndown_revision = 'a'\nbranch_labels = ('x',)",  # a branch
    "revision = 'b'\ndown_revision = 'a'\ndepends_on = 'a'",  # a dependency
    "revision = 'b'\ndown_revision = 'a'\ndef broken(:",  # not Python
])
def test_scripts_it_cannot_read_plainly_are_left_to_alembic(tmp_path: Path, body: str) -> None:
    _script(tmp_path, "a", "revision = 'a'\ndown_revision = None")
    _script(tmp_path, "c", "revision = 'c'\ndown_revision = 'a'")
    _script(tmp_path, "b", body)
    assert _script_head(tmp_path) is None


@pytest.mark.unit
def test_without_a_plain_head_alembic_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_revision, "_script_head", lambda _versions: None)
    monkeypatch.setattr(migrate, "head_revision", lambda: "alembic's head")
    assert head_revision() == "alembic's head"
