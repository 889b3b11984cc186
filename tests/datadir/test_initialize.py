from pathlib import Path

import pytest

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.catalog import Catalog, head_revision, make_engine
from archive_pipelines.datadir import DataDir, initialize
from archive_pipelines.datadir.initialize import HINT_SAMPLE
from archive_pipelines.settings import Settings, load_settings


@pytest.mark.unit
def test_init_creates_the_layout_and_is_idempotent(settings: Settings) -> None:
    first = initialize(settings)
    layout = DataDir(settings.data_dir)
    assert all(folder.is_dir() for folder in layout.folders())
    assert first.wrote_settings and first.wrote_dagster_yaml
    assert first.schema_before is None and first.schema_after == head_revision()
    assert "enabled: false" in (layout.dagster_home / "dagster.yaml").read_text()
    assert load_settings(settings.data_dir, environ={}) == settings

    layout.settings_file.write_text('[views]\nenabled = ["by_date"]\n')
    second = initialize(settings)
    assert not second.wrote_settings and not second.created_folders
    assert second.schema_before == head_revision()
    assert layout.settings_file.read_text() == '[views]\nenabled = ["by_date"]\n'
    assert second.pools_hint is None  # init's own dagster.yaml limits the pools


@pytest.mark.unit
def test_init_keeps_an_older_dagster_yaml_and_says_it_sets_no_pool_limit(
        settings: Settings) -> None:
    home = DataDir(settings.data_dir).dagster_home
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    report = initialize(settings)
    assert not report.wrote_dagster_yaml
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"
    assert report.pools_hint is not None and "default_limit: 1" in report.pools_hint


@pytest.mark.unit
def test_init_hints_at_unknown_legacy_folders_without_scanning(settings: Settings) -> None:
    archive = settings.data_dir / "archive"
    for name in ("1700000000.1", "1700000000.2", "by_domain", "notes"):
        (archive / name).mkdir(parents=True)
    initialize(settings)
    engine = make_engine(settings.catalog_url)
    Catalog(engine).snapshots.add_snapshot(url="https://a.example/", timestamp="1700000000.1")
    engine.dispose()
    report = initialize(settings)
    assert report.unknown_legacy_sample == 1
    assert not report.sample_truncated
    assert report.hint is not None and "1 folder(s)" in report.hint


@pytest.mark.unit
def test_init_sample_is_bounded(settings: Settings) -> None:
    archive = settings.data_dir / "archive"
    for i in range(HINT_SAMPLE + 50):
        (archive / f"17000{i:05d}.0").mkdir(parents=True)
    report = initialize(settings)
    assert report.sample_truncated
    assert report.unknown_legacy_sample <= HINT_SAMPLE
    assert report.hint is not None and "at least" in report.hint


@pytest.mark.unit
def test_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(DataDirError, match="not a directory"):
        initialize(Settings(data_dir=target))
    assert target.read_text() == "x"


@pytest.mark.unit
def test_data_dir_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DataDirError, match="cannot be created"):
        initialize(Settings(data_dir=blocker / "data"))


@pytest.mark.unit
def test_layout_guard_refuses_paths_outside(tmp_path: Path) -> None:
    layout = DataDir(tmp_path)
    assert layout.inside(Path("archive/x")) == tmp_path / "archive" / "x"
    with pytest.raises(DataDirError, match="outside the data dir"):
        layout.inside(Path("../elsewhere"))
    with pytest.raises(DataDirError):
        layout.inside(Path("/etc/passwd"))
