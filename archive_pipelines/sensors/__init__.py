"""Thin Dagster wiring: sensors."""
