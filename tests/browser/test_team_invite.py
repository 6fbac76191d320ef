"""The team page's invitation in real Chromium: alice (admin of acme) invites nina, who has no account;
nina opens the one-time link, chooses a password, is logged in and sees acme; the link then no longer works.
Also sid (site staff) creates a project from the projects page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from grading.models import Membership, Project, Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, username: str, next_path: str) -> None:
    page.goto(f"{live_server.url}{next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-pass-123")
    page.get_by_role("button", name="Log in").click()


def test_alice_invites_nina_and_nina_signs_up_through_the_link(live_server, page, browser, alice, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    log_in(page, live_server, "alice", "/projects/acme/team/")
    expect(page.get_by_role("heading", name="Team")).to_be_visible()
    page.get_by_test_id("invite-username").fill("nina")
    page.get_by_test_id("invite-email").fill("nina@example.org")
    page.get_by_test_id("invite-role").select_option("adjudicator")
    page.get_by_test_id("invite-member").click()

    shown = page.get_by_test_id("new-invite")
    expect(shown).to_contain_text("Sign-up link for nina (adjudicator)")
    expect(page.get_by_test_id("invite-mailed")).to_have_text("nina@example.org")
    link = page.get_by_test_id("invite-link").inner_text()
    assert link.startswith(f"{live_server.url}/accounts/invite/")
    expect(page.get_by_test_id("member-nina")).to_be_visible()
    assert page.console_log.errors == []

    # nina opens the link in her own browser: no session of alice's
    context = browser.new_context()
    nina_page = context.new_page()
    nina_page.goto(link)
    expect(nina_page.get_by_test_id("invite-username")).to_have_text("nina")
    nina_page.get_by_label("Password", exact=True).fill("nina-pass-123")
    nina_page.get_by_label("Password again").fill("nina-pass-123")
    nina_page.get_by_role("button", name="Set password and log in").click()
    expect(nina_page.get_by_role("heading", name="Projects")).to_be_visible()
    expect(nina_page.locator(".flash")).to_contain_text("Welcome, nina")
    expect(nina_page.get_by_role("link", name="acme")).to_be_visible()
    assert get_user_model().objects.get(username="nina").check_password("nina-pass-123")
    assert Membership.objects.get(user__username="nina").role == Role.ADJUDICATOR

    nina_page.goto(link)  # one time only
    expect(nina_page.get_by_test_id("invite-invalid")).to_be_visible()
    context.close()


def test_staff_create_a_project_from_the_projects_page(live_server, page, db):
    get_user_model().objects.create_user(username="sid", password="sid-pass-123", is_staff=True)
    log_in(page, live_server, "sid", "/projects/")
    page.get_by_test_id("new-project-link").click()
    page.get_by_label("Name").fill("flash-code-rl")
    page.get_by_label("Description").fill("GRPO runs")
    page.get_by_test_id("create-project").click()
    expect(page.get_by_role("heading", name="Team")).to_be_visible()
    expect(page.locator(".flash")).to_contain_text("Project flash-code-rl created; you are its admin")
    expect(page.get_by_test_id("member-sid")).to_be_visible()
    assert Project.objects.get(name="flash-code-rl").description == "GRPO runs"
    assert page.console_log.errors == []
