"""`python -m archive_testkit.testweb --hosts 2000 --latency-ms 100 --port 8080`."""

import sys

from archive_testkit.testweb.cli import main

sys.exit(main())
