"""A snapshot's index.html as 0.7 renders it."""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any
from urllib.parse import quote

from archive_testkit.archivebox.aged07.model import SnapshotPlan
from archive_testkit.archivebox.formats import django_minute, printable_filesize


def _card(path: str, label: str, code: str, *, kind: str = "iframe") -> str:
    src = html.escape(path)
    if kind == "img":
        preview = f'<img class="card-img-top" src="{src}" onerror="this.style.opacity=0.2"/>'
    else:
        preview = (
            f'<iframe class="card-img-top" src="{src}" sandbox="allow-same-origin allow-scripts '
            'allow-forms" scrolling="no" loading="lazy"></iframe>'
        )
    return (
        '<div class="col-lg-2"><div class="card">\n'
        f"  {preview}\n"
        '  <div class="card-body">\n'
        f'    <a href="{src}" title="Open in new tab..." target="_blank" rel="noopener">'
        f'<p class="card-text"><code>{html.escape(code)}</code></p></a>\n'
        f'    <a href="{src}" target="preview"><h4 class="card-title">{html.escape(label)}</h4></a>\n'
        "  </div></div></div>\n"
    )


def snapshot_page(plan: SnapshotPlan, document: dict[str, Any], size: int) -> bytes:
    """The 0.7 `core/snapshot.html` page, trimmed of its inlined Bootstrap and jQuery."""
    canonical = document["canonical"]
    domain = document["domain"]
    archived = document["is_archived"]
    title = html.escape(plan.title or (document["base_url"] if archived else "Not yet archived..."))
    archive_url = quote(document["canonical"]["wget_path"] or (domain if archived else "")) or "about:blank"
    tags = [tag for tag in (document["tags_str"] or "").split(",") if tag]
    oldest = document["oldest_archive_date"]
    oldest_str = django_minute(datetime.fromisoformat(oldest)) if oldest else ""
    url = html.escape(plan.url)
    sid = document["snapshot_id"]
    badges = "".join(
        f'                            <div class="badge badge-info" style="word-break: break-all;">'
        f"{html.escape(tag)}</div>\n"
        for tag in tags
    )
    status, status_color = ("archived", "success") if archived else ("not yet archived", "danger")
    size_str = printable_filesize(size) if size else "pending"
    extension = document["extension"] or "html"
    updated_str = document["updated_date"] or ""
    preview = html.escape(str(canonical["singlefile_path"]))
    # Django renders a None path as "None": a static file whose wget failed links to ./None.
    cards = [
        _card(str(canonical["singlefile_path"]), "Chrome > SingleFile", "./singlefile.html"),
        _card(f"{canonical['pdf_path']}#toolbar=0", "Chrome > PDF", "./output.pdf"),
        _card(str(canonical["screenshot_path"]), "Chrome > Screenshot", "./screenshot.png", kind="img"),
        _card(archive_url, "Wget > HTML", f"./{domain}"),
        _card(canonical["archive_org_path"], "Archive.Org", "🌐 web.archive.org/web/..."),
        _card(plan.url, "Original", f"🌐 {domain}"),
        _card(canonical["headers_path"], "Headers", "./headers.json"),
        _card(str(canonical["dom_path"]), "Chrome > HTML", "./output.html"),
        _card(str(canonical["readability_path"]), "Readability", "./readability/content.html"),
        _card(str(canonical["mercury_path"]), "Mercury", "./mercury/content.html"),
        _card(canonical["media_path"], "Media", "./media/*.mp4"),
        _card(canonical["git_path"], "Git", "./git/*.git"),
    ]
    cards_html = "".join(cards)
    bookmarked = document["bookmarked_date"]
    page = f"""<!DOCTYPE html>
<html lang="en">
    <head>
        <title>{title}</title>
        <meta charset="utf-8" name="viewport" content="width=device-width, initial-scale=1">
        <style>
            html, body {{ width: 100%; height: 100%; background-color: #ddd; }}
            header {{ background-color: #aa1e55; }}
            .full-page-iframe {{ width: 100%; height: 69vh; border: 0px; border-top: 3px solid #aa1e55; }}
        </style>
    </head>
    <body>
        <header>
            <div class="header-top container-fluid">
                <div class="row nav">
                    <div class="col-lg-2" style="line-height: 50px; vertical-align: middle">
                        <a href="../../index.html" class="header-archivebox" title="Go to Main Index...">
                            <img src="../../static/archive.png" alt="Archive Icon">
                            ArchiveBox
                        </a>
                    </div>
                    <div class="col-lg-8">
                        <img src="favicon.ico" onerror="this.style.opacity=0" alt="Favicon">
                        &nbsp;&nbsp;
                        {title}
                        &nbsp;&nbsp;
                        <a href="#" class="header-toggle">▾</a>
                        <small>
                            <a href="{url}" class="header-url" title="{url}">
                                <code>{url}</code>
                            </a>
                        </small>
                    </div>
                </div>
            </div>
            <div class="header-bottom container-fluid">
                <div class="row header-bottom-info">
                    <div class="col-lg-4">
                        <div title="Date bookmarked or imported" class="info-chunk">
                            <h5>Added</h5>
                            {bookmarked}
                        </div>
                        <div title="Date first archived" class="info-chunk">
                            <h5>First Archived</h5>
                            {oldest_str}
                        </div>
                        <div title="Date last checked" class="info-chunk">
                            <h5>Last Checked</h5>
                            {updated_str}
                        </div>
                    </div>
                    <div class="col-lg-4">
                        <div class="info-chunk" style="max-width: 280px">
                            <h5>Tags <small title="Auto-guessed content type">({extension})</small></h5>
{badges}                        </div>
                        <div class="info-chunk">
                            <h5>Status</h5>
                            <div class="badge badge-{status_color}">{status}</div>
                        </div>
                        <div class="info-chunk"><h5>Saved</h5>✅&nbsp; {document["num_outputs"]}</div>
                        <div class="info-chunk"><h5>Errors</h5>❌&nbsp; {document["num_failures"]}</div>
                        <div class="info-chunk"><h5>Size</h5>{size_str}</div>
                    </div>
                    <div class="col-lg-4">
                        <div class="info-chunk">
                            <h5>🗃&nbsp; Snapshot: <a href="/admin/core/snapshot/{sid}/change/">
                                <code><b>[{plan.timestamp}]</b> <small>{sid[:23]}…</small></code></a></h5>
                            <a href="index.json" title="JSON summary of archived link.">JSON</a> |
                            <a href="warc/" title="Any WARC archives for the page">WARC</a> |
                            <a href="media/" title="Audio, Video, and Subtitle files.">Media</a> |
                            <a href="git/" title="Any git repos at the url">Git</a> |
                            <a href="/admin/core/snapshot/?id__startswith={sid}"
                               title="Go to the Snapshot admin">Actions</a> |
                            <a href="/admin/core/snapshot/{sid}/change/"
                               title="Edit this snapshot in the Admin UI">Admin</a> |
                            <a href="." title="Webserver-provided index of files directory.">
                                See all files...</a><br/>
                        </div>
                    </div>
                </div>
                <div class="row header-bottom-frames">
{cards_html}                </div>
            </div>
        </header>
        <iframe sandbox="allow-same-origin allow-scripts allow-forms" class="full-page-iframe"
                src="{preview}" name="preview"></iframe>
        <script>
            jQuery('.card a[target=preview]').on('click', function(e) {{
                window.location.hash = e.currentTarget.pathname; return true
            }})
        </script>
    </body>
</html>
"""
    return page.encode("utf-8")
