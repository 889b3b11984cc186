"""Stopping process groups (the Dagit kit's servers, `make cluster`'s children): a whole group
goes, children that ignore SIGTERM too; ProcessGroups stops its children in reverse order."""

import subprocess
import time
from pathlib import Path

from archive_testkit.process_groups import ProcessGroups, group_alive, stop_groups


def _group(script: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    time.sleep(0.3)  # its children started
    return proc


def test_sigterm_ends_a_group_that_honours_it() -> None:
    proc = _group("sleep 300 & sleep 300 & wait")
    stop_groups([proc], timeout=10)
    assert not group_alive(proc)


def test_sigkill_ends_children_that_ignore_sigterm() -> None:
    ignoring = _group("trap '' TERM; sleep 300 & sleep 300 & wait")  # ignored, and inherited
    honouring = _group("sleep 300 & wait")
    stop_groups([ignoring, honouring], timeout=0.5)
    assert not group_alive(ignoring) and not group_alive(honouring)


def test_process_groups_stop_in_reverse_order_and_name_the_dead(tmp_path: Path) -> None:
    groups = ProcessGroups(tmp_path / "logs", env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    order = tmp_path / "order"
    for name in ("first", "second"):
        groups.spawn(name, ["bash", "-c", f"trap 'echo {name} >> {order}; exit 0' TERM; "
                                          "sleep 300 & wait"])
    groups.spawn("quitter", ["bash", "-c", "echo bye; exit 3"])
    time.sleep(0.5)
    try:
        groups.check_alive()
    except RuntimeError as exc:
        assert "quitter exited with status 3" in str(exc) and "bye" in str(exc)
    else:
        raise AssertionError("a dead child went unnoticed")
    started = [proc for _, proc in groups.children]
    groups.stop(grace=10)
    assert order.read_text().split() == ["second", "first"]
    assert groups.children == [] and not any(group_alive(proc) for proc in started)


def test_kill_ends_a_whole_group_at_once_with_no_chance_to_clean_up(tmp_path: Path) -> None:
    groups = ProcessGroups(tmp_path / "logs", env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    said = tmp_path / "said"
    lost = groups.spawn("lost", ["bash", "-c", f"trap 'echo term >> {said}' TERM; "
                                               "sleep 300 & sleep 300 & wait"])
    groups.spawn("kept", ["bash", "-c", "sleep 300 & wait"])
    time.sleep(0.5)
    groups.kill("lost")
    assert not group_alive(lost) and lost.returncode == -9
    assert not said.exists()  # SIGKILL, no SIGTERM first
    assert [name for name, _ in groups.children] == ["kept"]
    groups.check_alive()  # the killed child is no longer one of them
    groups.stop(grace=10)
