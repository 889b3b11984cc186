"""A deterministic test web: many virtual hosts on one loopback port, for crawler tests.

Pure parts (`graph`, `render`, `routes`) say what any page is without a server; `TestWeb`
serves them; `background` runs it in a thread or as a separate process;
`python -m archive_testkit.testweb` is the CLI the benchmark starts. `docs_site` is a
single-host documentation site (on the host `docs_host` when `docs_pages` > 0);
`archive_testkit.testweb.static_server` writes it as files and serves them with Python's
threaded `http.server` (not imported here: it is also run with `python -m`).
`js_pages` is a JavaScript test site under `/js/` on every live host (pages a browser archives
fully and a crawler without one does not, with their truth: `NEEDS_BROWSER`, `FINE_OVER_HTTP`,
`BROWSER_RESOURCES`, `SCRIPT_ONLY`), and `script_built` the "mixed" web
(`script_built_fraction` of the ordinary pages built by script; default none). A browser
reaches the *.test hosts by using the test web as its HTTP proxy.
"""

from archive_testkit.testweb.background import (
    TestWebProcess,
    ThreadedTestWeb,
    run_in_thread,
    serve_in_background,
    serve_in_subprocess,
)
from archive_testkit.testweb.config import TestWebConfig, all_hosts, host_name
from archive_testkit.testweb.docs_site import docs_links, docs_paths, render_docs_page
from archive_testkit.testweb.graph import absolute_links, is_page_path, page_links, page_path
from archive_testkit.testweb.hosts import (
    DeadMode,
    HostTraits,
    RobotsKind,
    host_traits,
    hosts_where,
)
from archive_testkit.testweb.render import render_page
from archive_testkit.testweb.requestlog import RequestLog, RequestRecord, read_jsonl
from archive_testkit.testweb.resolver import TestWebResolver
from archive_testkit.testweb.routes import Reply, resolve
from archive_testkit.testweb.script_built import is_script_built
from archive_testkit.testweb.server import TestWeb

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
    "docs_links",
    "docs_paths",
    "host_name",
    "host_traits",
    "hosts_where",
    "is_page_path",
    "is_script_built",
    "page_links",
    "page_path",
    "read_jsonl",
    "render_docs_page",
    "render_page",
    "resolve",
    "run_in_thread",
    "serve_in_background",
    "serve_in_subprocess",
]
