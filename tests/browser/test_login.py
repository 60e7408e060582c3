"""Logging in to the page: the key checked and kept per tab, the role's views only, a revoked
or expired key sent back to the login with a clear message, and the strict security headers."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx

from tests.browser.conftest import LiveServer, login, shot
from tests.support.clock import move_key_clock_on


def test_the_page_is_served_with_a_strict_content_security_policy(live: LiveServer):
    response = httpx.get(f"{live.url}/ui/")
    assert response.status_code == 200 and "<main" in response.text
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    script = httpx.get(f"{live.url}/ui/static/js/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "content-security-policy" in script.headers
    assert httpx.get(f"{live.url}/ui", follow_redirects=False).headers["location"].endswith("/ui/")
    # the API's own docs keep their (inline-script) pages without the policy
    assert "content-security-policy" not in httpx.get(f"{live.url}/docs").headers
    assert httpx.get(f"{live.url}/").json()["ui"] == "/ui/"


def test_a_wrong_key_is_refused_with_a_clear_message(page, live: LiveServer):
    page.goto(f"{live.url}/ui/")
    page.fill("#api-key", "alm_not-a-real-key")
    page.click("form.login button[type=submit]")
    status = page.locator("[data-testid=login-status]")
    status.filter(has_text="not valid").wait_for()
    assert page.evaluate("sessionStorage.length") == 0  # a refused key is not kept
    shot(page, "login-refused")


def test_an_analyst_sees_ask_and_knowledge_but_no_ops(page, live: LiveServer):
    login(page, live, "analyst")
    assert page.locator("#who").inner_text() == "analyst · analyst"
    views = page.locator("#nav a").evaluate_all("links => links.map(a => a.dataset.view)")
    assert views == ["ask", "knowledge"]
    # the key is in this tab's sessionStorage, never in the URL or a cookie
    assert live.keys["analyst"] not in page.url
    assert page.context.cookies() == []
    assert page.evaluate("Object.values(sessionStorage)") == [live.keys["analyst"]]
    # typing the ops view's address does not open it
    page.goto(f"{live.url}/ui/#/ops")
    page.wait_for_function("location.hash !== '#/ops'")
    assert page.locator("#nav a.active").get_attribute("data-view") == "ask"
    assert page.page_errors == []


def test_ops_sees_knowledge_and_ops_but_cannot_ask(page, live: LiveServer):
    login(page, live, "ops")
    views = page.locator("#nav a").evaluate_all("links => links.map(a => a.dataset.view)")
    assert views == ["knowledge", "ops"]


def test_a_revoked_key_sends_the_page_back_to_the_login_with_a_reason(page, live: LiveServer):
    key = live.key("analyst", "leaving")
    login(page, live, key)
    key_id = next(k.id for k in live.state.keys.list() if k.user == "leaving")
    live.state.keys.revoke(key_id)
    live.state.auth.forget(key_id)
    page.reload()  # the stored key is checked again, and refused
    page.locator("[data-testid=login-status]").filter(has_text="no longer accepted").wait_for()
    assert page.evaluate("sessionStorage.length") == 0
    assert page.locator("#nav a").count() == 0
    shot(page, "login-after-revocation")


def test_a_key_that_expires_while_in_use_sends_the_page_back_to_the_login(
    page, live: LiveServer, monkeypatch
):
    """The page works until the key's expiry, and its next call after it (though the server
    checked the key a moment ago and caches it) lands on the login with the reason."""
    monkeypatch.setattr(live.state.auth, "cache_s", 60.0)  # as a server that caches keys
    expires_at = datetime.now(UTC) + timedelta(minutes=10)
    _, key = live.state.keys.create(role="analyst", user="temporary", expires_at=expires_at)
    login(page, live, key)
    assert page.locator("#who").inner_text() == "temporary · analyst"
    assert live.state.auth.cached(key) is not None  # checked, and trusted for a minute
    move_key_clock_on(monkeypatch, timedelta(minutes=11))  # not a sleep: a loaded machine is slow
    page.click("#nav a[data-view=knowledge]")  # its first call is refused: back to the login
    page.locator("[data-testid=login-status]").filter(has_text="no longer accepted").wait_for()
    assert "expired or revoked" in page.locator("[data-testid=login-status]").inner_text()
    assert page.evaluate("sessionStorage.length") == 0
    assert page.locator("#nav a").count() == 0
    refused = httpx.get(f"{live.url}/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 401 and refused.json()["detail"].startswith("API key expired at")
    shot(page, "login-after-expiry")
    assert page.page_errors == []


def test_a_forged_request_from_the_pages_context_is_refused(page, live: LiveServer):
    """The page's own origin cannot do more than its key's role allows, and a request
    without the key (what another site could forge: no cookie carries it) is refused."""
    login(page, live, "analyst")
    statuses = page.evaluate(
        """async () => {
            const key = sessionStorage.getItem('almanac.apiKey');
            const asAnalyst = await fetch('/v1/jobs', {method: 'POST',
                headers: {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'},
                body: JSON.stringify({kind: 'reindex'})});
            const keys = await fetch('/v1/keys', {headers: {'Authorization': 'Bearer ' + key}});
            const noKey = await fetch('/v1/ask', {method: 'POST', credentials: 'include',
                headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({question: 'How many singers?'})});
            return [asAnalyst.status, keys.status, noKey.status];
        }"""
    )
    assert statuses == [403, 403, 401]


def test_logging_in_with_an_expired_key_says_when_it_expired(page, live: LiveServer):
    expires_at = datetime.now(UTC) + timedelta(seconds=1)
    _, key = live.state.keys.create(role="analyst", user="former", expires_at=expires_at)
    time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.2)
    page.goto(f"{live.url}/ui/")
    page.fill("#api-key", key)
    page.click("form.login button[type=submit]")
    status = page.locator("[data-testid=login-status]")
    status.filter(has_text="API key expired at").wait_for()
    assert "ask an administrator for a new key" in status.inner_text()
    assert page.evaluate("sessionStorage.length") == 0
    assert page.page_errors == []
