"""`python -m frontier_service`: the same as the `frontier-service` command."""

import sys

from frontier_service.cli import main

if __name__ == "__main__":
    sys.exit(main())
