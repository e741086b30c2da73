"""The browser tests' page: Debian's Chromium driven by Playwright, watched for what the
Content-Security-Policy blocks and for requests to other origins."""

import pytest
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def watch(page, origin: str) -> tuple[list, list]:
    """What the page's Content-Security-Policy blocks, and every request it sends outside
    `origin`: two lists that fill as the page goes on."""
    blocked, elsewhere = [], []
    page.on("console", lambda message: blocked.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.on("request", lambda request: elsewhere.append(request.url)
            if not request.url.startswith((origin, "data:")) else None)
    return blocked, elsewhere


@pytest.fixture
def browser_page(live_server):
    """A page whose test ends with nothing blocked by the Content-Security-Policy and no
    request to another origin."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        blocked, elsewhere = watch(page, live_server.url)
        yield page
        browser.close()
    assert blocked == [], "the page did something its Content-Security-Policy forbids"
    assert elsewhere == [], "the page asked another origin"
