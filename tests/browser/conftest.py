"""Real Chromium (Debian's /usr/bin/chromium) driven by Playwright's sync API.

Never `playwright install`: the browser is the system one. Where it is missing the
browser tests skip, unless GAGAR_REQUIRE_BROWSER=1 (CI), where they fail loudly.
"""

from __future__ import annotations

import os

import pytest

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, ConsoleLog

# The review desk's people and groups, shared with tests/reviews (fixtures are found through a conftest).
from tests.reviews.conftest import dan, erin, fay, groups, judged  # noqa: F401

# Playwright's sync API runs an event loop in the test thread; Django would otherwise
# refuse ORM calls made from it (SynchronousOnlyOperation).
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


# One Chromium per test module, not per session: Playwright's sync API keeps an asyncio loop
# running in the test thread while it is open, and code that must start a loop of its own
# (an async view through Django's test client, a framework's asyncio.run) fails in a thread
# that already runs one. Closing it at the end of each module leaves later tests a plain thread.
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        reason = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("GAGAR_REQUIRE_BROWSER") == "1":
            pytest.fail(f"GAGAR_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.console_log = ConsoleLog(page)
    yield page
    context.close()
