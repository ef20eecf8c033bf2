"""The MLflow UI a user compares runs in, in a real browser: `mlflow ui` on loopback over the
micro main command's store (the session's one finished run, tests/conftest.py), opened in
headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium; no browser
download). As root on Debian/Ubuntu the README's test command installs them
(tests/system_packages.py), so there a missing browser fails; elsewhere the test skips, saying
why. Set MINTRL_UI_SCREENSHOT=path to keep the screenshot, MINTRL_UI_STORE=path/to/mlflow.db to
look at another store (MINTRL_UI_RUNS=a,b: the two runs to compare there;
MINTRL_UI_RUNS_SCREENSHOT=path keeps the experiment's runs page, MINTRL_UI_TABLE_SCREENSHOT=path
the runs table with its Pass@1 columns)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
ROOT = Path(__file__).resolve().parents[1]


def _browser():
    """Selenium's webdriver; a skip where the browser is missing, a failure where the test
    command should have installed it (root on Debian/Ubuntu)."""
    try:
        from selenium import webdriver
    except ImportError:
        webdriver = None
    if webdriver and CHROMIUM and DRIVER:
        return webdriver
    why = "needs selenium (the test extra) and Debian's chromium and chromium-driver"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        pytest.fail(f"{why}: run `python tests/system_packages.py` (the README's test command)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def store(request):
    if os.environ.get("MINTRL_UI_STORE"):
        return Path(os.environ["MINTRL_UI_STORE"])
    return request.getfixturevalue("micro_run") / "results" / "mlflow.db"


@pytest.fixture(scope="module")
def ui(store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri",
                             f"sqlite:///{store}", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/health", timeout=2)
            break
        except OSError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail("mlflow ui did not answer within 120 s")
    yield url
    proc.terminate()
    proc.wait(30)


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    webdriver = _browser()
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1600,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield drv
    drv.quit()


def _experiment(store):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{store}")
    exp = client.get_experiment_by_name("mintrl")
    return client, exp, {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}


def test_the_compare_view_of_two_runs_shows_their_names_and_a_metric_chart(store, ui, driver,
                                                                            tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    client, exp, runs = _experiment(store)
    pair = os.environ.get("MINTRL_UI_RUNS", "grpo-s0,mintrl-proxy").split(",")  # another store's
    ids = [runs[pair[0]].info.run_id, runs[pair[1]].info.run_id]
    # the README's link opens the experiment on its runs (MLflow 3.17 defaults to its GenAI
    # view, a per-browser setting; workflowType picks "Model training"), the teacher too
    driver.get(f"{ui}/#/experiments/{exp.experiment_id}?workflowType=machine_learning")
    wait = WebDriverWait(driver, 90)
    wait.until(lambda d: all(n in d.page_source for n in ("grpo-s0", "teacher", "base")))
    runs_shot = os.environ.get("MINTRL_UI_RUNS_SCREENSHOT")
    if runs_shot:
        driver.save_screenshot(runs_shot)
    driver.get(f"{ui}/#/compare-runs?runs={json.dumps(ids)}"
               f"&experiments={json.dumps([exp.experiment_id])}")
    wait.until(lambda d: pair[0] in d.page_source and pair[1] in d.page_source)
    # a chart (Plotly's) of a metric the two runs share, named on the page
    shared = (set(client.get_run(ids[0]).data.metrics)
              & set(client.get_run(ids[1]).data.metrics))
    wait.until(lambda d: d.find_elements("css selector", ".js-plotly-plot"))
    wait.until(lambda d: any(k in d.page_source for k in shared))
    shot = Path(os.environ.get("MINTRL_UI_SCREENSHOT", tmp_path / "compare.png"))
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_columns_pass1_put_each_runs_table_numbers_in_the_runs_table(store, ui, driver):
    """The README's "To see a table": Columns, search pass1/, tick them; every run's row then
    shows its Pass@1 (percent) per task and split, as the results tables do."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    _, exp, runs = _experiment(store)
    driver.get(f"{ui}/#/experiments/{exp.experiment_id}?workflowType=machine_learning")
    wait = WebDriverWait(driver, 90)
    wait.until(lambda d: "grpo-s0" in d.page_source)
    wait.until(lambda d: d.find_elements(By.XPATH, "//button[normalize-space()='Columns']"))
    driver.find_element(By.XPATH, "//button[normalize-space()='Columns']").click()
    search = wait.until(lambda d: d.find_element(By.XPATH,
                                                 "//input[@placeholder='Search columns']"))
    node = ("//span[contains(@class,'tree-title')][normalize-space(.)='{}']/ancestor::div"
            "[contains(@class,'treenode')]//span[contains(@class,'checkbox')]")
    for empty in ("Dataset", "Source", "Models"):  # the README: untick these to make room
        driver.find_element(By.XPATH, node.format(empty)).click()
    search.send_keys("pass1/")
    title = "//span[contains(@class,'tree-title')][starts-with(normalize-space(.),'pass1/')]"
    names = [t.text for t in wait.until(lambda d: d.find_elements(By.XPATH, title))]
    for name in names:
        driver.find_element(By.XPATH, node.format(name)).click()
    search.send_keys(Keys.ESCAPE)
    cells = "div[role=gridcell][col-id^='metrics.`pass1/']"
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, cells)) >= len(runs) - 1)
    shot = os.environ.get("MINTRL_UI_TABLE_SCREENSHOT")
    if shot:
        driver.save_screenshot(shot)
    by_id = {r.info.run_id: r for r in runs.values()}
    seen = 0
    for cell in driver.find_elements(By.CSS_SELECTOR, cells):
        run = by_id[cell.find_element(By.XPATH, "./ancestor::div[@role='row']"
                                      ).get_attribute("row-id")]
        key = cell.get_attribute("col-id").removeprefix("metrics.").strip("`")
        if key in run.data.metrics:  # the summary run has no Pass@1 of its own
            assert float(cell.text) == pytest.approx(run.data.metrics[key], abs=0.01), key
            seen += 1
    assert set(names) >= {"pass1/arith/easy", "pass1/arith/hard"} and seen >= len(runs) - 1
