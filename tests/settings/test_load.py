from pathlib import Path

import pytest

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.settings import Settings, load_settings, render_default_toml

pytestmark = pytest.mark.unit


def test_defaults_need_nothing_installed(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={})
    assert settings.data_dir == tmp_path.resolve()
    assert settings.catalog_url == f"sqlite:///{tmp_path.resolve() / 'catalog.sqlite3'}"
    assert settings.redis.url == "embedded"
    assert settings.primary_store.kind == "local"
    assert settings.primary_store.codec == "raw"
    assert settings.local_path(settings.primary_store.path) == tmp_path.resolve() / "cas"
    assert settings.views.enabled == ["by_domain", "by_date", "by_user", "by_timestamp"]


def test_rendered_default_file_means_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "archive.toml").write_text(render_default_toml())
    from_file = load_settings(tmp_path, environ={})
    assert from_file == Settings(data_dir=tmp_path.resolve())


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    (tmp_path / "archive.toml").write_text(
        '[catalog]\nurl = "sqlite:///x.db"\n'
        '[[stores]]\nname = "primary"\npath = "cas"\ncodec = "raw"\n'
        '[[stores]]\nname = "s3"\nkind = "s3"\nbucket = "b"\n'
    )
    env = {"DATABASE_URL": "postgresql://u:secret@db/archive", "REDIS_URL": "redis://r:6379/1",
           "S3_ENDPOINT_URL": "http://127.0.0.1:9000"}
    settings = load_settings(tmp_path, environ=env)
    assert settings.catalog_url == "postgresql+psycopg2://u:secret@db/archive"
    assert settings.redis.url == "redis://r:6379/1"
    assert settings.store("s3").endpoint_url == "http://127.0.0.1:9000"


def test_data_dir_from_environment(tmp_path: Path) -> None:
    settings = load_settings(None, environ={"ARCHIVE_DATA_DIR": str(tmp_path / "d")})
    assert settings.data_dir == (tmp_path / "d").resolve()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[catalog\nurl=1", "not valid TOML"),
        ("[catalog]\nurll = 'x'\n", "unknown setting `catalog.urll`"),
        ("colour = 'blue'\n", "unknown setting `colour`"),
        ("[replication]\nretention = 0\n", "`replication.retention`"),
        ("[views]\nenabled = ['by_colour']\n", "`views.enabled.0`"),
        ("[storage]\nprimary = 'nope'\n", "names no configured store"),
        ("[[stores]]\nname='primary'\npath='a'\n[[stores]]\nname='primary'\npath='b'\n",
         "duplicate store name"),
        ("[[stores]]\nname='primary'\nkind='s3'\n", "needs `bucket`"),
        ("[[stores]]\nname='Bad Name'\npath='x'\n", "store name"),
        ("data_dir = '/elsewhere'\n", "cannot be set in the file"),
        ("[crawl]\nprocesses = 'many'\n", "`crawl.processes"),
        ("[crawl]\nprocesses = 0\n", "`crawl.processes"),
        ("[import]\ninbox_settle_seconds = -1\n", "`import.inbox_settle_seconds`"),
        ("[import]\ninboxx = 'x'\n", "unknown setting `import.inboxx`"),
        ("[qa]\nthreshold = 1.5\n", "`qa.threshold`"),
        ("[qa]\nsample_pages = -1\n", "`qa.sample_pages`"),
        ("[qa]\nreplay_url = 'ftp://x'\n", "`qa.replay_url`"),
    ],
)
def test_bad_settings_give_one_clear_line(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "archive.toml").write_text(text)
    with pytest.raises(SettingsError) as info:
        load_settings(tmp_path, environ={})
    message = str(info.value)
    assert expected in message
    assert "archive.toml" in message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "expected"), [("'auto'", "auto"), ("3", 3)])
def test_crawl_processes_is_a_count_or_auto(tmp_path: Path, text: str, expected: object) -> None:
    (tmp_path / "archive.toml").write_text(f"[crawl]\nprocesses = {text}\n")
    assert load_settings(tmp_path, environ={}).crawl.processes == expected


def test_the_import_section_is_read_as_imports(tmp_path: Path) -> None:
    """`[import]` in the file (a Python keyword: the attribute is `imports`)."""
    assert load_settings(tmp_path, environ={}).imports.inbox == "inbox"
    (tmp_path / "archive.toml").write_text('[import]\ninbox = "/srv/drop"\ninbox_settle_seconds = 5\n')
    settings = load_settings(tmp_path, environ={})
    assert settings.local_path(settings.imports.inbox) == Path("/srv/drop")
    assert settings.imports.inbox_settle_seconds == 5.0
