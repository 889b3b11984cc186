"""A hostile website on loopback, for tests of what a crawler must survive.

One server, any Host header (map as many host names to it as you like). Routes:

- `/robots.txt`: allows everything.
- `/`: links to one example of every route below.
- `/bombs/` (`?n=` per kind, default `HostileConfig.bombs_per_kind`): links to bombs of
  every kind, `/bomb/{kind}/{n}`.
- `/bomb/{kind}/{n}`: a compression bomb, `text/html` with Content-Encoding `kind`: `gzip`,
  `deflate` (zlib-wrapped), `deflate-raw` (raw deflate, sent as `deflate`), `br`, `zstd`,
  `gzip+br` (Content-Encoding `gzip, br`). Each inflates to `HostileConfig.bomb_bytes` of
  zeros (1 GiB by default; a 10 GiB gzip bomb is 10 MB on the wire). `n` only makes URLs
  distinct.
- `/odd-encoding/{token}`: a short body with Content-Encoding `token` as given (an unknown
  one, e.g. `x-hostile`); `/odd-encoding/corrupt-gzip`: gzip broken after 200 bytes.
- `/trickle/{n}`: Content-Length n, one byte every `trickle_interval_s` (1 s).
- `/reset/{n}`: promises 2n bytes, sends n, then resets the connection (RST).
- `/huge-headers/{kb}`: one `X-Huge` header of kb KiB. `/many-headers/{n}`: n headers.
- `/redirect/{n}`: a chain of n 302s ending at a page. `/redirect-loop/a`: a <-> b forever.
- `/links/{n}`: a page of n distinct links to `/page/{i}` (e.g. `/links/50000`).
- `/page/{name}`: a small page that links nowhere.
- `/credentials/`: links with userinfo (`http://user:pw@HOST/page/secret-0`, protocol-
  relative `//token@HOST/...`, an `<img>`), to this host; `pages.CREDENTIAL_USERINFO`.
- `/calendar/{yyyy}/{mm}/` (and `/{dd}/` below it): a trap, each month linking the next
  and the previous, without end.
- `/css/`: a page whose stylesheet is `/css/huge-{kb}.css` (`HostileConfig.css_kb`, 2 MiB):
  rules with `url()` images, `@font-face` fonts and `@import`s; `/img/...`, `/fonts/...`
  and other `/css/...` answer small bodies.

Run it in a thread (`serve_hostile`) or, so that its CPU is not the caller's, as
`python -m archive_testkit.hostile --port 0` (`serve_hostile_in_subprocess`), which prints
one JSON line with its port.
"""

from archive_testkit.hostile.background import serve_hostile, serve_hostile_in_subprocess
from archive_testkit.hostile.bombs import ENCODINGS, bomb, crc32_of_zeros
from archive_testkit.hostile.pages import CREDENTIAL_USERINFO
from archive_testkit.hostile.server import HostileConfig, HostileSite

__all__ = [
    "CREDENTIAL_USERINFO",
    "ENCODINGS",
    "HostileConfig",
    "HostileSite",
    "bomb",
    "crc32_of_zeros",
    "serve_hostile",
    "serve_hostile_in_subprocess",
]
