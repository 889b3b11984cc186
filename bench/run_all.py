"""Run every `bench/*_bench.py` (sorted) in turn, streaming its output; `make bench` runs this.

Exits non-zero if any benchmark failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


# Tools that compare two checkouts and need them named: run by hand, never by `make bench`.
NOT_STANDALONE = frozenset({"ab_bench.py"})


def discover(only: list[str]) -> list[Path]:
    """The benchmark scripts, sorted; with `only`, those whose name matches one of them."""
    scripts = sorted(p for p in BENCH_DIR.glob("*_bench.py") if p.name not in NOT_STANDALONE)
    if not only:
        return scripts
    wanted = {name.removesuffix(".py").removesuffix("_bench") for name in only}
    return [script for script in scripts if script.stem.removesuffix("_bench") in wanted]


def run(script: Path) -> tuple[int, float]:
    """Run one benchmark with this interpreter; its output goes straight to ours."""
    print(f"== {script.name}", flush=True)
    started = time.perf_counter()
    returncode = subprocess.run([sys.executable, str(script)], check=False).returncode
    return returncode, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this benchmark (`init`, `init_bench` or `init_bench.py`); "
                             "repeatable")
    args = parser.parse_args(argv)
    scripts = discover(args.only)
    if not scripts:
        print(f"error: no benchmark matches {', '.join(args.only) or '*_bench.py'} in {BENCH_DIR}",
              file=sys.stderr)
        return 2
    results = [(script.name, *run(script)) for script in scripts]
    print("\n== summary")
    for name, returncode, seconds in results:
        status = "ok" if returncode == 0 else f"FAILED ({returncode})"
        print(f"{status:<12}{name:<28}{seconds:>7.1f} s")
    return 1 if any(returncode for _, returncode, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
