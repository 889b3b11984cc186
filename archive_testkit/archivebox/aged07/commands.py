"""The tools each ArchiveBox release ran and the command lines it recorded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlparse

from archive_testkit.archivebox.aged07.model import (
    ARCHIVEBOX_VERSION,
    FAVICON_PROVIDER,
    METHODS_04,
    METHODS_06,
    METHODS_07,
    SnapshotPlan,
)


@dataclass(frozen=True)
class Era:
    name: str
    methods: tuple[str, ...]
    curl: str
    wget: str
    chrome: str
    youtubedl: str
    git: str
    singlefile: str
    readability: str


ERA_04 = Era(
    "0.4",
    METHODS_04,
    "curl 7.64.0 (x86_64-pc-linux-gnu)",
    "GNU Wget 1.20.1",
    "Chromium 78.0.3904.108",
    "youtube-dl 2019.11.28",
    "git version 2.20.1",
    "",
    "",
)


ERA_06 = Era(
    "0.6",
    METHODS_06,
    "7.74.0",
    "1.21",
    "90.0.4430.212",
    "2021.06.06",
    "2.30.2",
    "0.3.16",
    "0.0.6",
)


ERA_07 = Era(
    "0.7",
    METHODS_07,
    "7.88.1",
    "1.21.3",
    "120.0.6099.109",
    "2023.11.16",
    "2.39.2",
    "1.1.46",
    "0.0.11",
)


FAILURES = {
    "favicon": "Failed to fetch favicon",
    "headers": "Failed to get headers: HTTPError 403",
    "singlefile": "SingleFile was not able to archive the page",
    "pdf": "Failed to save PDF",
    "screenshot": "Failed to save screenshot",
    "dom": "Failed to save DOM",
    "wget": "Got an error from the server",
    "title": "Unable to detect page title",
    "readability": "Readability was not able to archive the page",
    "mercury": "Mercury parser was not able to archive the page",
    "htmltotext": "htmltotext could not find HTML to parse for article text",
    "git": "Failed to save git clone",
    "media": "Failed to save media",
    "archive_org": 'Failed to find "content-location" URL header in Archive.org response.',
}


FAIL_RATE = {
    "favicon": 0.04,
    "headers": 0.03,
    "singlefile": 0.1,
    "pdf": 0.1,
    "screenshot": 0.06,
    "dom": 0.04,
    "wget": 0.06,
    "title": 0.05,
    "readability": 0.08,
    "mercury": 0.25,
    "htmltotext": 0.0,
    "git": 0.1,
    "media": 0.05,
    "archive_org": 0.35,
}


def _user_agent(era: Era, tool: str) -> str:
    # 0.4 put the whole `--version` line in: "curl/curl 7.64.0 (x86_64-pc-linux-gnu)".
    if era is ERA_04:
        return f"ArchiveBox/0.4.21 (+https://github.com/pirate/ArchiveBox/) {tool}".rstrip()
    chrome, release = ("85.0.4183.121", "0.6.2") if era is ERA_06 else ("118.0.0.0", ARCHIVEBOX_VERSION)
    return (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{chrome} Safari/537.36 ArchiveBox/{release} "
        f"(+https://github.com/ArchiveBox/ArchiveBox/) {tool}"
    ).rstrip()


def _chrome(era: Era, url: str, flag: str) -> list[str]:
    binary = "/usr/bin/chromium-browser" if era is not ERA_04 else "/usr/bin/chromium"
    headless = "--headless=new" if era is ERA_07 else "--headless"
    return [
        binary,
        headless,
        "--no-sandbox",
        "--no-zygote",
        "--disable-dev-shm-usage",
        "--disable-software-rasterizer",
        "--run-all-compositor-stages-before-draw",
        "--hide-scrollbars",
        f"--user-agent={_user_agent(era, '')}",
        "--window-size=1440,2000",
        "--timeout=60000",
        flag,
        url,
    ]


def extractor_command(
    era: Era, method: str, plan: SnapshotPlan, *, folder: str, run_start: datetime
) -> tuple[list[str], str | None]:
    url = plan.url
    domain = urlparse(url).netloc
    curl = ["curl", "--silent", "--location", "--compressed"]
    if method == "favicon":
        return [
            *curl,
            "--max-time",
            "60",
            "--output",
            "favicon.ico",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            FAVICON_PROVIDER.format(domain),
        ], era.curl
    if method == "headers":
        return [
            *curl,
            "--head",
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            url,
        ], era.curl
    if method == "title":
        return [
            *curl,
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            url,
        ], era.curl
    if method == "wget":
        warc = f"{folder}/warc/{int(run_start.timestamp())}"
        user_agent = _user_agent(era, f"wget/{era.wget}")
        return ["wget", *wget_arguments(warc=warc, user_agent=user_agent, url=url)], era.wget
    if method == "pdf":
        return _chrome(era, url, "--print-to-pdf"), era.chrome
    if method == "screenshot":
        return _chrome(era, url, "--screenshot"), era.chrome
    if method == "dom":
        return _chrome(era, url, "--dump-dom"), era.chrome
    if method == "singlefile":
        return [
            "/node/node_modules/single-file-cli/single-file",
            "--browser-executable-path=/usr/bin/chromium-browser",
            '--browser-args=["--headless=new", "--no-sandbox", "--window-size=1440,2000"]',
            url,
            "singlefile.html",
        ], era.singlefile
    if method == "readability":
        return [
            "/node/node_modules/readability-extractor/readability-extractor",
            f"/tmp/tmp{plan.snapshot_uuid.hex[:8]}",
            url,
        ], era.readability
    if method == "mercury":
        return ["/node/node_modules/@postlight/parser/cli.js", url], "1.0.0"
    if method == "htmltotext":
        return ["(internal) archivebox.extractors.htmltotext", "./{singlefile,dom}.html"], ARCHIVEBOX_VERSION
    if method == "git":
        return ["git", "clone", "--recursive", url], era.git
    if method == "media":
        binary = "youtube-dl" if era is ERA_04 else "yt-dlp"
        return [
            binary,
            "--write-description",
            "--write-info-json",
            "--write-annotations",
            "--write-thumbnail",
            "--no-call-home",
            "--write-sub",
            "--write-auto-subs",
            "--convert-subs=srt",
            "--yes-playlist",
            "--continue",
            "--ignore-errors",
            "--geo-bypass",
            "--add-metadata",
            "--format=(bv*+ba/b)[filesize<=750m][filesize_approx<=?750m]/(bv*+ba/b)",
            url,
        ], era.youtubedl
    if method == "archive_org":
        return [
            *curl,
            "--head",
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            f"https://web.archive.org/save/{url}",
        ], era.curl
    raise ValueError(method)


def wget_arguments(*, warc: str, user_agent: str, url: str) -> list[str]:
    """ArchiveBox 0.7's wget extractor arguments (without `wget` itself)."""
    return [
        "--no-verbose",
        "--adjust-extension",
        "--convert-links",
        "--force-directories",
        "--backup-converted",
        "--span-hosts",
        "--no-parent",
        "-e",
        "robots=off",
        "--timeout=60",
        "--restrict-file-names=windows",
        f"--warc-file={warc}",
        "--page-requisites",
        f"--user-agent={user_agent}",
        "--compression=auto",
        url,
    ]
