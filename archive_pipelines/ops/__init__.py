"""Ops and op-jobs for imperative work."""
