"""Headless Chromium from Debian's packages (chromium, chromium-driver: `make test` installs them),
driven by selenium, for the tests that look at a page as a person would.

    with chromium(tmp_path, width=390, height=844) as browser:   # a phone-sized window
        browser.get(base + "/")
        browser.save_screenshot(str(tmp_path / "page.png"))
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Flags for a closed network and a root user: no sandbox (root), no GPU, and none of Chromium's
# own background connections (refused here, and they slow its start).
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars")


@contextlib.contextmanager
def chromium(workdir: Path, *, width: int = 1280, height: int = 900):
    """A headless Chromium session with its own empty profile under ``workdir``."""
    # Selenium Manager would look for a driver online; the Debian driver is given instead.
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={workdir / 'chromium-profile'}")
    options.add_argument(f"--window-size={width},{height}")
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=str(workdir / "chromedriver.log")),
                               options=options)
    try:
        yield browser
    finally:
        browser.quit()
