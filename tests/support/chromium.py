"""Debian's headless Chromium for the browser tests, driven by Playwright (nothing downloaded): the session's
browser (registered in tests/conftest.py, so every browser test file shares one) and a page opened from a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("LOCOMO_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
INSTALL = ("install it as root: apt-get update && apt-get install -y chromium (.ci/run does this); "
           "Playwright itself comes from requirements.txt (never `playwright install`)")


def missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"Chromium not found at {CHROMIUM}: {INSTALL}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: make setup (requirements.txt pins it)"
    return None


@pytest.fixture(scope="session")  # session: set up before report_runs, so a skip costs nothing
def browser():
    why = missing()
    if why:
        if os.environ.get("LOCOMO_REQUIRE_BROWSER") == "1":
            pytest.fail(f"LOCOMO_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


class Opened:
    """A page opened from a file, with every console error, page error and request outside the file kept."""

    def __init__(self, browser, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.requests: list[str] = []
        url = path.resolve().as_uri()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: None if r.url == url or r.url.startswith("data:") else self.requests.append(r.url))
        self.page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
        self.page.goto(url)

    def count(self) -> str:
        return self.page.locator("#explorer-count").text_content()

    def rows(self) -> int:
        return self.page.locator("#explorer-rows tr.row").count()


