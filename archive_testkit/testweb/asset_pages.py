"""Pages that load assets the ways a browser does, served under `/assets/` on every live host.

`/assets/gallery.html` names images by `src` and `srcset` (a URL with a comma in it too),
a `<picture>`, a video poster, an image button, an object, inline `<style>` and `style=""`
CSS, icons, preloads and stylesheets; `css/main.css` `@import`s two more stylesheets (one
served as text/plain, as misconfigured servers do), loads fonts from `@font-face` and
images relative to itself (not to the page). `GALLERY_ASSETS` is every URL path a browser
would request for the gallery, with what for, as the crawler's resource types name it
(`GALLERY_REDIRECTS`: those that redirect, and where to).
`/assets/many.html` names `MANY_IMAGES` images, for per-page asset budgets.
`/assets/scripted.html` builds its content at run time: its script fetches
`/assets/data/items.json` (a root-relative URL, as scripts write them) and inserts the
`SCRIPTED_IMAGES` it lists; `<link rel=preload>`s name them too, so a crawler that runs no
script still fetches them.
"""

from __future__ import annotations

import functools

from archive_testkit.testweb.assets import png
from archive_testkit.testweb.seeding import stable_rng

GALLERY = "/assets/gallery.html"
MANY = "/assets/many.html"
SCRIPTED = "/assets/scripted.html"
SCRIPTED_IMAGES = ("/assets/img/hero.png", "/assets/img/poster.png", "/assets/img/submit.png")
MANY_IMAGES = 40
CSS = "text/css; charset=utf-8"

_GALLERY_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Gallery</title>
<link rel="stylesheet" href="css/main.css">
<link rel="icon" href="/assets/icons/favicon.png">
<link rel="preload" href="fonts/preloaded.woff2" as="font" type="font/woff2" crossorigin>
<link rel="modulepreload" href="js/module.js">
<link rel="manifest" href="app.webmanifest">
<link rel="dns-prefetch" href="//cdn.invalid">
<style>
@import url("css/inline-import.css");
.hero { background: url('img/hero.png') no-repeat; } /* url(img/commented.png) */
</style>
</head>
<body style="background-image: url(img/body-bg.png)">
<img src="img/photo-400.png" alt="" sizes="50vw"
     srcset="img/photo-400.png 400w, img/photo-800.png?v=1,2 800w,img/photo-1600.png 1600w">
<picture>
  <source srcset="img/art-1x.png 1x, img/art-2x.png 2x" media="(min-width: 600px)">
  <img src="img/art-small.png" alt="">
</picture>
<video poster="img/poster.png" src="media/clip.webm"></video>
<input type="image" src="img/submit.png" alt="Go"><input type="text" src="img/not-an-image.png">
<object data="media/diagram.svg" type="image/svg+xml"></object>
<div style="background: url(&quot;img/div-bg.png&quot;)">framed</div>
<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">
<img src="img/moved.png" alt="">
<script src="js/app.js"></script>
<p><a href="/">home</a></p>
</body></html>
"""

_MAIN_CSS = r"""@charset "utf-8";
@import "nested/theme.css";
@import url(print.css) print;
/* url(img/commented-out.png) is a comment */
@font-face {
  font-family: "Body";
  src: url(../fonts/body.woff2) format("woff2"), url('../fonts/body.woff') format("woff"),
       local("Body Sans");
}
body { font-family: Body, sans-serif; background: #fff url(img/bg.png) repeat-x; }
.logo { background-image: url("data:image/svg+xml;utf8,<svg xmlns='x'/>"); }
.escaped { background: url(img/esc\61 ped.png); }
.quote::before { content: "url(img/not-a-url.png)"; }
"""

_THEME_CSS = """@font-face { font-family: Head; src: url(../../fonts/head.woff2) format("woff2"); }
h1 { background: url(../img/rule.png) }
"""

_PRINT_CSS = ".print { background: url(img/print-bg.png) }\n"
_INLINE_IMPORT_CSS = ".inline { background: url(img/inline-bg.png) }\n"

# Every request the gallery makes, path (query included) -> resource type.
GALLERY_ASSETS: dict[str, str] = {
    "/assets/css/main.css": "stylesheet",
    "/assets/icons/favicon.png": "image",
    "/assets/fonts/preloaded.woff2": "font",
    "/assets/js/module.js": "script",
    "/assets/app.webmanifest": "other",
    "/assets/css/inline-import.css": "stylesheet",
    "/assets/img/hero.png": "image",
    "/assets/img/body-bg.png": "image",
    "/assets/img/photo-400.png": "image",
    "/assets/img/photo-800.png?v=1,2": "image",
    "/assets/img/photo-1600.png": "image",
    "/assets/img/art-1x.png": "image",
    "/assets/img/art-2x.png": "image",
    "/assets/img/art-small.png": "image",
    "/assets/img/poster.png": "image",
    "/assets/media/clip.webm": "media",
    "/assets/img/submit.png": "image",
    "/assets/media/diagram.svg": "other",
    "/assets/img/div-bg.png": "image",
    "/assets/img/moved.png": "image",
    "/assets/js/app.js": "script",
    # From css/main.css, resolved against it.
    "/assets/css/nested/theme.css": "stylesheet",
    "/assets/css/print.css": "stylesheet",
    "/assets/fonts/body.woff2": "font",
    "/assets/fonts/body.woff": "font",
    "/assets/css/img/bg.png": "image",
    "/assets/css/img/escaped.png": "image",
    # From css/nested/theme.css, css/print.css and css/inline-import.css.
    "/assets/fonts/head.woff2": "font",
    "/assets/css/img/rule.png": "image",
    "/assets/css/img/print-bg.png": "image",
    "/assets/css/img/inline-bg.png": "image",
}

# Assets that redirect: path -> Location; the target is fetched as what the source was for.
GALLERY_REDIRECTS: dict[str, str] = {"/assets/img/moved.png": "/assets/img/moved-here.png"}

_SCRIPTED_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Scripted</title>
<link rel="preload" href="/assets/data/items.json" as="fetch" crossorigin>
""" + "".join(f'<link rel="preload" href="{src}" as="image">\n' for src in SCRIPTED_IMAGES) + """\
</head>
<body><div id="items"></div>
<script>
fetch("/assets/data/items.json").then(r => r.json()).then(items => {
  for (const src of items.images) {
    const img = document.createElement("img");
    img.src = src;
    img.className = "item";
    document.getElementById("items").append(img);
  }
  document.body.dataset.items = String(items.images.length);
});
</script>
</body></html>
"""
_ITEMS_JSON = '{"images": [' + ", ".join(f'"{src}"' for src in SCRIPTED_IMAGES) + ']}\n'

_TEXT_FILES: dict[str, tuple[str, str]] = {
    GALLERY: (_GALLERY_HTML, "text/html; charset=utf-8"),
    SCRIPTED: (_SCRIPTED_HTML, "text/html; charset=utf-8"),
    "/assets/data/items.json": (_ITEMS_JSON, "application/json"),
    "/assets/css/main.css": (_MAIN_CSS, CSS),
    "/assets/css/nested/theme.css": (_THEME_CSS, CSS),
    "/assets/css/print.css": (_PRINT_CSS, "text/plain; charset=utf-8"),
    "/assets/css/inline-import.css": (_INLINE_IMPORT_CSS, CSS),
    "/assets/js/module.js": ("export const ready = true;\n", "text/javascript"),
    "/assets/js/app.js": ("document.documentElement.dataset.app = '1';\n", "text/javascript"),
    "/assets/app.webmanifest": ('{"name": "Gallery"}\n', "application/manifest+json"),
    "/assets/media/diagram.svg": ('<svg xmlns="http://www.w3.org/2000/svg"/>\n', "image/svg+xml"),
}
_GALLERY_PATHS = frozenset([*(p.split("?", 1)[0] for p in GALLERY_ASSETS),
                            *GALLERY_REDIRECTS.values()]) - set(GALLERY_REDIRECTS)
_BINARY_TYPES = {".png": "image/png", ".woff2": "font/woff2", ".woff": "font/woff",
                 ".webm": "video/webm"}


def many_html() -> str:
    images = "".join(f'<img src="many/img-{n}.png" alt="">\n' for n in range(MANY_IMAGES))
    return f"<!DOCTYPE html>\n<html><body>\n{images}</body></html>\n"


def asset_file(path: str) -> tuple[bytes, str] | None:
    """(body, Content-Type) of `path` (decoded, no query string), or None if there is none."""
    if path == MANY:
        return many_html().encode(), "text/html; charset=utf-8"
    if path.startswith("/assets/many/img-") and path.endswith(".png"):
        number = path[len("/assets/many/img-"):-len(".png")]
        return (_binary(path), "image/png") if number.isdigit() else None
    if text := _TEXT_FILES.get(path):
        return text[0].encode(), text[1]
    suffix = path[path.rfind("."):]
    if path in _GALLERY_PATHS and suffix in _BINARY_TYPES:
        return _binary(path), _BINARY_TYPES[suffix]
    return None


@functools.lru_cache(maxsize=128)
def _binary(path: str) -> bytes:
    rng = stable_rng(0, "asset-pages", path)
    if path.endswith(".png"):
        return png(8, 8, rng)
    return path.encode() + rng.randbytes(256)  # a font or a clip: only its bytes matter
