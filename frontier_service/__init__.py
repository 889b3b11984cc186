"""frontier_service: a fast, polite asyncio crawler on Redis + per-domain frontier files."""
