"""Links into the replay server from elsewhere (Dagit's metadata, the demo): where
`archive-pipelines replay` listens, as its settings say, and a capture's Wayback URL there."""

from __future__ import annotations

from archive_pipelines.replay.timestamps import timestamp_of

_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def replay_base(host: str, port: int) -> str:
    """`http://host:port` of a replay server bound to `host` (an any-address bind is reached
    through loopback; an IPv6 address is bracketed)."""
    shown = _ANY_ADDRESS.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def capture_link(base: str, *, url: str, fetched_ms: int) -> str:
    """The Wayback URL of the capture of `url` at `fetched_ms` on the server at `base`."""
    return f"{base}/web/{timestamp_of(fetched_ms)}/{url}"
