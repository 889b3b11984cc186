"""Print tests/file_seconds.json's table (file -> wall seconds, longest first) from the JSON a
`pytest --cpu-report=FILE` run wrote (tests/helpers/cpu_report.py). See tests/helpers/file_order.py.

    .venv/bin/python scripts/test_file_seconds.py /tmp/cpu.json > tests/file_seconds.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    report = json.loads(Path(argv[0]).read_text())
    table = {entry["module"]: round(entry["wall_s"], 1) for entry in report["modules"]}
    ordered = dict(sorted(table.items(), key=lambda kv: (-kv[1], kv[0])))
    print(json.dumps(ordered, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
