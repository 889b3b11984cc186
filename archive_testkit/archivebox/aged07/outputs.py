"""The bytes every other extractor left in a snapshot folder."""

from __future__ import annotations

import hashlib
import html
import json
import random
import struct
from datetime import datetime

from archive_testkit.archivebox.aged07.history import article_text, run_started_at
from archive_testkit.archivebox.aged07.model import CDN_CSS, SnapshotPlan
from archive_testkit.archivebox.aged07.wget_tree import (
    cdn_asset,
    embed_html,
    host_assets,
    page_html,
    snapshot_warc,
)
from archive_testkit.archivebox.formats import ico_bytes, noise_bytes, pdf_bytes, png_bytes


def _media_files(rng: random.Random, plan: SnapshotPlan) -> dict[str, bytes]:
    title = (plan.page_title or "video").replace("/", "_").replace('"', "'")
    stem = f"media/{title} [{plan.video_id}]"
    info = {
        "id": plan.video_id,
        "title": plan.page_title,
        "webpage_url": plan.url,
        "ext": "mp4",
        "duration": rng.randrange(30, 900),
        "uploader": "Example Channel",
    }
    return {
        f"{stem}.mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + noise_bytes(rng, 6000),
        f"{stem}.info.json": json.dumps(info).encode(),
        f"{stem}.description": f"{plan.page_title}\n\nSubscribe for more!\n".encode(),
        f"{stem}.webp": b"RIFF" + struct.pack("<I", 1200) + b"WEBPVP8 " + noise_bytes(rng, 1200),
        f"{stem}.en.srt": (
            b"1\n00:00:00,000 --> 00:00:02,000\nHello\n\n2\n00:00:02,000 --> 00:00:04,000\nWorld\n"
        ),
    }


def _git_files(rng: random.Random, plan: SnapshotPlan) -> dict[str, bytes]:
    repo = plan.repo or "repo"
    base = f"git/{repo}"
    sha = hashlib.sha1(plan.url.encode()).hexdigest()
    pack = hashlib.sha1((plan.url + "pack").encode()).hexdigest()
    return {
        f"{base}/README.md": f"# {repo}\n\n{article_text(plan)}".encode(),
        f"{base}/LICENSE": b"MIT License\n\nCopyright (c) 2023\n",
        f"{base}/.gitignore": b"__pycache__/\n*.pyc\n.venv/\n",
        f"{base}/pyproject.toml": f'[project]\nname = "{repo}"\nversion = "0.1.0"\n'.encode(),
        f"{base}/src/{repo.replace('-', '_')}/__init__.py": b'"""Package."""\n__version__ = "0.1.0"\n',
        f"{base}/.git/HEAD": b"ref: refs/heads/main\n",
        f"{base}/.git/config": (
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
            f'[remote "origin"]\n\turl = {plan.url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
            '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
        ).encode(),
        f"{base}/.git/description": (
            b"Unnamed repository; edit this file 'description' to name the repository.\n"
        ),
        f"{base}/.git/packed-refs": (
            f"# pack-refs with: peeled fully-peeled sorted \n{sha} refs/remotes/origin/main\n".encode()
        ),
        f"{base}/.git/refs/heads/main": f"{sha}\n".encode(),
        f"{base}/.git/refs/remotes/origin/HEAD": b"ref: refs/remotes/origin/main\n",
        f"{base}/.git/logs/HEAD": (
            f"{'0' * 40} {sha} ArchiveBox <a@b> 1700000000 +0000\tclone: from {plan.url}\n".encode()
        ),
        f"{base}/.git/index": b"DIRC\x00\x00\x00\x02" + noise_bytes(rng, 400),
        f"{base}/.git/objects/pack/pack-{pack}.pack": b"PACK\x00\x00\x00\x02" + noise_bytes(rng, 3000),
        f"{base}/.git/objects/pack/pack-{pack}.idx": b"\xfftOc\x00\x00\x00\x02" + noise_bytes(rng, 1100),
        f"{base}/.git/hooks/pre-commit.sample": b"#!/bin/sh\n# An example hook script\nexit 0\n",
    }


def _singlefile_html(plan: SnapshotPlan, saved: datetime) -> bytes:
    title = html.escape(plan.page_title or plan.url)
    return (
        f'<!DOCTYPE html> <html lang="en"><!--\n Page saved with SingleFile \n url: {plan.url} \n'
        f" saved date: {saved.strftime('%a %b %d %Y %H:%M:%S')} GMT+0000 (Coordinated Universal Time)\n-->"
        f"<meta charset=utf-8><title>{title}</title><style>body{{font-family:sans-serif}}</style>"
        f'<link rel=canonical href="{plan.url}"><meta name=referrer content=no-referrer>'
        f"<body><h1>{title}</h1><p>{html.escape(article_text(plan))}</p>"
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="">'
        f'<a href="https://{plan.host.name}/about/">About</a></body></html>'
    ).encode()


def _dom_html(plan: SnapshotPlan) -> bytes:
    title = html.escape(plan.page_title or plan.url)
    # Chrome's --dump-dom: the live DOM with the site's own (root-relative / relative) links.
    return (
        f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        '<link rel="stylesheet" href="/css/site.css"><script src="/static/jquery.min.js"></script></head>'
        f"<body><h1>{title}</h1><p>{html.escape(article_text(plan))}</p>"
        '<a href="../about/">About</a> <img src="images/figure-02.png"></body></html>'
    ).encode()


def _readability(plan: SnapshotPlan) -> dict[str, bytes]:
    text = article_text(plan)
    article = {
        "byline": None,
        "dir": None,
        "excerpt": text.split("\n")[2][:120],
        "lang": "en",
        "length": len(text),
        "siteName": plan.host.name,
        "title": plan.page_title,
    }
    return {
        "readability/content.html": (
            f'<div id="readability-page-1" class="page"><div><h2>{html.escape(plan.page_title or "")}</h2>'
            f"<p>{html.escape(text)}</p></div></div>"
        ).encode(),
        "readability/content.txt": text.encode(),
        "readability/article.json": json.dumps(article, indent=4, sort_keys=True).encode(),
    }


def _mercury(plan: SnapshotPlan) -> dict[str, bytes]:
    text = article_text(plan)
    article = {
        "author": None,
        "date_published": None,
        "dek": None,
        "direction": "ltr",
        "domain": plan.host.name,
        "excerpt": text[:120],
        "lead_image_url": None,
        "next_page_url": None,
        "rendered_pages": 1,
        "title": plan.page_title,
        "total_pages": 1,
        "url": plan.url,
        "word_count": len(text.split()),
    }
    return {
        "mercury/content.html": f"<div><p>{html.escape(text)}</p></div>".encode(),
        "mercury/content.txt": text.encode(),
        "mercury/article.json": json.dumps(article, indent=4, sort_keys=True).encode(),
    }


def _headers_json(plan: SnapshotPlan, when: datetime) -> bytes:
    headers = {
        "Status-Code": 200,
        "Date": when.strftime("%a, %d %b %Y %H:%M:%S GMT"),
        "Content-Type": "application/pdf" if plan.static else "text/html; charset=utf-8",
        "Server": "nginx",
        "Cache-Control": "max-age=600",
        "Vary": "Accept-Encoding",
    }
    return json.dumps(headers, indent=4).encode()


def build_files(rng: random.Random, plan: SnapshotPlan, files_per_snapshot: int) -> None:
    """Every output file the successful extractors left, the wget tree filling up the count."""
    files = plan.files
    last = plan.mtime or plan.added
    present = plan.present
    accent = plan.host.accent
    if "favicon" in present:
        files["favicon.ico"] = ico_bytes(png_bytes(16, 16, accent), 16)
    if "headers" in present:
        files["headers.json"] = _headers_json(plan, last)
    if "singlefile" in present:
        files["singlefile.html"] = _singlefile_html(plan, last)
    if "pdf" in present:
        files["output.pdf"] = pdf_bytes([plan.page_title or plan.url, plan.url, "Printed by Chromium"])
    if "screenshot" in present:
        files["screenshot.png"] = png_bytes(48, 64, accent, noise=plan.index + 1)
    if "dom" in present:
        files["output.html"] = _dom_html(plan)
    if "htmltotext" in present:
        files["htmltotext.txt"] = article_text(plan).encode()
    if "readability" in present:
        files.update(_readability(plan))
    if "mercury" in present and "mercury" not in plan.empty_dirs:
        files.update(_mercury(plan))
    if "archive_org" in present:
        archived = next(
            r for r in reversed(plan.results) if r.extractor == "archive_org" and r.status == "succeeded"
        )
        files["archive.org.txt"] = (archived.json_output or "").encode()
    if "git" in present:
        files.update(_git_files(rng, plan))
    if "media" in present and plan.host.kind == "video" and "media" not in plan.empty_dirs:
        files.update(_media_files(rng, plan))
    elif "media" in present and "media" not in plan.empty_dirs:
        plan.empty_dirs.append("media")  # yt-dlp found nothing: 0.7 leaves media/ empty
    if "wget" not in present:
        return
    wget_run = next(r for r in plan.results if r.extractor == "wget" and r.status == "succeeded")
    if plan.static:
        body = pdf_bytes([f"Annual report {plan.url}"])
        files[plan.main_rel or ""] = body
        files[f"warc/{int(run_started_at(plan, wget_run).timestamp())}.warc.gz"] = snapshot_warc(
            plan, wget_run, [plan.main_rel or ""]
        )
        return
    assert plan.main_rel and plan.page_dir
    files.update(host_assets(plan.host.name))
    files[CDN_CSS] = cdn_asset()
    depth = plan.page_dir.count("/")
    up = "../" * depth
    main_name = plan.main_rel.rsplit("/", 1)[-1]
    # index.json + index.html + main + .orig + warc come on top of what is there now.
    budget = files_per_snapshot - (len(files) + 2 + 3)
    n_pages = max(1, min(6, budget // 6))
    n_images = max(1, budget - 2 * n_pages)
    pages = [f"page{i + 2}.html" for i in range(n_pages)]
    images = ["figure 01.png"] + [f"figure-{i + 2:02d}.png" for i in range(n_images - 1)]
    for number, name in enumerate(images):
        files[f"{plan.page_dir}/images/{name}"] = png_bytes(
            20, 12, accent, noise=plan.index * 97 + number + 1
        )
    converted = page_html(plan, up, pages, images=images, converted=True, main_name=main_name)
    files[plan.main_rel] = converted
    files[plan.main_rel + ".orig"] = page_html(plan, up, pages, images=images, converted=False,
                                               main_name=main_name)
    for number, page in enumerate(pages):
        next_page = f"page{number + 3}.html"  # the last one points past the end: missing
        files[f"{plan.page_dir}/embed/{page}"] = embed_html(plan, up, page, next_page=next_page,
                                                            main_name=main_name, converted=True)
        files[f"{plan.page_dir}/embed/{page}.orig"] = embed_html(plan, up, page, next_page=next_page,
                                                                 main_name=main_name, converted=False)
    requisites = [CDN_CSS, *host_assets(plan.host.name)]
    requisites += [f"{plan.page_dir}/images/{name}" for name in images]
    requisites += [f"{plan.page_dir}/embed/{page}" for page in pages]
    files[f"warc/{int(run_started_at(plan, wget_run).timestamp())}.warc.gz"] = snapshot_warc(
        plan, wget_run, [plan.main_rel, *requisites]
    )
