"""The Dagit kit's stop: a server's whole process group goes, children that ignore SIGTERM too."""

import subprocess
import time

from archive_testkit.dagit import _group_alive, _stop_groups


def _group(script: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    time.sleep(0.3)  # its children started
    return proc


def test_sigterm_ends_a_group_that_honours_it() -> None:
    proc = _group("sleep 300 & sleep 300 & wait")
    _stop_groups([proc], timeout=10)
    assert not _group_alive(proc)


def test_sigkill_ends_children_that_ignore_sigterm() -> None:
    ignoring = _group("trap '' TERM; sleep 300 & sleep 300 & wait")  # ignored, and inherited
    honouring = _group("sleep 300 & wait")
    _stop_groups([ignoring, honouring], timeout=0.5)
    assert not _group_alive(ignoring) and not _group_alive(honouring)
