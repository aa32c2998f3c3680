#!/usr/bin/env python3
"""The explorer (/explore) in headless Chromium, driven by Selenium (`make ui-test`).

Starts the release binary on the bundled sample and on a small hostile export this script
writes, then, as an analyst would: signs in (a wrong pair first), filters by a facet, sorts by a
column header (keyboard), pages with the cursor and walks back, reloads a shared URL, downloads
the view as CSV and Parquet, opens a vehicle, compares two, reads the insights' numbers, runs an
SQL query and charts it, checks that export text is rendered as text, runs axe-core on every page,
checks every page at 390 px wide and saves a screenshot of each page under target/ui/.

Expected values come from the Parquet files read with pyarrow and the contract's formulas, never
from the service's answers. Exits non-zero on the first failed check.

Usage: explore.py --binary target/release/eco-insights [--data data/catalog.parquet]
                  [--out target/ui] [--axe target/ui/node_modules/axe-core/axe.min.js]
       explore.py --binary … --timings-only --data target/ui/catalog-1m.parquet
                  (only signs in and times the first view and each interaction on a large
                  catalog, e.g. one made by `eco-insights generate --rows 1000000`; no budget)
"""
import argparse
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import time
import unicodedata
import urllib.error
import urllib.request
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "report"))
import png_check  # noqa: E402

KEY = "ui-key"
SECRET = "ui-secret-5b1f0c"
HOSTILE = "<img src=x onerror=window.__pwned=1>"
PAGE_SIZE = 20  # the contract's default page size
FIRST_VIEW_MS = 1000
INTERACTION_MS = float(os.environ.get("UI_INTERACTION_MS", "300"))
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--window-size=1000,800",
]

checks = 0


class Failed(Exception):
    pass


def check(condition, message):
    global checks
    checks += 1
    if not condition:
        raise Failed(message)


# ---------------------------------------------------------------------------------------------
# The service and the expected values


class Service:
    def __init__(self, binary, data, work):
        creds = work / "credentials.json"
        creds.write_text(json.dumps({"credentials": [
            {"key": KEY, "name": "ui test", "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
             "quota_per_minute": None}
        ]}))
        self.log = open(work / f"server-{data.stem}.log", "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data", str(data), "--credentials", str(creds),
             "--queries", str(ROOT / "queries"), "--log", "warn"],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise SystemExit(f"ui: the service did not start: {line!r}")
        self.base = line.strip().removeprefix("listening on ")

    def get(self, path, headers=None):
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                return res.status, {k.lower(): v for k, v in res.headers.items()}, res.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def fold(text):
    """Case- and accent-insensitive form of a text filter (contract §3)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)).casefold()


def clamp(x):
    return None if x is None else max(0.0, min(100.0, x))


def eco_score(r):
    """The eco score of one row, from the contract's formulas (§2), published to 1 decimal."""
    c, co2 = r["consumo_energetico_mj_km"], r["co2_fossil_g_km"]
    energia = clamp(100 * (3.0 - c) / 2.7) if c is not None else None
    indice_co2 = clamp(100 * (250 - co2) / 250) if co2 is not None else None
    pol = [r["nmhc_g_km"], r["co_g_km"], r["nox_g_km"]]
    poluentes = None
    nmog = r.get("nmog_nox_g_km")
    if all(p is not None for p in pol):
        poluentes = clamp(100 * (1 - (pol[0] / 0.05 + pol[1] / 1.3 + pol[2] / 0.08) / 3))
    elif nmog is not None and pol[1] is not None:
        # PROCONVE L7: NMOG+NOx together and CO.
        poluentes = clamp(100 * (1 - (nmog / 0.08 + pol[1] / 1.0) / 2))
    if energia is None and indice_co2 is None:
        return None
    parts = [(v, w) for v, w in ((energia, 0.45), (indice_co2, 0.35), (poluentes, 0.20)) if v is not None]
    raw = sum(v * w for v, w in parts) / sum(w for _, w in parts)
    return float(Decimal(repr(round(raw, 7))).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN))


def pt(x):
    """A number as the page shows it (pt-BR, up to 2 decimals, grouped thousands)."""
    d = Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN).normalize()
    sign, digits, exp = d.as_tuple()
    text = format(d, "f")
    whole, _, frac = text.partition(".")
    whole = f"{int(whole):,}".replace(",", ".") if whole not in ("-0",) else whole
    return whole + ("," + frac if frac else "")


# ---------------------------------------------------------------------------------------------
# The browser


def browser(downloads):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="eco-ui-chromium-"))
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=DriverService("/usr/bin/chromedriver"), options=options)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    return driver


class Page:
    def __init__(self, driver, base, out, axe):
        self.d = driver
        self.base = base
        self.out = out
        self.axe = axe

    def wait(self, cond, what, timeout=20):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.02).until(lambda d: cond())
        except TimeoutException:
            raise Failed(f"timed out waiting for {what} (at {self.d.current_url})")

    def state(self):
        return self.d.execute_script("return window.__explore || null")

    def ready(self, page, after=None):
        """Waits until `page` is complete after render number `after`; returns its timing."""
        def done():
            s = self.state()
            ok = self.d.execute_script("return document.querySelector('main').dataset.ready || ''") == page
            return s if ok and s and s["page"] == page and (after is None or s["at"] > after["at"] or s["seq"] != after["seq"]) else None
        return self.wait(done, f"the {page} page")

    def open(self, path, page):
        self.d.get(self.base + path)
        return self.ready(page)

    def css(self, selector):
        return self.d.find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector):
        found = self.css(selector)
        check(found, f"no element {selector} at {self.d.current_url}")
        return found[0]

    def text(self, selector="main"):
        return self.one(selector).text

    def path(self):
        return self.d.current_url.removeprefix(self.base)

    def row_ids(self):
        return [a.get_attribute("href").rsplit("/", 1)[1] for a in self.css("table.catalog-table tbody td[data-label='Modelo'] a")]

    def screenshot(self, name):
        self.d.execute_script("window.scrollTo(0, 0); document.activeElement && document.activeElement.blur()")
        png = self.out / f"{name}.png"
        self.d.save_screenshot(str(png))
        width, height, bpp, rows = png_check.decode(str(png))
        colours, ink = set(), 0
        for line in rows:
            for x in range(0, len(line), bpp):
                px = line[x:x + min(bpp, 3)]
                colours.add(px)
                ink += any(v < 245 for v in px)
        share = ink / (width * height)
        check(share >= 0.02 and len(colours) >= 16, f"{png} looks blank ({share:.1%} ink, {len(colours)} colours)")
        print(f"  screenshot {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}: {width}x{height}, {share:.0%} ink")

    def run_axe(self, name):
        self.d.execute_script(self.axe)
        result = self.d.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v => "
            "({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))))"
            ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]))")
        bad = [v for v in result if v["impact"] in ("serious", "critical")]
        check(not bad, f"axe-core on {name}: " + json.dumps(bad, ensure_ascii=False))
        print(f"  axe-core {name}: no serious or critical violation ({len(result)} minor)")

    def narrow(self, name):
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        try:
            time.sleep(0.2)
            sw, cw = self.d.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            check(sw <= cw, f"{name} scrolls sideways at 390 px ({sw} > {cw})")
        finally:
            self.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# ---------------------------------------------------------------------------------------------
# The scenario


def sign_in(p, key, secret):
    p.wait(lambda: p.css("#api-key"), "the sign-in form")
    field = p.one("#api-key")
    field.clear()
    p.one("#api-secret").clear()
    field.click()
    # Keyboard only: type the key, Tab to the secret, Enter submits.
    ActionChains(p.d).send_keys(key).send_keys(Keys.TAB).send_keys(secret).send_keys(Keys.ENTER).perform()


def scenario(p, service, table, out, downloads):
    rows = table.to_pylist()
    by_id = {r["id"]: r for r in rows}
    scores = {r["id"]: eco_score(r) for r in rows}

    # The page needs no key, every datum does; a strict CSP.
    status, headers, body = service.get("/explore/insights?marca=x")
    check(status == 200 and b"/explore/assets/explore.js" in body, f"/explore/insights without a key: {status}")
    csp = headers.get("content-security-policy", "")
    script_src = next((d for d in csp.split(";") if d.strip().startswith("script-src")), "")
    check("'self'" in script_src and "unsafe" not in script_src, f"CSP script-src: {csp!r}")
    check("frame-ancestors 'none'" in csp and "default-src" in csp, f"CSP: {csp!r}")
    status, _, _ = service.get("/catalog/vehicles")
    check(status == 401, f"the API without a key answered {status}")
    status, _, body = service.get("/catalog/vehicles", {"X-API-Key": KEY, "X-API-Secret": "wrong"})
    api_message = json.loads(body)["error"]["message"]

    # Sign-in: password-manager attributes; a wrong pair shows the API's message.
    p.open("/explore", "signin")
    check(p.one("#api-key").get_attribute("autocomplete") == "username", "key input autocomplete")
    check(p.one("#api-secret").get_attribute("autocomplete") == "current-password", "secret input autocomplete")
    check(p.one("#api-secret").get_attribute("type") == "password", "the secret input is a password field")
    p.run_axe("sign-in")
    p.narrow("sign-in")
    p.screenshot("signin")
    sign_in(p, KEY, "wrong")
    p.wait(lambda: p.css("#signin-error .error"), "the sign-in error")
    check(p.text("#signin-error") == api_message, f"sign-in error {p.text('#signin-error')!r} != {api_message!r}")
    sign_in(p, KEY, SECRET)
    p.ready("catalog")
    check(p.d.execute_script("return document.cookie") == "", "a cookie was set")
    check(SECRET not in p.d.current_url and KEY not in p.d.current_url, "the credentials are in the URL")
    check(p.d.execute_script("return sessionStorage.getItem('eco.apiSecret')") == SECRET, "the secret is not in sessionStorage")

    # First view: a reload (credentials in the tab), measured from navigation start.
    p.d.refresh()
    p.ready("catalog")
    first = p.d.execute_script("const m = performance.getEntriesByName('explore:catalog'); return m.length ? m[m.length - 1].startTime : null")
    check(first is not None and first < FIRST_VIEW_MS, f"first view took {first} ms (budget {FIRST_VIEW_MS})")
    print(f"  first view (navigation start to a filled table): {first:.0f} ms")
    total = int(p.one("#total strong").get_attribute("data-total"))
    check(total == len(rows), f"total {total} != {len(rows)} rows in the export")
    check(len(p.row_ids()) == PAGE_SIZE, f"{len(p.row_ids())} rows on the first page")
    external = p.d.execute_script("return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))")
    check(not external, f"requests left the host: {external}")
    p.run_axe("catalog")
    p.narrow("catalog")
    p.screenshot("catalog")
    timings = {}

    # A facet filters on click: the most frequent brand.
    counts = {}
    for r in rows:
        counts[r["marca"]] = counts.get(r["marca"], 0) + 1
    brand = max(counts, key=lambda b: (counts[b], b))
    matching = [r for r in rows if fold(brand) in fold(r["marca"])]
    before = p.state()
    facet = p.one(f"a[data-facet='marca'][data-value='{brand}']")
    p.d.execute_script("arguments[0].closest('details').open = true", facet)
    facet.click()
    timings["facet"] = p.ready("catalog", before)["ms"]
    # A brand of several words ("LAND ROVER") is encoded in the URL.
    check(any(f"marca={q(brand)}" in p.path() for q in (urllib.parse.quote_plus, urllib.parse.quote)),
          f"the URL does not carry the facet: {p.path()}")
    total = int(p.one("#total strong").get_attribute("data-total"))
    check(total == len(matching), f"{brand}: total {total} != {len(matching)}")

    # Sort by a column header with the keyboard: ascending, then descending.
    before = p.state()
    p.one("button.sort[data-field='ano']").send_keys(Keys.ENTER)
    timings["sort"] = p.ready("catalog", before)["ms"]
    ordered = sorted(matching, key=lambda r: (r["ano"], r["id"]))
    check("sort=ano" in p.path() and p.row_ids()[:PAGE_SIZE] == [r["id"] for r in ordered[:PAGE_SIZE]],
          f"sort=ano: rows {p.row_ids()[:3]} != {[r['id'] for r in ordered[:3]]}")
    check(p.one("th[aria-sort]").get_attribute("aria-sort") == "ascending", "aria-sort ascending")
    before = p.state()
    p.one("button.sort[data-field='ano']").send_keys(Keys.ENTER)
    timings["sort-desc"] = p.ready("catalog", before)["ms"]
    ordered = sorted(matching, key=lambda r: (-r["ano"], r["id"]))
    expected = [r["id"] for r in ordered]
    check("sort=-ano" in p.path() and p.row_ids() == expected[:PAGE_SIZE], "sort=-ano: wrong first page")

    # Cursor pagination, then the browser's back button.
    first_page_url = p.d.current_url
    before = p.state()
    p.one("#next-page").click()
    timings["next-page"] = p.ready("catalog", before)["ms"]
    check("cursor=" in p.path(), "the URL does not carry the cursor")
    check(p.row_ids() == expected[PAGE_SIZE:2 * PAGE_SIZE], "the second page is not the next 20 vehicles")
    shared = p.d.current_url
    # Downloads of exactly this view.
    for f in downloads.glob("*"):
        f.unlink()
    p.one("button[data-format='csv']").click()
    csv_file = p.wait(lambda: next((f for f in downloads.glob("*.csv")), None), "the CSV download")
    p.one("button[data-format='parquet']").click()
    pq_file = p.wait(lambda: next((f for f in downloads.glob("*.parquet")), None), "the Parquet download")
    time.sleep(0.3)
    got = [r["id"] for r in csv.DictReader(io.StringIO(csv_file.read_text(encoding="utf-8")))]
    check(got == expected[PAGE_SIZE:2 * PAGE_SIZE], f"the CSV download is not the current view ({len(got)} rows)")
    got = pq.read_table(pq_file).column("id").to_pylist()
    check(got == expected[PAGE_SIZE:2 * PAGE_SIZE], f"the Parquet download is not the current view ({len(got)} rows)")
    p.d.back()
    p.wait(lambda: p.d.current_url == first_page_url, "back to the first page")
    p.ready("catalog")
    check(p.row_ids() == expected[:PAGE_SIZE], "back did not show the first page again")
    # A shared URL, reloaded: the same view.
    p.d.get(shared)
    p.ready("catalog")
    check(p.row_ids() == expected[PAGE_SIZE:2 * PAGE_SIZE], "the shared URL did not reload the same view")
    # The API's own parameter names in a hand-written URL.
    p.open(f"/explore?marca={urllib.parse.quote_plus(brand.lower())}&ano_min=2020&sort=-ano&fields=marca,modelo,ano", "catalog")
    n = sum(1 for r in matching if r["ano"] >= 2020)
    check(int(p.one("#total strong").get_attribute("data-total")) == n, f"ano_min=2020: total != {n}")
    heads = [th.text.split("\n")[0].strip(" ▲▼") for th in p.css("table.catalog-table thead th")]
    check(heads == ["Marca", "Modelo", "Ano"], f"fields=marca,modelo,ano shows columns {heads}")
    # Sorted by eco score (a field of the eco-score list): the vehicles with a score, best first,
    # id ascending on ties, the scores computed here from the contract's formulas.
    p.open(f"/explore?marca={urllib.parse.quote_plus(brand.lower())}&ano_min=2020&sort=-ecoScore", "catalog")
    scored = sorted((r for r in matching if r["ano"] >= 2020 and scores[r["id"]] is not None),
                    key=lambda r: (-scores[r["id"]], r["id"]))
    check(int(p.one("#total strong").get_attribute("data-total")) == len(scored),
          f"sort=-ecoScore: total != {len(scored)} scored vehicles")
    check(p.row_ids() == [r["id"] for r in scored[:PAGE_SIZE]], "sort=-ecoScore: wrong first page")
    shown = [c.text for c in p.css("table.catalog-table tbody td[data-label='Eco score']")]
    check(shown == [pt(scores[r["id"]]) for r in scored[:PAGE_SIZE]], f"eco scores shown {shown[:3]}")
    check(p.one("th[aria-sort]").get_attribute("aria-sort") == "descending", "aria-sort descending on ecoScore")
    p.open(f"/explore?marca={urllib.parse.quote_plus(brand.lower())}&ano_min=2020&sort=-ano&fields=marca,modelo,ano", "catalog")

    # A vehicle: its data, the eco score, similar vehicles, add to comparison.
    first_id = p.row_ids()[0]
    before = p.state()
    p.css("table.catalog-table tbody td[data-label='Modelo'] a")[0].click()
    timings["open-vehicle"] = p.ready("vehicle", before)["ms"]
    check(p.path() == f"/explore/vehicles/{first_id}", f"vehicle URL {p.path()}")
    v = by_id[first_id]
    h1 = p.text("h1")
    check(v["marca"] in h1 and v["modelo"] in h1 and str(v["ano"]) in h1, f"vehicle heading {h1!r}")
    check(p.text("#eco-score") == pt(scores[first_id]) if scores[first_id] is not None else True,
          f"eco score {p.text('#eco-score')} != {scores[first_id]}")
    p.wait(lambda: p.css("#indices[data-ready]"), "the eco score's indices")
    check("Índice de energia" in p.text() and "Percentil" in p.text(), "indices or positions missing")
    p.one("#add-compare").click()
    similar = p.css("table.similar tbody a")
    check(similar, "no similar vehicle")
    other = similar[0].get_attribute("href").rsplit("/", 1)[1]
    check(by_id[other]["categoria"] == v["categoria"], "a similar vehicle of another category")
    p.run_axe("vehicle")
    p.narrow("vehicle")
    p.screenshot("vehicle")
    before = p.state()
    similar[0].click()
    p.ready("vehicle", before)
    p.one("#add-compare").click()
    p.wait(lambda: p.one("#open-compare").is_displayed(), "the comparison link")
    before = p.state()
    p.one("#open-compare").click()
    timings["compare"] = p.ready("compare", before)["ms"]
    check(first_id in p.path() and other in p.path(), f"compare URL {p.path()}")
    eco_row = next(tr for tr in p.css("table.compare tbody tr") if tr.find_element(By.TAG_NAME, "th").text == "Eco score")
    cells = eco_row.find_elements(By.TAG_NAME, "td")
    check(len(cells) == 2, f"{len(cells)} vehicles compared")
    a, b = scores[first_id], scores[other]
    best = max(x for x in (a, b) if x is not None)
    marked = [("best" in (c.get_attribute("class") or "")) for c in cells]
    check(marked == [a == best, b == best], f"best eco score marked {marked} for {a}, {b}")
    p.run_axe("compare")
    p.narrow("compare")
    p.screenshot("compare")
    compare_url = p.d.current_url
    p.d.refresh()
    p.ready("compare")
    check(p.d.current_url == compare_url and len(p.css("table.compare thead th")) == 3, "the comparison did not reload")

    # Insights: the charts follow the filters; the numbers are one click away.
    p.open(f"/explore/insights?marca={urllib.parse.quote_plus(brand)}", "insights")
    check(len(p.css("figure.chart svg")) == 5, f"{len(p.css('figure.chart svg'))} charts")
    toggle = p.one("#chart-dist button[aria-controls]")
    toggle.click()
    check(toggle.get_attribute("aria-expanded") == "true" and p.one("#numbers-dist").is_displayed(), "numbers not shown")
    bands = [int(td.text.replace(".", "")) for td in p.css("#numbers-dist td.num")]
    scored = sum(1 for r in matching if scores[r["id"]] is not None)
    check(sum(bands) == scored, f"eco-score distribution sums to {sum(bands)}, {scored} scored {brand} vehicles")
    check(len(p.css("#chart-dist svg rect")) == 4, "the distribution chart has not 4 bars")
    p.run_axe("insights")
    p.narrow("insights")
    p.screenshot("insights")

    # SQL: type, Ctrl+Enter, the result as a table and a chart; an error inline.
    p.open("/explore/sql", "sql")
    p.wait(lambda: p.css(".schema details"), "the tables beside the editor")
    check("catalog" in p.text(".schema") and "vw_eco_score" in p.text(".schema"), "tables not listed")
    editor = p.one("#sql-editor")
    editor.clear()
    before = p.state()
    editor.send_keys("select ano, count(*) as n from catalog group by ano order by ano")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    timings["sql"] = p.ready("sql", before)["ms"]
    check("sql=select" in p.path(), "the URL does not carry the query")
    years = {}
    for r in rows:
        years[r["ano"]] = years.get(r["ano"], 0) + 1
    got = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in p.css("#sql-result table.sql-table tbody tr")]
    want = [[str(y), pt(c)] for y, c in sorted(years.items())]
    diff = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    check(got == want, f"SQL result row {diff}: {got[diff:diff + 2]} != {want[diff:diff + 2]} ({len(got)} rows, {len(want)} expected)")
    Select(p.one("#chart-x")).select_by_value("ano")
    Select(p.one("#chart-y")).select_by_value("n")
    check(len(p.css("#sql-chart svg rect")) == len(years), "the chart has not one bar per row")
    p.run_axe("sql")
    p.narrow("sql")
    p.screenshot("sql")
    editor = p.one("#sql-editor")
    editor.clear()
    before = p.state()
    editor.send_keys("selec 1")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    p.ready("sql", before)
    err = p.text("#sql-error")
    check("400" in err and "VALIDATION_ERROR" in err, f"the SQL error is not shown inline: {err!r}")

    bad = [t for t, ms in timings.items() if ms >= INTERACTION_MS]
    print("  interactions (click to complete page, ms): " + ", ".join(f"{t} {ms:.0f}" for t, ms in timings.items()))
    check(not bad, f"interactions over {INTERACTION_MS:.0f} ms: {bad}")
    errors = [e for e in p.d.get_log("browser") if e["level"] == "SEVERE" and "401" not in e["message"] and "400" not in e["message"]]
    check(not errors, f"console errors: {errors}")


def hostile(p, table):
    p.open("/explore", "signin")
    sign_in(p, KEY, SECRET)
    p.ready("catalog")
    check(HOSTILE in p.text("table.catalog-table"), "the hostile modelo is not shown as text")
    check(not p.css("main img"), "the hostile modelo became an element")
    check(p.d.execute_script("return typeof window.__pwned") == "undefined", "the hostile modelo ran")
    link = [a for a in p.css("table.catalog-table td[data-label='Modelo'] a") if a.text == HOSTILE]
    check(len(link) == 1, "the hostile modelo is not one link's text")
    before = p.state()
    link[0].click()
    p.ready("vehicle", before)
    check(HOSTILE in p.text("h1") and not p.css("main img"), "the hostile modelo on the vehicle page")
    check(p.d.execute_script("return typeof window.__pwned") == "undefined", "the hostile modelo ran")


def timings_only(p):
    """Times the first view and each interaction (click to complete page) without checking values."""
    p.open("/explore", "signin")
    sign_in(p, KEY, SECRET)
    p.ready("catalog")
    timings = {}
    p.d.refresh()
    p.ready("catalog")
    timings["first view"] = p.d.execute_script("const m = performance.getEntriesByName('explore:catalog'); return m[m.length - 1].startTime")

    def step(name, page, action):
        before = p.state()
        action()
        timings[name] = p.ready(page, before)["ms"]

    def facet():
        a = p.one("a[data-facet='marca']")
        p.d.execute_script("arguments[0].closest('details').open = true", a)
        a.click()

    step("facet", "catalog", facet)
    step("sort", "catalog", lambda: p.one("button.sort[data-field='ano']").click())
    step("sort-desc", "catalog", lambda: p.one("button.sort[data-field='ano']").click())
    step("next-page", "catalog", lambda: p.one("#next-page").click())
    step("filter ano_min", "catalog", lambda: p.d.execute_script(
        "history.pushState(null, '', location.pathname + location.search.replace(/&?cursor=[^&]*/, '') + '&ano_min=2020');"
        "window.dispatchEvent(new PopStateEvent('popstate'))"))
    step("open vehicle", "vehicle", lambda: p.css("table.catalog-table td[data-label='Modelo'] a")[0].click())
    step("similar vehicle", "vehicle", lambda: p.css("table.similar tbody a")[0].click())
    step("insights", "insights", lambda: p.one("a[data-nav='insights']").click())
    step("catalog", "catalog", lambda: p.one("a[data-nav='catalog']").click())
    step("back", "insights", lambda: p.d.back())
    print("  " + ", ".join(f"{k} {v:.0f} ms" for k, v in timings.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--data", default=str(ROOT / "data" / "catalog.parquet"))
    ap.add_argument("--out", default=str(ROOT / "target" / "ui"))
    ap.add_argument("--axe", default=str(ROOT / "target" / "ui" / "node_modules" / "axe-core" / "axe.min.js"))
    ap.add_argument("--timings-only", action="store_true", help="time the page on --data, check nothing else")
    args = ap.parse_args()
    started = time.monotonic()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "failure.png").unlink(missing_ok=True)
    axe = Path(args.axe).read_text(encoding="utf-8")
    work = Path(tempfile.mkdtemp(prefix="eco-ui-"))
    downloads = work / "downloads"
    downloads.mkdir()
    if args.timings_only:
        service = Service(args.binary, Path(args.data), work)
        driver = browser(downloads)
        try:
            timings_only(Page(driver, service.base, out, axe))
        finally:
            driver.quit()
            service.stop()
        return 0
    table = pq.read_table(args.data)
    # The hostile export: three rows of the sample, the first one's modelo a piece of markup.
    small = table.slice(0, 3)
    modelo = small.column("modelo").to_pylist()
    modelo[0] = HOSTILE
    small = small.set_column(small.schema.get_field_index("modelo"), "modelo", pa.array(modelo, pa.string()))
    hostile_file = work / "hostile.parquet"
    pq.write_table(small, hostile_file)

    services = []
    driver = None
    try:
        sample = Service(args.binary, Path(args.data), work)
        services.append(sample)
        evil = Service(args.binary, hostile_file, work)
        services.append(evil)
        driver = browser(downloads)
        scenario(Page(driver, sample.base, out, axe), sample, table, out, downloads)
        hostile(Page(driver, evil.base, out, axe), small)
    except Failed as e:
        if driver:
            driver.save_screenshot(str(out / "failure.png"))
        print(f"ui-test FAILED after {checks} checks: {e}", file=sys.stderr)
        return 1
    finally:
        if driver:
            driver.quit()
        for s in services:
            s.stop()
    print(f"ui-test: {checks} checks passed in {time.monotonic() - started:.0f} s; screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
