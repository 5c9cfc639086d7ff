"""Headless Chromium for the browser tests (the web page, CORS, cross-site requests): Debian's
chromium and chromium-driver, driven by Selenium from the CI's Python folder (.ci/run installs it;
it downloads nothing). Importing this module exits 77 (ctest: skipped) where chromium or
chromedriver is absent, and fails naming Selenium where only that is missing."""
import os
import shutil
import sys

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if not CHROMIUM or not DRIVER:
    print("skipped: Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    sys.exit(77)
sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError as e:
    sys.exit(f"chromium is installed but Selenium is not ({e}): pip install selenium (.ci/run does)")


def browser(*arguments, console_log=False):
    """A headless Chromium with the sandbox and GPU off (CI runs as root, without a display), given
    `arguments` besides; `console_log` keeps the page's console for driver.get_log("browser")."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *arguments):
        options.add_argument(arg)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
