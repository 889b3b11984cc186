"""Adopting ArchiveBox collections: versions, index.json, reconcile rules, layout, index.sqlite3.

Plain Python (no dagster): the lazy-migration wiring calls these functions.
"""
