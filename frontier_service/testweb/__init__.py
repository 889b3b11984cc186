"""A deterministic test web: many virtual hosts on one loopback port, for crawler tests.

Pure parts (`graph`, `render`, `routes`) say what any page is without a server; `TestWeb`
serves them; `background` runs it in a thread or as a separate process;
`python -m frontier_service.testweb` is the CLI the benchmark starts.
"""

from frontier_service.testweb.background import (
    TestWebProcess,
    ThreadedTestWeb,
    run_in_thread,
    serve_in_background,
    serve_in_subprocess,
)
from frontier_service.testweb.config import TestWebConfig, all_hosts, host_name
from frontier_service.testweb.graph import absolute_links, is_page_path, page_links, page_path
from frontier_service.testweb.hosts import (
    DeadMode,
    HostTraits,
    RobotsKind,
    host_traits,
    hosts_where,
)
from frontier_service.testweb.render import render_page
from frontier_service.testweb.requestlog import RequestLog, RequestRecord, read_jsonl
from frontier_service.testweb.resolver import TestWebResolver
from frontier_service.testweb.routes import Reply, resolve
from frontier_service.testweb.server import TestWeb

__all__ = [
    "DeadMode",
    "HostTraits",
    "Reply",
    "RequestLog",
    "RequestRecord",
    "RobotsKind",
    "TestWeb",
    "TestWebConfig",
    "TestWebProcess",
    "TestWebResolver",
    "ThreadedTestWeb",
    "absolute_links",
    "all_hosts",
    "host_name",
    "host_traits",
    "hosts_where",
    "is_page_path",
    "page_links",
    "page_path",
    "read_jsonl",
    "render_page",
    "resolve",
    "run_in_thread",
    "serve_in_background",
    "serve_in_subprocess",
]
