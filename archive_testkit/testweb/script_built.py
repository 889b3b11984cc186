"""The "mixed" test web: a share `script_built_fraction` of the ordinary pages (home pages
never) built by script, as a browser sees them the same page as ever.

A script-built page answers a shell: the page's own `<head>` (shared stylesheet, script and
font) and an empty `<div id="app">` with an inline script that `fetch()`es `data_path(path)`
and puts its `html` (the ordinary page's body: header image, nav, prose and every link of
`graph.page_links`) into the div. So a browser's DOM holds exactly the ordinary page's links,
and HTML parsing of the shell finds none of them. Off by default (fraction 0): the pages and
their bytes are then unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.graph import is_page_path
from archive_testkit.testweb.seeding import stable_fraction

DATA_PREFIX = "/_built"
DATA_SUFFIX = ".json"

Renderer = Callable[[TestWebConfig, str, str], bytes]


def is_script_built(config: TestWebConfig, host: str, path: str) -> bool:
    """Whether the page at `path` (no query) of `host` (a host name as the test web spells
    it) is built by script."""
    return (config.script_built_fraction > 0 and path != "/" and is_page_path(config, path)
            and stable_fraction(config.seed, "script-built", host, path)
            < config.script_built_fraction)


def data_path(path: str) -> str:
    """Where a script-built page's script fetches its content from."""
    return f"{DATA_PREFIX}{path}{DATA_SUFFIX}"


def page_of_data_path(path: str) -> str | None:
    """The page a data path belongs to (whether or not that page is script-built)."""
    if path.startswith(DATA_PREFIX + "/") and path.endswith(DATA_SUFFIX):
        return path[len(DATA_PREFIX):-len(DATA_SUFFIX)]
    return None


def shell_page(config: TestWebConfig, host: str, path: str, *, render: Renderer) -> bytes:
    """The HTML a script-built page answers."""
    head, _ = _split(render(config, host, path))
    script = (f'<div id="app"></div>\n<script>\nfetch({json.dumps(data_path(path))})'
              '.then(r => r.json()).then(data => {\n'
              '  document.getElementById("app").innerHTML = data.html;\n'
              '  document.body.dataset.built = "1";\n});\n</script>\n</body>\n</html>\n')
    return head + script.encode()


def page_data(config: TestWebConfig, host: str, path: str, *, render: Renderer) -> bytes:
    """The JSON a script-built page fetches: {"html": the ordinary page's body}."""
    _, body = _split(render(config, host, path))
    return json.dumps({"html": body.decode("utf-8")}).encode()


def _split(page: bytes) -> tuple[bytes, bytes]:
    """(everything up to and including `<body>\\n`, the body's content) of an ordinary page."""
    start = page.index(b"<body>\n") + len(b"<body>\n")
    end = page.rindex(b"</body>")
    return page[:start], page[start:end]
