"""Thin Dagster wiring: assets.

Dagster 1.13 warns that parameters and classes we use on purpose are beta: `backfill_policy`
(the replica copies backfill 8 prefixes per run) and `owners` (on every asset; Dagster also warns
each time it copies a sensor, in every run's log), and the code references Dagit shows
(`with_source_code_references`, `CodeReferencesMetadataValue`, `LocalFileCodeReference`).
Only those warnings are filtered, here, before any definition is built (every wiring module
imports this package first).
"""

import warnings

import dagster as dg

for _parameter in ("backfill_policy", "owners"):
    warnings.filterwarnings("ignore", message=rf"Parameter `{_parameter}` of ", category=dg.BetaWarning)
for _name in ("Function `with_source_code_references`", "Class `CodeReferencesMetadataValue`",
              "Class `LocalFileCodeReference`"):
    warnings.filterwarnings("ignore", message=rf"{_name} is currently in beta", category=dg.BetaWarning)
