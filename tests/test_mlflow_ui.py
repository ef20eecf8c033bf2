"""The MLflow UI a user compares runs in, in a real browser: `mlflow ui` on loopback over a
micro sweep's store, opened in headless Chromium (Debian's `chromium` and `chromium-driver`,
driven by Selenium; no browser download). Outside CI: skipped where either is missing
(README, "Comparing runs in MLflow"). Set MINTRL_UI_SCREENSHOT=path to keep the screenshot,
MINTRL_UI_STORE=path/to/mlflow.db to reuse a micro sweep's store instead of running one."""

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

webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason="needs Debian's chromium and chromium-driver")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    if os.environ.get("MINTRL_UI_STORE"):  # a micro sweep's mlflow.db made earlier
        return Path(os.environ["MINTRL_UI_STORE"])
    work = tmp_path_factory.mktemp("ui")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
           "--directory", str(work), "--configfile", str(ROOT / "tests" / "micro.yaml"),
           "--cores", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return work / "results" / "mlflow.db"


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


def test_the_compare_view_of_two_runs_shows_their_names_and_a_metric_chart(store, ui, tmp_path):
    from mlflow.tracking import MlflowClient
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    client = MlflowClient(f"sqlite:///{store}")
    exp = client.get_experiment_by_name("mintrl")
    runs = {r.info.run_name: r.info.run_id for r in client.search_runs([exp.experiment_id])}
    ids = [runs["grpo-s0"], runs["mintrl-proxy"]]
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        driver.get(f"{ui}/#/compare-runs?runs={json.dumps(ids)}"
                   f"&experiments={json.dumps([exp.experiment_id])}")
        wait = WebDriverWait(driver, 90)
        wait.until(lambda d: "grpo-s0" in d.page_source and "mintrl-proxy" in d.page_source)
        # a chart (Plotly's) of a metric the two runs share, named on the page
        shared = (set(client.get_run(ids[0]).data.metrics)
                  & set(client.get_run(ids[1]).data.metrics))
        wait.until(lambda d: d.find_elements("css selector", ".js-plotly-plot"))
        wait.until(lambda d: any(k in d.page_source for k in shared))
        shot = Path(os.environ.get("MINTRL_UI_SCREENSHOT", tmp_path / "compare.png"))
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
