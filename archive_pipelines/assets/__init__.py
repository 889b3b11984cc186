"""Thin Dagster wiring: assets.

Dagster 1.13 warns that two parameters we pass on purpose are beta: `backfill_policy` (the
replica copies backfill as one run) at import, and its own `owners` each time it copies a
sensor (in every run's log; we pass no owners). Only those two warnings are filtered, here,
before any definition is built (every wiring module imports this package first).
"""

import warnings

import dagster as dg

for _parameter in ("backfill_policy", "owners"):
    warnings.filterwarnings("ignore", message=rf"Parameter `{_parameter}` of ", category=dg.BetaWarning)
