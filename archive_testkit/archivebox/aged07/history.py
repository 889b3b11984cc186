"""Every snapshot's extractor runs through the releases it lived through."""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from archive_testkit.archivebox.aged07.commands import (
    ERA_04,
    ERA_06,
    ERA_07,
    FAIL_RATE,
    FAILURES,
    Era,
    extractor_command,
)
from archive_testkit.archivebox.aged07.model import (
    DATA_DIR,
    OLD_OUTPUT_DIR,
    WORDS,
    PlannedResult,
    SnapshotPlan,
)
from archive_testkit.archivebox.formats import random_uuid


def _applicable(plan: SnapshotPlan, method: str) -> bool:
    if plan.static:
        return method in ("favicon", "headers", "wget")
    if method == "git":
        return plan.host.kind == "git"
    return True


def _should_run(plan: SnapshotPlan, method: str) -> bool:
    """The release's should_save_<method>: skip what is already on disk."""
    if not _applicable(plan, method):
        return False
    if method == "title":
        # should_save_title: only while the link has no title (or a URL as title)
        return not plan.title or plan.title.lower().startswith("http")
    return method not in plan.present


def _run(
    rng: random.Random,
    plan: SnapshotPlan,
    era: Era,
    *, start: datetime,
    forced_failures: Iterable[str],
    shared_uuid: uuid.UUID | None,
    retry: bool,
) -> datetime:
    forced = set(forced_failures)
    folder_base = OLD_OUTPUT_DIR if era is ERA_04 else DATA_DIR
    folder = f"{folder_base}/archive/{plan.timestamp}"
    plan.runs.append((era.name, start))
    moment = start + timedelta(milliseconds=rng.randrange(40, 400))
    for method in era.methods:
        if not _should_run(plan, method):
            continue
        if method in forced:
            status = "failed"
        elif method == "archive_org" and rng.random() < 0.08:
            status = "skipped"
        else:
            rate = FAIL_RATE[method] * (0.3 if retry else 1.0)
            status = "failed" if rng.random() < rate else "succeeded"
        duration = timedelta(milliseconds=rng.randrange(80, 9000 if method in ("wget", "media") else 3500))
        end = moment + duration
        cmd, cmd_version = extractor_command(era, method, plan, folder=folder, run_start=start)
        index_texts: list[str] | None = None
        if method in ("readability", "mercury", "htmltotext"):
            index_texts = [article_text(plan)] if status == "succeeded" else []
        if status == "succeeded":
            json_output = _success_output(plan, method, end)
            db_output = json_output
            plan.present.add(method)
            if method == "title" and plan.page_title and len(plan.page_title) >= len(plan.title or ""):
                plan.title = plan.page_title
        elif status == "skipped":
            json_output = db_output = "RobotAccessControlException: Blocked by robots.txt"
        else:
            message = FAILURES[method]
            json_output = f"ArchiveError: {message}"
            db_output = message
            if method in ("mercury", "media"):
                plan.present.add(method)  # the extractor created its (now empty) folder first
                plan.empty_dirs.append(method)
        plan.results.append(
            PlannedResult(
                extractor=method,
                cmd=cmd,
                pwd=folder,
                cmd_version=cmd_version,
                status=status,
                json_output=json_output,
                db_output=db_output,
                start=moment,
                end=end,
                index_texts=index_texts,
                uuid=shared_uuid or random_uuid(rng),
            )
        )
        moment = end + timedelta(milliseconds=rng.randrange(5, 60))
    return moment


def _success_output(plan: SnapshotPlan, method: str, end: datetime) -> str:
    outputs = {
        "favicon": "favicon.ico",
        "headers": "headers.json",
        "singlefile": "singlefile.html",
        "pdf": "output.pdf",
        "screenshot": "screenshot.png",
        "dom": "output.html",
        "readability": "readability",
        "mercury": "mercury",
        "htmltotext": "htmltotext.txt",
        "git": "git",
        "media": "media",
    }
    if method == "wget":
        return plan.main_rel or plan.host.name
    if method == "title":
        return plan.page_title or ""
    if method == "archive_org":
        return f"https://web.archive.org/web/{end.strftime('%Y%m%d%H%M%S')}/{plan.url}"
    return outputs[method]


_UPDATE_RUN = datetime(2024, 1, 6, 3, 0, tzinfo=UTC)  # `archivebox update` after moving to 0.7


def archive_history(rng: random.Random, plans: list[SnapshotPlan]) -> None:
    """Run the extractors of every snapshot through the releases it lived through."""
    shared_legacy_uuid = random_uuid(rng)
    retry_picks = {plan.index for plan in plans if plan.batch in ("text",)}
    forced_once = False
    for plan in plans:
        base = plan.added + timedelta(seconds=rng.randrange(2, 90), microseconds=rng.randrange(1_000_000))
        forced: list[str] = []
        if plan.index == 0 and not plan.static:
            forced = ["pdf", "mercury"]
        elif not forced_once and plan.batch == "text" and not plan.static:
            forced, forced_once = ["screenshot", "archive_org"], True
        if plan.batch == "legacy":
            end = _run(rng, plan, ERA_04, start=base, forced_failures=forced, shared_uuid=shared_legacy_uuid,
                       retry=False)
            update = _UPDATE_RUN + timedelta(seconds=plan.index * 41, microseconds=rng.randrange(1_000_000))
            _run(rng, plan, ERA_07, start=max(update, end + timedelta(days=1)), forced_failures=(),
                 shared_uuid=None, retry=True)
        elif plan.batch in ("bookmarks", "orphan"):
            end = _run(rng, plan, ERA_06, start=base, forced_failures=forced, shared_uuid=None, retry=False)
            if plan.batch == "bookmarks":
                update = _UPDATE_RUN + timedelta(
                    seconds=plan.index * 41, microseconds=rng.randrange(1_000_000)
                )
                _run(rng, plan, ERA_07, start=max(update, end + timedelta(days=1)), forced_failures=(),
                     shared_uuid=None, retry=True)
        else:
            end = _run(rng, plan, ERA_07, start=base, forced_failures=forced, shared_uuid=None, retry=False)
            failed = any(result.status == "failed" for result in plan.results)
            if failed and plan.index in retry_picks and rng.random() < 0.6:
                _run(rng, plan, ERA_07, start=end + timedelta(days=rng.randrange(1, 20)), forced_failures=(),
                     shared_uuid=None, retry=True)
        last_start = plan.runs[-1][1]
        plan.json_updated = last_start  # archive_link: link.overwrite(updated=now) before the loop
        plan.db_updated = plan.results[-1].end + timedelta(milliseconds=rng.randrange(3, 40))
        plan.mtime = plan.db_updated
        plan.release = plan.runs[-1][0]
        if len(plan.runs) > 1 and len(plan.tags) > 1:
            # merge_links() rebuilds tags from a set: their order is arbitrary after a re-run.
            shuffled = list(plan.tags)
            rng.shuffle(shuffled)
            plan.tags_json = ",".join(shuffled)
        else:
            plan.tags_json = ",".join(plan.tags) or None


def article_text(plan: SnapshotPlan) -> str:
    title = plan.page_title or plan.url
    words = hashlib.sha256(plan.url.encode()).hexdigest()
    body = " ".join(WORDS[int(words[i : i + 2], 16) % len(WORDS)] for i in range(0, 48, 2))
    return f"{title}\n\n{body.capitalize()}.\n"


def run_started_at(plan: SnapshotPlan, result: PlannedResult) -> datetime:
    starts = [start for _, start in plan.runs if start <= result.start]
    return starts[-1] if starts else result.start
