"""Driving the site in real Chromium (tests/browser): where the browser is and how it starts,
`ConsoleLog` (errors a page logged), `log_in(page, live_server, username, next_path)`,
`watch_dialogs(page)`, `group_path(uid)`, `tier_lanes(page, keys)`, `wait_until_ready(page)`,
`open_blind_assignment(page, live_server, user, group)`."""

from __future__ import annotations

from pathlib import Path

from reviews.services.queue import assign

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


class ConsoleLog:
    """Console errors, uncaught exceptions and CSP violations seen by one page."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        # Chromium also logs CSP refusals to the console; this catches them even if it stops.
        page.expose_function("__gagarCspViolation", lambda text: self.errors.append(f"CSP: {text}"))
        page.add_init_script(
            "document.addEventListener('securitypolicyviolation', e =>"
            " window.__gagarCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'}`));"
        )


def log_in(page, live_server, username: str, next_path: str) -> None:
    page.goto(f"{live_server.url}{next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-pass-123")
    page.get_by_role("button", name="Log in").click()


def watch_dialogs(page) -> list[str]:
    dialogs: list[str] = []

    def on_dialog(dialog):
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return dialogs


def group_path(uid: str) -> str:
    return f"/projects/acme/runs/r1/groups/{uid}/"


def tier_lanes(page, keys) -> None:
    """Give the passing lanes their tiers from the keyboard, one key a lane, `j` to the next."""
    for n, key in enumerate(keys):
        if n:
            page.keyboard.press("j")
        page.keyboard.press(key)


def wait_until_ready(page) -> None:
    """The group page's script has bound its key handlers (static/js/judge.js sets the marker)."""
    page.wait_for_selector('body[data-judge-ready="true"]', state="attached")


def open_blind_assignment(page, live_server, user, group) -> None:
    """Assign `group` to `user` (blind, as the default review policy and the blind tests' policy
    make it) and open its page as them, its keys bound."""
    assign(group=group, reviewer=user)
    log_in(page, live_server, user.username, group_path(group.uid))
    wait_until_ready(page)
