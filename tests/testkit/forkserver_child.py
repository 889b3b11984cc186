"""Child body for the fork server's tests: `python -m tests.testkit.forkserver_child WHAT ...`.

    exit N          print `out`, `err` to stdout and stderr, exit N
    env NAME...     print `NAME=value` (or `NAME unset`) for each
    cwd             print the working directory
    argv            print sys.argv as JSON
    raise TEXT      raise RuntimeError(TEXT)
    random          print random.random()
    sleep S         print `sleeping`, sleep S seconds
    grandchild      start `sleep 300` (its pid printed), print `started`, sleep 300 s
    pool N          square 0..N-1 in a spawn process pool, print the squares as JSON
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context


def square(n: int) -> int:
    return n * n


def main() -> None:
    what, args = sys.argv[1], sys.argv[2:]
    if what == "exit":
        print("out")
        print("err", file=sys.stderr)
        sys.exit(int(args[0]))
    elif what == "env":
        for name in args:
            print(f"{name}={os.environ[name]}" if name in os.environ else f"{name} unset")
    elif what == "cwd":
        print(os.getcwd())
    elif what == "argv":
        print(json.dumps(sys.argv))
    elif what == "raise":
        raise RuntimeError(args[0])
    elif what == "random":
        print(random.random())
    elif what == "sleep":
        print("sleeping", flush=True)
        time.sleep(float(args[0]))
    elif what == "grandchild":
        sleeper = subprocess.Popen(["sleep", "300"])
        print(sleeper.pid, flush=True)
        print("started", flush=True)
        time.sleep(300)
    elif what == "pool":
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            print(json.dumps(list(pool.map(square, range(int(args[0]))))))
    else:
        raise SystemExit(f"unknown: {what}")


if __name__ == "__main__":
    main()
