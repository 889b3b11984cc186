"""An import stopped part way (an exception between batches' commits) and run again imports
what an uninterrupted run would: a revisit after the stop that names its body by payload digest
alone (as wget writes them), whose response was committed before the stop, still resolves."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive_pipelines.warc import importer
from archive_pipelines.warc.import_run import run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget
from tests.helpers.captures import capture_primary, parts_of
from tests.helpers.import_crashes import import_state, write_crash_warc


class Stop(Exception):
    """The stop of the first run."""


def _import(data_dir: Path, warc: Path, *, stop_after: int | None = None) -> ImportReport:
    with parts_of(data_dir) as parts:
        target = ImportTarget(parts.catalog, capture_primary(parts), data_dir)
        read = 0

        def count(records: int) -> None:
            nonlocal read
            read += records
            if read == stop_after:
                raise Stop

        return run_import([warc], target=target, on_record=count)


def test_a_rerun_after_a_stop_resolves_revisits_by_digest_as_one_run_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "BATCH_RECORDS", 6)
    warc = tmp_path / "crash.warc.gz"
    write_crash_warc(warc)
    whole = _import(tmp_path / "whole", warc)
    assert whole.revisits == 20 and whole.unresolved_revisits == 0

    with pytest.raises(Stop):  # in the 8th batch: 7 committed
        _import(tmp_path / "stopped", warc, stop_after=45)
    again = _import(tmp_path / "stopped", warc)
    assert 0 < again.revisits < whole.revisits
    assert again.unresolved_revisits == 0, again.problems
    assert import_state(tmp_path / "stopped") == import_state(tmp_path / "whole")
