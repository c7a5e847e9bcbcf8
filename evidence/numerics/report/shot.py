"""The top of a report, as Chromium draws it: python shot.py /abs/path/report.html out.png"""

import sys

from playwright.sync_api import sync_playwright

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto("file://" + sys.argv[1])
    page.screenshot(path=sys.argv[2])
    print(page.title())
    browser.close()
