"""Run keys for sensors that launch one run per batch."""

import hashlib


def batch_run_key(prefix: str, batch: list[str]) -> str:
    """Stable per batch content: the same batch is not launched twice while it runs."""
    return f"{prefix}-" + hashlib.sha256("\n".join(batch).encode()).hexdigest()[:20]
