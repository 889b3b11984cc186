"""Which snapshots a collection has: URLs, timestamps, batches, orphans."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

from archive_testkit.archivebox.aged07.model import (
    DATA_DIR,
    HOSTS,
    OLD_OUTPUT_DIR,
    TAGS,
    TITLES,
    WORDS,
    Host,
    SnapshotPlan,
)
from archive_testkit.archivebox.formats import random_uuid


def _timestamp_str(moment: datetime) -> str:
    return str(moment.timestamp())


def plan_snapshots(rng: random.Random, count: int, orphans: int) -> list[SnapshotPlan]:
    n_orphans = min(max(orphans, 0), max(0, (count - 3) // 4))
    live = count - n_orphans
    n_legacy = max(1, live // 3) if live >= 3 else 0
    n_bookmarks = max(1, live // 3) if live >= 3 else 0
    n_text = live - n_legacy - n_bookmarks

    t_legacy = datetime(2019, 6, 2, 9, 14, 7, 120000, tzinfo=UTC) + timedelta(days=rng.randrange(60))
    t_bookmarks = datetime(2021, 3, 5, 18, 40, 3, 0, tzinfo=UTC) + timedelta(days=rng.randrange(60))
    t_text = datetime(2023, 11, 20, 10, 0, 0, tzinfo=UTC) + timedelta(days=rng.randrange(30))

    used_urls: set[str] = set()
    used_ts: set[str] = set()
    plans: list[SnapshotPlan] = []
    host_cycle = list(HOSTS)

    def new_url(index: int) -> tuple[Host, str, bool]:
        while True:
            host = host_cycle[(index + rng.randrange(len(host_cycle))) % len(host_cycle)]
            static = False
            if host.kind == "site":
                section = rng.choice(host.sections)
                choice = rng.random()
                if choice < 0.12:
                    url = f"https://{host.name}/"
                elif choice < 0.22:
                    url = f"https://{host.name}/files/report-{rng.randrange(2015, 2024)}.pdf"
                    static = True
                else:
                    slug = "-".join(rng.sample(WORDS, 3))
                    url = f"https://{host.name}/{section}/{slug}/"
            elif host.kind == "git":
                user = rng.choice(("octo", "pallets", "tiangolo"))
                url = f"https://github.com/{user}/{rng.choice(WORDS)}-{rng.choice(WORDS)}"
            elif host.kind == "video":
                vid = "".join(
                    rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
                    for _ in range(11)
                )
                url = f"https://www.youtube.com/watch?v={vid}"
            else:
                url = f"https://news.ycombinator.com/item?id={rng.randrange(20_000_000, 39_000_000)}"
            if url not in used_urls:
                used_urls.add(url)
                return host, url, static
            index += 1

    def add(
        batch: str, moment: datetime, added: datetime, *, timestamp: str, source: str, index: int
    ) -> SnapshotPlan:
        host, url, static = new_url(index)
        used_ts.add(timestamp)
        return _make_plan(rng, len(plans), batch, host=host, url=url, static=static, timestamp=timestamp,
                          added=added, source=source)

    # 0.4-era import: integer timestamps from a bookmark export; two collide as T and T.0.
    legacy_source = f"{OLD_OUTPUT_DIR}/sources/bookmarks_export.html-{int(t_legacy.timestamp())}.txt"
    for i in range(n_legacy):
        stamp = 1_530_000_000 + i * 86_400 * 9 + rng.randrange(80_000)
        ts = str(stamp)
        if i == 1 and plans:
            ts = plans[0].timestamp + ".0"  # lowest_uniq_timestamp of a same-second bookmark
        added = t_legacy + timedelta(microseconds=1234 * (i + 1))
        plans.append(add("legacy", t_legacy, added, timestamp=ts, source=legacy_source, index=i))

    # 0.6-era Netscape bookmarks import: str(datetime.fromtimestamp(ADD_DATE).timestamp()).
    bookmark_source = f"{DATA_DIR}/sources/{int(t_bookmarks.timestamp())}-import.txt"
    for i in range(n_bookmarks):
        stamp = 1_580_000_000 + i * 86_400 * 5 + rng.randrange(80_000)
        ts = f"{stamp}.0"
        added = t_bookmarks + timedelta(microseconds=877 * (i + 1))
        plans.append(add("bookmarks", t_bookmarks, added, timestamp=ts, source=bookmark_source,
                         index=100 + i))

    # 0.7 text imports: str(datetime.now(timezone.utc).timestamp()) per URL.
    text_source = f"{DATA_DIR}/sources/{int(t_text.timestamp())}-import.txt"
    moment = t_text
    for i in range(n_text):
        moment = moment + timedelta(seconds=rng.randrange(1, 4), microseconds=rng.randrange(1, 999_999))
        if i == 2:
            moment = moment.replace(microsecond=0)  # Django then stores "YYYY-MM-DD HH:MM:SS"
        ts = _timestamp_str(moment)
        while ts in used_ts:
            ts = str(float(ts) + 1.0)  # write_link_to_sql_index's collision bump
        plans.append(add("text", t_text, moment, timestamp=ts, source=text_source, index=200 + i))

    # Orphans: same URL as a later 0.7 snapshot, archived in the 0.6 era, row removed.
    text_plans = [plan for plan in plans if plan.batch == "text" and not plan.static]
    for i in range(n_orphans):
        twin = text_plans[i % len(text_plans)] if text_plans else plans[i % len(plans)]
        stamp = 1_600_000_000 + i * 86_400 * 3 + rng.randrange(80_000)
        ts = f"{stamp}.0"
        added = t_bookmarks + timedelta(days=20 + i, microseconds=4321)
        orphan = _make_plan(
            rng, len(plans), "orphan", host=twin.host, url=twin.url, static=twin.static, timestamp=ts,
            added=added, source=bookmark_source
        )
        orphan.in_sqlite = False
        plans.append(orphan)
    return plans


def _make_plan(
    rng: random.Random,
    index: int,
    batch: str,
    *, host: Host,
    url: str,
    static: bool,
    timestamp: str,
    added: datetime,
    source: str,
) -> SnapshotPlan:
    parsed = urlparse(url)
    page_title: str | None = None if static else rng.choice(TITLES)
    # Bookmark exports bring their own title (the title extractor then never runs);
    # text imports start untitled and take the page's title.
    title: str | None = None
    if batch in ("bookmarks", "legacy", "orphan") and page_title:
        pick = rng.random()
        if pick < 0.25:
            title = page_title + " | My Bookmarks"
        elif pick < 0.85:
            title = page_title
    tags: tuple[str, ...] = ()
    if rng.random() < 0.5:
        tags = tuple(sorted(rng.sample(TAGS, rng.randrange(1, 4))))
    main_rel: str | None
    page_dir: str | None
    video_id = repo = None
    if static:
        main_rel = f"{parsed.netloc}{parsed.path}"
        page_dir = None
    elif host.kind == "git":
        user, repo = parsed.path.strip("/").split("/")
        page_dir = f"github.com/{user}"
        main_rel = f"{page_dir}/{repo}.html"
    elif host.kind in ("video", "news"):
        page_dir = host.name
        # wget --adjust-extension + --restrict-file-names=windows: '?' becomes '@'.
        main_rel = f"{host.name}{parsed.path}@{parsed.query}.html"
        if host.kind == "video":
            video_id = parsed.query.split("=", 1)[1]
    else:
        path = parsed.path.strip("/")
        page_dir = f"{host.name}/{path}" if path else host.name
        main_rel = f"{page_dir}/index.html"
    return SnapshotPlan(
        index=index,
        batch=batch,
        host=host,
        url=url,
        timestamp=timestamp,
        snapshot_uuid=random_uuid(rng),
        page_title=page_title,
        title=title,
        tags=tags,
        added=added,
        source=source,
        static=static,
        main_rel=main_rel,
        page_dir=page_dir,
        video_id=video_id,
        repo=repo,
    )
