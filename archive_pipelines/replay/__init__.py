"""Replay, CDX and Memento over the catalog and the blob store: what an archived URL looked
like at a time, found by its SURT key (`tx.replay`). Plain Python, no Dagster."""
