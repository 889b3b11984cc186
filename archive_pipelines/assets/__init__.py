"""Thin Dagster wiring: assets."""
