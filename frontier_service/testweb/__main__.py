"""`python -m frontier_service.testweb --hosts 2000 --latency-ms 100 --port 8080`."""

import sys

from frontier_service.testweb.cli import main

sys.exit(main())
