"""The web console in a real browser: headless Chromium (Debian's ``chromium`` package) driven by
Playwright with its executable path set (no browser download), against ``hms-proxy serve
--http-port`` over a store prepared by Spark.

Spark (one session in this process, through our server) creates ``shop.orders``, partitioned by
day, on main; on branch dev (``shop@dev``) it adds two days and a column ``discount``; both
branches set the table's ``owner_team`` differently (a merge conflict); ``stats.compute``
computes dev's column statistics (histograms, frequencies). Then, in the browser: the diff
between main and dev, expanded with the keyboard, shows the added column and the partition
counts; the merge preview shows the conflict with the Merge button disabled until a strategy
resolves it; the table page at dev draws a column's histogram and top values; last, the Merge
button merges dev into main and main's pages show it. Screenshots go
to ``tests/.artifacts/console/`` (and to ``docs/images/`` with ``HMS_CONSOLE_DOCS_SCREENSHOTS=1``).

Without a Chromium the tests are skipped with the reason (``make test`` installs the package
with apt-get when it can).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.timeout(900)]

ARTIFACTS = REPO_ROOT / "tests" / ".artifacts" / "console"
DOCS_IMAGES = REPO_ROOT / "docs" / "images"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
MAIN_DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
DEV_DAYS = ("2024-01-04", "2024-01-05")


def chromium_path() -> str | None:
    """Debian's chromium (``HMS_TEST_CHROMIUM``: another executable; ``none``: act as if
    there were none, to see the skip)."""
    chosen = os.environ.get("HMS_TEST_CHROMIUM")
    if chosen == "none":
        return None
    for candidate in (chosen, "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.path.exists(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _skip(request, reason: str):
    """Skip, printing the reason where it is seen without -rs (the terminal, else stderr)."""
    line = f"console browser tests skipped: {reason}"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(line, yellow=True)
    else:
        print(line, file=sys.stderr, flush=True)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium(request):
    path = chromium_path()
    if path is None:
        _skip(request, "no Chromium found (/usr/bin/chromium): install Debian's package "
                       "(apt-get install -y chromium); make test does when apt-get is usable")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip(request, "the playwright package is not installed (pip install -e '.[test]')")
    import pyspark  # noqa: F401
    return path


def _day_rows(offset: int, rows: int) -> str:
    return (f"SELECT CAST(id AS INT), "
            f"CAST((id * 37) % 1000 + (id * 53) % 1000 + (id * 71) % 1000 AS DOUBLE) / 30, "
            f"element_at(array('fr', 'de', 'it', 'es', 'nl', 'fr', 'fr', 'de'), "
            f"CAST(id % 8 AS INT) + 1) FROM range({offset}, {offset + rows})")


@pytest.fixture(scope="module")
def console(chromium, tmp_path_factory):
    """The server (Thrift and HTTP) over a store prepared by Spark; yields its HTTP base."""
    from kvmodel.store import open_store
    from stats import compute
    from tests.support.http_api import ServeWithHttp

    work = tmp_path_factory.mktemp("console")
    store_path = work / "store"
    server = ServeWithHttp(work / "server", store_path)
    spark = None
    store = None
    try:
        spark = compute.build_session(server.proc.uri, "local[2]", workdir=str(work / "spark"))
        spark.sql("CREATE DATABASE shop")
        spark.sql("CREATE TABLE shop.orders (id INT, amount DOUBLE, country STRING) "
                  "PARTITIONED BY (ds STRING) STORED AS PARQUET")
        for i, day in enumerate(MAIN_DAYS):
            spark.sql(f"INSERT INTO shop.orders PARTITION (ds='{day}') " + _day_rows(i * 1000, 1000))
        # an Iceberg table (pyiceberg's HiveCatalog over Thrift): one append on main, one on dev
        import pyarrow as pa
        from pyiceberg.catalog.hive import HiveCatalog

        hive = HiveCatalog("hive", uri=server.proc.uri)
        ids = pa.schema([pa.field("id", pa.int64())])
        hive.create_table("shop.events", schema=ids).append(pa.table({"id": [1]}, schema=ids))
        store = open_store(store_path)
        store.commit("main", "shop.orders: three days", author="spark")
        store.create_branch("dev", "main")
        for i, day in enumerate(DEV_DAYS):
            spark.sql(f"INSERT INTO `shop@dev`.orders PARTITION (ds='{day}') "
                      + _day_rows(5000 + i * 1000, 600))
        hive.load_table("shop@dev.events").append(pa.table({"id": [2, 3]}, schema=ids))
        spark.sql("ALTER TABLE `shop@dev`.orders ADD COLUMNS (discount DOUBLE)")
        spark.sql("ALTER TABLE `shop@dev`.orders SET TBLPROPERTIES ('owner_team' = 'growth')")
        spark.sql("ALTER TABLE shop.orders SET TBLPROPERTIES ('owner_team' = 'finance')")
        store.commit("dev", "orders: two days and a discount column", author="alice")
        store.commit("main", "finance owns orders", author="bob")
        compute.compute(spark, server.proc.uri, store, "shop", "orders", ref="dev",
                        store_path=str(store_path), author="alice")
    except BaseException:
        server.stop()
        raise
    finally:
        if spark is not None:
            spark.stop()
        if store is not None:
            store.close()
    yield server.base
    server.stop()


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, console):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=console)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield pg
    context.close()
    assert not errors, errors


def shot(page, name: str, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    if os.environ.get("HMS_CONSOLE_DOCS_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / f"console-{name}.png")
    return path


def test_diff_between_branches_shows_the_column_and_partition_counts(page):
    from playwright.sync_api import expect

    page.goto("/console/#/diff?left=main&right=dev")
    orders = page.locator('article[data-entity="shop.orders"]')
    expect(orders).to_be_visible(timeout=30_000)
    rollup = orders.locator(".rollup-partition")
    expect(rollup).to_contain_text("partitions")
    expect(rollup).to_contain_text(f"{len(DEV_DAYS)} added")
    expect(orders.locator(".columns-chip")).to_contain_text("+1")
    # expand with the keyboard: the table's disclosure is a focusable button
    toggle = orders.get_by_role("button", name="shop.orders", exact=True)
    toggle.focus()
    assert page.evaluate("document.activeElement.getAttribute('aria-expanded')") == "false"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    added = orders.locator('tr[data-field="columns.added"]')
    expect(added).to_be_visible()
    expect(added.locator("td.after")).to_contain_text("discount double")
    expect(orders.locator('tr[data-field="parameters.owner_team"] td.before')).to_have_text("finance")
    expect(orders.locator('tr[data-field="parameters.owner_team"] td.after')).to_have_text("growth")
    listing = orders.get_by_role("button", name="List partitions of shop.orders")
    listing.focus()
    page.keyboard.press(" ")
    rows = orders.locator("table.children-table tbody tr[data-child]")
    expect(rows).to_have_count(len(DEV_DAYS))
    expect(rows.first).to_contain_text(f"ds={DEV_DAYS[0]}")
    assert outline not in ("", "none"), "the focused disclosure has no visible outline"
    shot(page, "diff")
    toggle.focus()
    page.keyboard.press(" ")
    expect(toggle).to_have_attribute("aria-expanded", "false")


def test_diff_of_an_iceberg_table_reads_in_icebergs_terms(page):
    from playwright.sync_api import expect

    page.goto("/console/#/diff?left=main&right=dev")
    events = page.locator('article[data-entity="shop.events"]')
    expect(events).to_be_visible(timeout=30_000)
    changes = events.get_by_role("list", name="Iceberg changes of shop.events")
    expect(changes.locator("li")).to_have_count(1)
    expect(changes.locator("li").first).to_have_text(re.compile(r"^append \d+: \+1 files, \+2 rows$"))
    shot(page, "diff-iceberg")


def test_merge_preview_lists_the_conflict(page):
    from playwright.sync_api import expect

    page.goto("/console/#/merge")
    page.get_by_label("Source").fill("dev")
    page.get_by_label("Into branch").fill("main")
    page.get_by_label("On conflicts").select_option("fail")
    page.get_by_role("button", name="Preview (dry run)").click()
    conflicts = page.locator("#conflicts tbody tr")
    expect(conflicts).to_have_count(1, timeout=30_000)
    row = conflicts.first
    expect(row).to_contain_text("VALUE_DIFFERS")
    expect(row).to_contain_text("shop.orders")
    expect(row).to_contain_text("parameters.owner_team")
    expect(row.locator("td").nth(3)).to_have_text("growth")
    expect(row.locator("td").nth(4)).to_have_text("finance")
    merge = page.locator("#merge-button")
    expect(merge).to_be_disabled()
    shot(page, "merge-conflict")
    page.get_by_label("On conflicts").select_option("source-wins")
    page.get_by_role("button", name="Preview (dry run)").click()
    expect(page.get_by_text("These conflicts will be resolved by source-wins.")).to_be_visible(
        timeout=30_000)
    expect(page.locator("#merge-button")).to_be_enabled()
    expect(page.locator("#merge-summary")).to_contain_text("partition")


def test_table_page_draws_a_column_histogram(page):
    from playwright.sync_api import expect

    page.goto("/console/#/table/shop/orders?ref=dev")
    expect(page.locator("#partition-count")).to_have_text(str(len(MAIN_DAYS) + len(DEV_DAYS)),
                                                          timeout=30_000)
    expect(page.locator("#schema")).to_contain_text("discount")
    expect(page.locator("#properties")).to_contain_text("growth")
    summary = page.locator("#stats-summary")
    expect(summary).to_be_visible(timeout=60_000)
    expect(summary.locator('tr[data-column="amount"]')).to_be_visible()
    page.get_by_role("button", name="Charts of amount").click()
    histogram = page.locator("#histogram svg.histogram")
    expect(histogram).to_be_visible(timeout=30_000)
    assert 10 < histogram.locator("rect.bar").count() <= 60  # 1,000 bins drawn as <= 60 bars
    assert histogram.get_attribute("aria-label").startswith("Histogram of amount: 1000 bins")
    expect(page.locator("#column-summary")).to_contain_text("count")
    shot(page, "histogram")
    page.get_by_role("button", name="Charts of country").click()
    bars = page.locator("#top-values svg.bars rect.hbar")
    expect(bars).to_have_count(5, timeout=30_000)  # fr, de, it, es, nl
    expect(page.locator("#top-values svg.bars")).to_contain_text("fr")
    # the range form narrows the histogram
    page.get_by_role("button", name="Charts of amount").click()
    expect(page.locator("#histogram svg.histogram")).to_be_visible(timeout=30_000)
    page.get_by_role("textbox", name="Range from").fill("50")
    page.get_by_role("textbox", name="Range to").fill("60")
    with page.expect_response(lambda r: "/stats/histogram" in r.url and "lo=50" in r.url):
        page.get_by_role("button", name="Apply range").click()
    narrowed = page.locator("#histogram svg.histogram")
    expect(narrowed).to_have_attribute("aria-label", re.compile(r"^Histogram of amount: \d{2,3} bins"),
                                       timeout=30_000)
    assert narrowed.locator("rect.bar").count() > 0
    lower = float(page.locator("#histogram details td").first.text_content())
    assert 49 <= lower <= 50


def test_pages_fit_a_small_laptop_and_branches_need_confirmation(browser, console):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 900, "height": 800}, base_url=console)
    page = context.new_page()
    try:
        page.goto("/console/#/refs")
        expect(page.locator("#branches")).to_contain_text("dev", timeout=30_000)
        page.get_by_label("New branch name").fill("review-1")
        page.get_by_role("button", name="Create branch").click()
        row = page.locator('tr[data-branch="review-1"]')
        expect(row).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Delete branch review-1").click()
        dialog = page.locator("dialog#confirm")
        expect(dialog).to_be_visible()
        page.keyboard.press("Escape")  # cancelled: nothing deleted
        expect(dialog).to_be_hidden()
        expect(row).to_be_visible()
        page.get_by_role("button", name="Delete branch review-1").click()
        dialog.get_by_role("button", name="Delete").click()
        expect(page.locator('tr[data-branch="review-1"]')).to_have_count(0, timeout=30_000)
        for route in ("#/refs", "#/diff?left=main&right=dev", "#/commits?ref=dev"):
            page.goto(f"/console/{route}")
            page.wait_for_load_state("networkidle")
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{route} is wider than 900px by {overflow}px"
        expect(page.locator("#log")).to_contain_text("orders: two days and a discount column")
        shot(page, "commits-900px")
    finally:
        context.close()


def test_merge_button_merges_when_the_preview_allows(page):
    """Last in this module: it changes main. The button is clicked, confirmed, and the merge
    is then seen at main: the merge commit in the log, dev's partitions on the table page."""
    from playwright.sync_api import expect

    page.goto("/console/#/merge?source=dev&dest=main&strategy=source-wins&preview=1")
    button = page.locator("#merge-button")
    expect(button).to_be_enabled(timeout=30_000)
    button.click()
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Merge", exact=True).click()
    done = page.get_by_text(re.compile(r"^Merged: commit"))
    expect(done).to_be_visible(timeout=60_000)
    shot(page, "merge-done")
    page.goto("/console/#/commits?ref=main")
    expect(page.locator("#log")).to_contain_text("dev", timeout=30_000)
    page.goto("/console/#/table/shop/orders?ref=main")
    expect(page.locator("#partition-count")).to_have_text(str(len(MAIN_DAYS) + len(DEV_DAYS)),
                                                          timeout=30_000)
    expect(page.locator("body")).to_contain_text("discount")
