"""Test and benchmark kits: realistic fixture collections, manifests and link checkers.

Never imported by the product package `archive_pipelines`; only tests and benchmarks use it.
"""
