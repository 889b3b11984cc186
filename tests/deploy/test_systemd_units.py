"""deploy/systemd: the units an operator installs, checked by `systemd-analyze verify`.

The units name /opt/archive-pipelines (the checkout) and its .venv; rendered here with this
checkout's paths, so verify finds every ExecStart binary. A warning (an unknown key, a
misspelt section) fails the test as an error does.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
EXPECTED = {"archive-webserver.service", "archive-daemon.service", "archive-replay.service",
            "archive-crawler.service", "archive-celery-worker@.service"}


def _render(target: Path, *, edit: str = "") -> list[Path]:
    """The units with this checkout's paths, a worker instance (alpha) of the template, and
    `edit` appended to every [Service] section."""
    target.mkdir()
    env_file = target / "archive-pipelines.env"
    shutil.copy(UNITS / "archive-pipelines.env.example", env_file)
    rendered = []
    for unit in sorted(UNITS.glob("*.service")):
        text = (unit.read_text()
                .replace("/opt/archive-pipelines/.venv/bin", str(Path(sys.executable).parent))
                .replace("/opt/archive-pipelines", str(ROOT))
                .replace("/etc/archive-pipelines/archive-pipelines.env", str(env_file))
                .replace("[Install]", f"{edit}\n[Install]" if edit else "[Install]"))
        names = [unit.name] + (["archive-celery-worker@alpha.service"]
                               if unit.name.endswith("@.service") else [])
        for name in names:
            (target / name).write_text(text)
            rendered.append(target / name)
    return rendered


def _verify(units: list[Path]) -> str:
    """What systemd-analyze verify says about the units: empty when they are clean."""
    result = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", *map(str, units)],
                            capture_output=True, text=True, timeout=120, cwd=units[0].parent)
    said = (result.stdout + result.stderr).strip()
    return said or ("" if result.returncode == 0 else f"exit status {result.returncode}")


@pytest.fixture(scope="module", autouse=True)
def _systemd_analyze() -> None:
    if not Path(SYSTEMD_ANALYZE).exists():
        pytest.fail("systemd-analyze not found (apt-get install systemd)")


def test_the_units_verify_clean(tmp_path: Path) -> None:
    assert {unit.name for unit in UNITS.glob("*.service")} == EXPECTED
    assert _verify(_render(tmp_path / "units")) == ""


def test_a_broken_unit_is_reported(tmp_path: Path) -> None:
    """The check can fail: a misspelt key (a warning only) and a missing binary."""
    assert "Unknown key 'KilSignal'" in _verify(_render(tmp_path / "typo", edit="KilSignal=SIGTERM"))
    units = _render(tmp_path / "missing")
    (units[0]).write_text(units[0].read_text().replace(str(Path(sys.executable).parent),
                                                       "/nonexistent/bin"))
    assert "is not executable" in _verify(units)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_unit_restarts_and_stops_gracefully(name: str) -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string((UNITS / name).read_text())
    service = unit["Service"]
    assert service["Restart"] in ("always", "on-failure")
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) >= 30
    assert service["EnvironmentFile"] == "/etc/archive-pipelines/archive-pipelines.env"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
