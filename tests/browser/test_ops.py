"""The ops view in a real browser: a job started from the page runs to the end with its
progress, log and result shown; health; API keys for admins only, with their expiry."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from server.auth import Permission
from server.job_kinds import JobKind
from tests.browser.conftest import LiveServer, login, shot


class WaitParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: int = Field(default=600, ge=1, description="steps of 50 ms before it finishes")


def run_wait(_state: Any, context: Any, params: WaitParams) -> dict[str, Any]:
    """A job that reports its progress step by step until it ends or is cancelled."""
    for step in range(params.steps):
        context.progress(step / params.steps, f"step {step} of {params.steps}")
        time.sleep(0.05)
    return {"steps": params.steps}


@pytest.fixture()
def wait_kind(live: LiveServer) -> Iterator[str]:
    """A ``wait`` job kind (jobs:write) registered in the live server for one test: a job
    that runs long enough to be watched and cancelled from the page."""
    kind = JobKind("wait", "wait, reporting progress", WaitParams, Permission.JOBS_WRITE, run_wait)
    live.state.job_kinds["wait"] = kind
    for worker in live.state.workers:
        worker.runners["wait"] = lambda context: run_wait(
            live.state, context, WaitParams.model_validate(context.params)
        )
    yield "wait"
    del live.state.job_kinds["wait"]
    for worker in live.state.workers:
        worker.runners.pop("wait", None)


def kind_options(page: Any) -> list[str]:
    page.locator("[data-testid=job-kind] option").first.wait_for(state="attached")
    return page.locator("[data-testid=job-kind] option").evaluate_all(
        "options => options.map(o => o.value)"
    )


def tabs(page: Any) -> list[str]:
    page.locator("[role=tablist]").wait_for()
    return page.locator("[role=tab]").evaluate_all("tabs => tabs.map(t => t.dataset.tab)")


def test_a_profile_job_started_from_the_page_runs_to_done_with_progress(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/ops/jobs")
    kinds = kind_options(page)
    # ops may start every jobs:write kind, and no distill kind (the ml role's)
    assert "profile" in kinds and "reindex" in kinds
    assert not [k for k in kinds if k.startswith("distill")]
    page.select_option("[data-testid=job-kind]", "profile")
    page.fill("#p-sample_rows", "500")
    # watch every value the page's progress bars take while the job runs
    page.evaluate(
        """() => {
            window.__progress = [];
            new MutationObserver(() => {
                for (const bar of document.querySelectorAll('progress'))
                    window.__progress.push(bar.value);
            }).observe(document.body, {subtree: true, childList: true, attributes: true});
        }"""
    )
    page.click("[data-testid=start-job]")
    detail = page.locator("[data-testid=job-detail]")
    detail.locator(".badge", has_text="succeeded").wait_for(timeout=60_000)
    assert page.locator("[data-testid=job-progress]").evaluate("bar => bar.value") == 1
    assert "100%" in detail.locator(".progress-cell").inner_text()
    seen = page.evaluate("window.__progress")
    assert seen and max(seen) == 1, seen
    log = detail.locator("[data-testid=job-log]").inner_text()
    assert "submitted by ops" in log and "succeeded" in log
    result = detail.locator("[data-testid=job-result]").inner_text()
    assert "tables" in result and "4" in result and "concert_singer" in result
    job = live.state.jobs.list(kind="profile", limit=1)[0]
    assert job.state == "succeeded" and job.params == {"sample_rows": 500}
    page.locator("[data-testid=jobs-table] .badge", has_text="succeeded").first.wait_for()
    shot(page, "ops-jobs")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "ops-jobs-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    assert page.page_errors == []


def test_a_running_job_shows_its_progress_and_is_cancelled_from_the_page(
    page, live: LiveServer, wait_kind: str
):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/ops/jobs")
    assert wait_kind in kind_options(page)
    page.select_option("[data-testid=job-kind]", wait_kind)
    page.click("[data-testid=start-job]")
    detail = page.locator("[data-testid=job-detail]")
    detail.locator(".badge", has_text="running").wait_for()
    # the bar moves while it runs (the page refreshes every second)
    page.wait_for_function(
        "() => { const bar = document.querySelector('[data-testid=job-progress]');"
        " return bar && bar.value > 0.02 && bar.value < 1; }"
    )
    assert "step" in detail.locator("[data-testid=job-message]").inner_text()
    shot(page, "ops-job-running")
    page.once("dialog", lambda dialog: dialog.accept())
    detail.locator("[data-testid=cancel]").click()
    detail.locator(".badge", has_text="cancelled").wait_for(timeout=30_000)
    job = live.state.jobs.list(kind=wait_kind, limit=1)[0]
    assert job.state == "cancelled" and job.progress < 1
    assert detail.locator("[data-testid=cancel]").count() == 0
    assert page.page_errors == []


def test_a_refused_job_shows_the_apis_reason(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/ops/jobs")
    page.select_option("[data-testid=job-kind]", "import")
    page.fill("#p-path", "../outside.jsonl")
    page.click("[data-testid=start-job]")
    detail = page.locator("[data-testid=job-detail]")
    detail.locator(".badge", has_text="failed").wait_for(timeout=30_000)
    assert "outside the import folder" in detail.inner_text()
    page.select_option("[data-testid=job-kind]", "import")  # no source at all: 422 at once
    page.click("[data-testid=start-job]")
    page.locator("[data-testid=start-error]", has_text="exactly one of").wait_for()
    shot(page, "ops-job-refused")
    assert page.page_errors == []


def test_an_ml_key_is_offered_only_the_distill_kinds(page, live: LiveServer):
    login(page, live, "ml")
    page.goto(f"{live.url}/ui/#/ops")
    assert tabs(page) == ["jobs", "health"]
    kinds = kind_options(page)
    assert kinds and all(k.startswith("distill") for k in kinds), kinds


def test_health_shows_ready_with_its_details(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/ops/health")
    status = page.locator("[data-testid=health-status]")
    status.wait_for()
    assert status.inner_text() == "ready"
    health = page.locator("[data-testid=health]").inner_text()
    assert "Components" in health and "Indices" in health and "concert_singer" in health
    shot(page, "ops-health")
    page.get_by_role("button", name="Refresh").click()
    page.locator("[role=status]", has_text="Checked").wait_for()
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "ops-health-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    assert page.page_errors == []


def test_ops_has_no_keys_tab_even_by_address(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/ops")
    assert tabs(page) == ["jobs", "health"]
    page.goto(f"{live.url}/ui/#/ops/keys")
    page.locator("#toast", has_text="cannot open keys").wait_for()
    assert page.locator("[role=tab][aria-selected=true]").get_attribute("data-tab") == "jobs"
    assert page.locator("[data-testid=keys]").count() == 0


def test_an_admin_creates_and_revokes_a_key(page, live: LiveServer):
    login(page, live, "admin")
    page.goto(f"{live.url}/ui/#/ops")
    assert tabs(page) == ["jobs", "health", "keys"]
    # the tabs are keyboard-usable: arrows move, Enter opens
    page.locator("[role=tab][data-tab=jobs]").focus()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.locator("[data-testid=keys-table]").wait_for()
    page.fill("#key-user", "temp-analyst")
    page.select_option("#key-role", "analyst")
    page.fill("#key-label", "browser test")
    page.click("[data-testid=create-key]")
    secret = page.locator("[data-testid=new-secret]").input_value()
    assert secret.startswith("alm_")
    me = httpx.get(f"{live.url}/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["user"] == "temp-analyst"
    row = page.locator("[data-testid=keys-table] tr", has_text="temp-analyst")
    row.wait_for()
    shot(page, "ops-keys-created")
    page.get_by_role("button", name="Done, hide it").click()
    assert page.locator("[data-testid=new-secret]").count() == 0  # shown once only
    assert secret not in page.content()

    dialogs: list[str] = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    row.locator("[data-testid=revoke]").click()
    page.locator("[data-testid=keys-table] tr", has_text="temp-analyst").wait_for(state="detached")
    assert "temp-analyst" in dialogs[0]
    refused = httpx.get(f"{live.url}/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert refused.status_code == 401
    page.check("#keys-revoked")
    page.locator("[data-testid=keys-table] tr", has_text="temp-analyst").locator(
        ".badge", has_text="revoked"
    ).wait_for()
    shot(page, "ops-keys")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "ops-keys-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    assert page.page_errors == []


def test_an_admin_sees_when_keys_expire_and_makes_one_that_expires(page, live: LiveServer):
    soon = datetime.now(UTC) + timedelta(seconds=1)
    live.state.keys.create(role="analyst", user="short-lived", expires_at=soon)
    live.state.keys.create(role="ml", user="yearly", expires_at=soon + timedelta(days=365))
    time.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.1)
    login(page, live, "admin")
    page.goto(f"{live.url}/ui/#/ops/keys")
    table = page.locator("[data-testid=keys-table]")
    table.wait_for()
    headers = table.locator("th").all_inner_texts()
    expires = headers.index("Expires")
    cell = lambda user: table.locator("tr", has_text=user).locator("td").nth(expires)  # noqa: E731
    assert cell("short-lived").locator(".badge.bad", has_text="expired").count() == 1
    yearly = cell("yearly").inner_text()
    assert yearly and "expired" not in yearly and yearly != "never"
    admin_id = next(k.id for k in live.state.keys.list() if k.user == "admin")
    assert cell(admin_id).inner_text() == "never"
    # an expired key can still be revoked (it stays listed until it is)
    assert table.locator("tr", has_text="short-lived").locator("[data-testid=revoke]").count() == 1

    page.fill("#key-user", "contractor")
    page.select_option("#key-role", "analyst")
    page.fill("#key-expires", "30")
    page.click("[data-testid=create-key]")
    page.locator("[data-testid=new-key-expiry]", has_text="It expires").wait_for()
    secret = page.locator("[data-testid=new-secret]").input_value()
    made = next(k for k in live.state.keys.list() if k.user == "contractor")
    assert made.expires_at is not None
    assert timedelta(days=29, hours=23) < made.expires_at - datetime.now(UTC) <= timedelta(days=30)
    assert httpx.get(f"{live.url}/v1/me", headers={"Authorization": f"Bearer {secret}"}).is_success
    cell("contractor").wait_for()
    assert "expired" not in cell("contractor").inner_text()
    shot(page, "ops-keys-expiry")
    page.get_by_role("button", name="Done, hide it").click()
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "ops-keys-expiry-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    assert page.page_errors == []
