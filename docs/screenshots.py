"""Take the README's screenshots of the review desk from the demo data, in Debian's Chromium.

    .venv/bin/python docs/screenshots.py            # writes docs/*.png

Seeds a scratch SQLite database with `seed_demo` (demo reviewers rita and sam, judgments,
one reviewer cheat call), serves it with runserver on a free loopback port, and captures:
review-queue.png (rita's queue), group-page.png (a group as the demo admin sees it, the
overview above the lanes), judging.png (rita judging a group blind), judged-group.png (a group rita judged, the grader's
verdict revealed next to hers), audit-queue.png (the demo admin's cheat audit),
calibration.png (the calibration page).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _support import free_port, stop_server, wait_until_healthy  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "DATABASE_URL"}}
        env.update(DATABASE_URL=f"sqlite:///{tmp}/demo.sqlite3", DJANGO_LOG_LEVEL="WARNING")
        python = sys.executable
        for command in (["migrate", "-v0"], ["seed_demo"]):
            subprocess.run([python, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        # The group page's shot: a group whose passing rollouts share a fix (patch clusters).
        clustered = (
            subprocess.run(
                [python, "manage.py", "shell", "-c", CLUSTERED_GROUP],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1:]
        )  # shell may say more first
        clustered = clustered[0] if clustered else ""
        port = free_port()
        server = subprocess.Popen(
            [python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_healthy(server, port)
            base = f"http://127.0.0.1:{port}"
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                shoot(browser, base, clustered)
                browser.close()
        finally:
            stop_server(server)


def log_in(browser, base: str, username: str):
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    return page


CLUSTERED_GROUP = (
    "from django.db.models import F\n"
    "from grading.models import Group\n"
    "g = Group.objects.filter(n_passed__gte=3, distinct_solutions__lt=F('n_passed')).order_by('distinct_solutions', "
    "'pk').first()\n"
    "print(f'/projects/{g.run.project.name}/runs/{g.run.name}/groups/{g.uid}/' if g else '')"
)


def shoot(browser, base: str, clustered: str) -> None:
    rita = log_in(browser, base, "rita")
    rita.goto(f"{base}/projects/demo/review/")
    rita.screenshot(path=ROOT / "docs/review-queue.png", full_page=True)
    judged = rita.locator("table a[href*='/groups/']").first.get_attribute("href")
    rita.goto(f"{base}{judged}?only=passing")  # the passing lanes: her tiers next to the grader's
    rita.wait_for_selector("section.verdict")
    rita.screenshot(path=ROOT / "docs/judged-group.png")

    rita.goto(f"{base}/projects/demo/review/")
    rita.get_by_test_id("next-group").click()  # a blind group, mid-judgment: two tiers set by keyboard
    rita.wait_for_selector("[data-judge]")
    for key in ("1", "j", "2"):
        rita.keyboard.press(key)
    rita.wait_for_timeout(300)
    rita.locator("#lane-bar").evaluate("bar => bar.scrollIntoView()")  # the lanes and their tier panels, under the overview
    rita.screenshot(path=ROOT / "docs/judging.png")

    admin = log_in(browser, base, "demo")
    admin.goto(
        f"{base}{clustered or judged}"
    )  # the group page as the admin sees it: the overview (grader tiers shown) above the lanes
    admin.wait_for_selector('body[data-group-ready="true"]', state="attached")
    admin.screenshot(path=ROOT / "docs/group-page.png")
    admin.goto(f"{base}/projects/demo/audit/")
    admin.screenshot(path=ROOT / "docs/audit-queue.png", full_page=True)
    calibration = f"{base}/projects/demo/calibration/"
    if admin.goto(calibration).status == 200:
        admin.wait_for_timeout(500)  # charts draw after DOMContentLoaded
        admin.screenshot(path=ROOT / "docs/calibration.png", full_page=True)
    print("wrote", ", ".join(sorted(p.name for p in (ROOT / "docs").glob("*.png"))))


if __name__ == "__main__":
    main()
