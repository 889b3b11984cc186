"""pywb 2.10, the peer `replay_bench.py --only replay` measures our replay server beside (not a
benchmark, and never a dependency of the project: it lives in its own virtualenv,
`bench/.work/pywb-venv`, made by `scripts/ensure-bench-deps.sh`).

`ensure_collection` makes a pywb directory holding one collection, `bench`, whose archive is
the corpus's WARC (hard-linked) indexed by pywb's own indexer (`wb-manager reindex`: a sorted
CDXJ file), cached beside the WARC. The config asks for what our server does: no frame
(`framed_replay: false`, the rewritten page itself at `/bench/<timestamp>/<url>`), a redirect
to the exact timestamp when the asked one differs (`redirect_to_exact`, as a 307), Memento
headers. `start_pywb` runs `wayback` (pywb's gevent server, one process) on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
VENV = BENCH_DIR / ".work" / "pywb-venv"
VERSION = "2.10.0"
COLLECTION = "bench"
CONFIG = """\
# written by bench/pywb_peer.py
framed_replay: false
redirect_to_exact: true
enable_memento: true
"""


def pywb_bin(name: str) -> Path:
    return VENV / "bin" / name


def check_venv() -> str:
    """pywb's version in its virtualenv; SystemExit saying how to make it when missing."""
    python = pywb_bin("python")
    if not python.exists():
        raise SystemExit(f"error: no pywb virtualenv at {VENV}: run scripts/ensure-bench-deps.sh")
    done = subprocess.run([str(python), "-c", "import pywb; print(pywb.__version__)"],
                          capture_output=True, text=True, check=False)
    version = done.stdout.strip()
    if done.returncode or version != VERSION:
        raise SystemExit(f"error: {VENV} holds pywb {version or '(none)'}, not {VERSION}: "
                         "run scripts/ensure-bench-deps.sh")
    return version


def _env() -> dict[str, str]:
    """Our environment without what would point pywb's Python at our code."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def ensure_collection(warc: Path) -> tuple[Path, float | None]:
    """pywb's directory for `warc` (indexed once) and the seconds indexing took (None: cached)."""
    root = warc.parent / "pywb"
    index = root / "collections" / COLLECTION / "indexes" / "index.cdxj"
    stamp = root / "indexed"
    if stamp.exists() and index.exists():
        return root, None
    if root.exists():
        shutil.rmtree(root)
    archive = root / "collections" / COLLECTION / "archive"
    archive.mkdir(parents=True)
    index.parent.mkdir(parents=True)
    os.link(warc, archive / warc.name)
    (root / "config.yaml").write_text(CONFIG)
    started = time.perf_counter()
    done = subprocess.run([str(pywb_bin("wb-manager")), "reindex", COLLECTION], cwd=root,
                          env=_env(), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode or not index.exists():
        raise SystemExit(f"error: wb-manager reindex failed ({done.returncode}): "
                         f"{(done.stderr or done.stdout)[-500:]}")
    stamp.write_text(f"{seconds:.1f}\n")
    return root, seconds


def wayback_command(port: int) -> list[str]:
    return [str(pywb_bin("wayback")), "-b", "127.0.0.1", "-p", str(port)]


def start_pywb(root: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`wayback` serving `root`'s collection on 127.0.0.1:`port`, in its own process group."""
    with open(log, "ab") as out:
        return subprocess.Popen(wayback_command(port), cwd=root, env=_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
