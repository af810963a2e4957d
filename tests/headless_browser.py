"""Debian's headless Chromium, driven by selenium, for the tests that open
what the grader writes as a reader would (the class report, the docs site).
CI must run them: .ci/run installs chromium, chromium-driver and selenium;
elsewhere they are skipped with what to install."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = "apt-get install chromium chromium-driver; pip install selenium"
# without the background-networking flags Chromium keeps reaching for
# Google's hosts, refused on a closed network
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def chromium(profile: Path, why: str) -> Iterator:
    """A headless Chromium with a fresh profile in ``profile``, quit after
    use (a generator for a fixture); ``why`` says in CI's failure what
    needed it."""
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if webdriver is None or not binary or not driver:
        if os.environ.get("CI"):
            pytest.fail(f"CI must {why}: headless Chromium is missing ({INSTALL})")
        pytest.skip(f"needs headless Chromium: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()
