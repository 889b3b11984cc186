"""Crawls defined in the settings, queued from Dagster or the command line and taken by the
long-running crawler (`frontier-service serve`)."""
