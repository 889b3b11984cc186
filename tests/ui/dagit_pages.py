"""What a user does in Dagit, as Playwright steps: each function starts from a URL and clicks
what a person would click. Assertions about outcomes stay in the tests."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, urlencode

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from archive_testkit.dagit import LOCATION

UI_TIMEOUT_MS = 20_000  # one page or dialog to render on a busy 2-core machine


def open_lineage(page: Page) -> None:
    """The global asset lineage with every group expanded (Dagit's ⌥E)."""
    page.goto("/asset-groups")
    expect(page.get_by_role("button", name=re.compile("Materialize all"))).to_be_visible(
        timeout=UI_TIMEOUT_MS)
    page.keyboard.press("Alt+e")


def graph_node(page: Page, asset: str) -> Locator:
    """An asset's node in the lineage graph (drawn in the graph's SVG, not the sidebar)."""
    return page.locator("svg foreignObject").get_by_text(asset, exact=True)


def open_materialize_dialog(page: Page, asset: str) -> Locator:
    """The asset page's Materialize… dialog (past the 'upstream never materialized' warning)."""
    page.goto(f"/assets/{asset}")
    page.get_by_role("button", name=re.compile(r"^materialization Materialize")).click()
    dialog = page.locator(".dagster-dialog").filter(has_text=f"Launch runs to materialize {asset}")
    confirm = page.get_by_role("button", name="Confirm")
    expect(dialog.or_(confirm)).to_be_visible(timeout=UI_TIMEOUT_MS)
    if confirm.is_visible():
        confirm.click()
    expect(dialog).to_be_visible(timeout=UI_TIMEOUT_MS)
    return dialog


def select_keys(page: Page, dialog: Locator, keys: list[str]) -> None:
    """Tick the keys of a static- or dynamic-partitioned asset in the dialog's list."""
    # The list's button reads "Select a partition ..." until a key is ticked, then the ticked
    # keys: the list may close between two keys on a busy machine and must reopen.
    key = "(?:" + "|".join(re.escape(key) for key in keys) + ")"
    picker = dialog.get_by_text(re.compile(rf"^(Select a partition.*|{key}(?:, {key})*)$")).first
    search = page.get_by_role("textbox", name="Filter partitions")
    expect(picker).to_be_visible(timeout=UI_TIMEOUT_MS)
    for key in keys:
        _tick_key(page, picker, search, key)
    dialog.get_by_text("Launch runs to materialize").click()  # a click outside closes the list
    if not _hidden_soon(search, timeout_ms=2000):
        search.press("Escape")
    expect(search).to_be_hidden()
    _expect_selected(dialog, keys)


def _tick_key(page: Page, picker: Locator, search: Locator, key: str) -> None:
    """One click on the key's item. The list ignores clicks while the dialog is still opening,
    may close again on a busy machine, and re-renders (detaching its items) as the filter is
    typed: each try opens it if needed, filters, and clicks once the item holds still."""
    item = page.get_by_role("menuitem", name=f"{key} {key}")
    last: Exception | None = None
    for _ in range(40):
        if not search.is_visible():
            picker.click()
            if not _visible_soon(search):
                continue
        try:
            search.fill(key, timeout=2000)
            item.click(timeout=3000)  # a click that times out was never dispatched
            return
        except PlaywrightError as exc:
            last = exc
    raise AssertionError(f"could not tick partition {key} in the list: {last}")


def _expect_selected(dialog: Locator, partitions: list[str]) -> None:
    expect(dialog.get_by_text(f"{len(partitions)} partitions", exact=True)).to_be_visible()


def launch_backfill(dialog: Locator) -> None:
    dialog.get_by_role("button", name="Launch backfill").click()
    expect(dialog).to_be_hidden(timeout=UI_TIMEOUT_MS)


def execute_check(page: Page, asset: str, check: str) -> None:
    """The asset's Checks tab, the check selected, its own Execute button."""
    page.goto(f"/assets/{asset}?view=checks&checkDetail={check}")
    header = page.get_by_text(check, exact=True).last
    expect(header).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.get_by_role("button", name=re.compile(r"^execute Execute$")).click()
    expect(page.get_by_text(re.compile(r"^Launched run"))).to_be_visible(timeout=UI_TIMEOUT_MS)


def show_metadata_plots(page: Page, asset: str) -> Locator:
    """The asset's Overview, its Metadata section as plots over time (one per numeric key)."""
    page.goto(f"/assets/{asset}")
    metadata = page.get_by_role("button", name=re.compile(r"Metadata"))
    expect(metadata).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.get_by_role("button", name=re.compile(r"^asset_plot Plots$")).click()
    events = page.get_by_role("button", name=re.compile(r"^materialization Events$"))
    if events.is_visible():  # partitioned assets offer plots by partition or by event time
        events.click()
    return page.locator("canvas")


def sensor_switch(page: Page, name: str) -> tuple[Locator, Locator]:
    """The sensor's page: its Running switch (the checkbox, and the label one clicks)."""
    page.goto(f"/locations/{LOCATION}/sensors/{name}")
    return _running_switch(page)


def schedule_switch(page: Page, name: str) -> tuple[Locator, Locator]:
    """The schedule's page: its Running switch (the checkbox, and the label one clicks)."""
    page.goto(f"/locations/{LOCATION}/schedules/{name}")
    return _running_switch(page)


def _running_switch(page: Page) -> tuple[Locator, Locator]:
    row = page.get_by_role("row").filter(has=page.get_by_role("cell", name="Running", exact=True))
    checkbox = row.get_by_role("checkbox")
    expect(checkbox).to_be_attached(timeout=UI_TIMEOUT_MS)
    return checkbox, row.locator("label")


def tick_rows(page: Page) -> Locator:
    """The rows of the tick history table on a sensor's page."""
    return page.get_by_role("row").filter(has=page.get_by_role("button", name="View logs"))


def partition_metadata(page: Page, asset: str, partition: str) -> Locator:
    """The Metadata section of one partition's latest materialization: the asset's
    Partitions tab with `partition` selected (read its values with `metadata_value`)."""
    page.goto(f"/assets/{asset}?view=partitions&partition={quote(partition, safe='')}")
    heading = page.get_by_text("Metadata", exact=True)
    expect(heading).to_be_visible(timeout=UI_TIMEOUT_MS)
    # The innermost block holding the heading and its table: ancestors come first in
    # document order, so it is the last match.
    section = page.locator("div").filter(has=heading).filter(has=page.locator("table")).last
    expect(section.locator("table tbody tr").first).to_be_visible(timeout=UI_TIMEOUT_MS)
    return section


def metadata_value(section: Locator, label: str) -> Locator:
    """The value cell of the metadata entry `label` in a Metadata table (`partition_metadata`):
    an integer shows as its digits, text as it is."""
    row = section.locator("table tbody tr").filter(
        has=section.page.get_by_role("cell", name=label, exact=True))
    return row.locator("td").nth(1)


def run_log_lines(page: Page, run_id: str, text: str, *, level: str = "INFO") -> Locator:
    """The lines of a run's log at `level` whose message holds `text`, in the run's page.
    `level` is one of Dagit's level buttons: INFO, WARNING, ERROR, CRITICAL, DEBUG (what
    `context.log` writes), or EVENT (Dagster's own events: step started, materialized ...).
    The page filters the log by both (its level buttons and its filter box, set through the
    address), so a line far down a long log is drawn too; `text` is free text (no `|`, and no
    `step:`/`type:`/`query:` prefix, which Dagit reads as a filter)."""
    query = urlencode({"logs": text, "levels": level.lower()}, quote_via=quote)
    page.goto(f"/runs/{run_id}?{query}")
    expect(page.get_by_placeholder("Filter…")).to_have_value(text, timeout=UI_TIMEOUT_MS)
    # Any log row (`row__`; its level class is the record's, DEBUG for Dagster's events):
    # the page shows only those of `level`.
    return page.locator('[class*="LogsRowComponents_row__"]').filter(has_text=text)


# What the Freshness policy section of an asset's overview says: evaluated states, "No data"
# before the first evaluation, "Not evaluated" when the instance does not evaluate freshness
# (`freshness: enabled` in dagster.yaml).
FRESHNESS_STATES = ("Passing", "Warning", "Failed", "No data", "Not evaluated")


def freshness_state(page: Page, asset: str) -> Locator:
    """The state tag of the asset's freshness policy (one of `FRESHNESS_STATES`) on its
    Overview; the section is absent from assets without a policy."""
    page.goto(f"/assets/{asset}")
    header = page.get_by_text("Freshness policy", exact=True)
    expect(header.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    states = page.get_by_text(re.compile("^(" + "|".join(FRESHNESS_STATES) + ")$"))
    section = page.locator("div").filter(has=header).filter(has=states).last
    return section.get_by_text(re.compile("^(" + "|".join(FRESHNESS_STATES) + ")$")).first


# What the check list of an asset's Checks tab says of each check's latest execution.
CHECK_STATES = ("Succeeded", "Failed", "Skipped", "In progress", "Not evaluated")


def check_row(page: Page, asset: str, check: str) -> Locator:
    """A check's row in the asset's Checks tab: its name and its state (one of
    `CHECK_STATES`; a failed WARN check reads "Failed" with a yellow icon, an ERROR one red)."""
    page.goto(f"/assets/{asset}?view=checks")
    row = page.locator('[class*="AssetChecks_checkRow"]').filter(
        has=page.get_by_text(check, exact=True))
    expect(row).to_be_visible(timeout=UI_TIMEOUT_MS)
    return row


def check_blocking_note(page: Page, asset: str, check: str) -> Locator:
    """The check's "This is a blocking / non-blocking asset check." line (its Overview in the
    asset's Checks tab)."""
    page.goto(f"/assets/{asset}?view=checks&checkDetail={quote(check, safe='')}")
    note = page.get_by_text(re.compile(r"^This is a (non-)?blocking asset check\.$")).first
    expect(note).to_be_visible(timeout=UI_TIMEOUT_MS)
    return note


def schedule_details(page: Page, name: str) -> Locator:
    """A schedule's page: the table of its details (description, target, cron, timezone)."""
    page.goto(f"/locations/{LOCATION}/schedules/{name}")
    title = page.get_by_text(re.compile(rf"/\s*{re.escape(name)}$"))  # "Automation / name"
    expect(title.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    table = page.get_by_role("table").filter(has=page.get_by_role("cell", name="Target"))
    expect(table).to_be_visible(timeout=UI_TIMEOUT_MS)
    return table


def launch_from_launchpad(page: Page, job: str, config_yaml: str) -> str:
    """The job's Launchpad: its config editor emptied and `config_yaml` pasted in (as a user
    pastes a config from the docs), then "Launch Run"; the run's id, from the run page it
    opens."""
    page.goto(f"/locations/{LOCATION}/jobs/{job}/playground")
    editor = page.locator(".CodeMirror").first
    expect(editor).to_be_visible(timeout=UI_TIMEOUT_MS)
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(config_yaml)
    expect(page.get_by_text("No errors", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
    launch = page.get_by_role("button", name=re.compile(r"Launch Run"))
    expect(launch).to_be_enabled(timeout=UI_TIMEOUT_MS)
    launch.click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}"), timeout=UI_TIMEOUT_MS)
    found = re.search(r"/runs/([0-9a-f-]{36})", page.url)
    assert found, page.url
    return found.group(1)


class Screenshots:
    """PNG files of the steps, in `folder`; the ones named `docs` also in `docs_folder` when
    `make screenshots` sets it (the README shows those)."""

    def __init__(self, folder: Path, docs_folder: Path | None) -> None:
        self.folder = folder
        self.docs_folder = docs_folder
        folder.mkdir(parents=True, exist_ok=True)

    def take(self, page: Page, name: str, *, docs: bool = False) -> Path:
        path = self.folder / f"{name}.png"
        page.screenshot(path=path)
        if docs and self.docs_folder is not None:
            self.docs_folder.mkdir(parents=True, exist_ok=True)
            (self.docs_folder / path.name).write_bytes(path.read_bytes())
        return path


def _visible_soon(locator: Locator, timeout_ms: int = 500) -> bool:
    try:
        locator.wait_for(state="visible", timeout=timeout_ms)
    except PlaywrightTimeout:
        return False
    return True


def _hidden_soon(locator: Locator, timeout_ms: int) -> bool:
    try:
        locator.wait_for(state="hidden", timeout=timeout_ms)
    except PlaywrightTimeout:
        return False
    return True
