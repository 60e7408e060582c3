"""Browser tests of the web page: a real uvicorn server over Spider's concert_singer with a
scripted model, driven by Playwright in the Chromium from Debian's packages (headless).

``make setup`` installs the ``chromium`` package and the ``playwright`` wheel (whose own browser
download is never used). Each test gets a fresh browser context (so a fresh sessionStorage);
:func:`shot` saves a screenshot of a view under :data:`ARTIFACTS` (``.artifacts/browser/``, or
``$ALMANAC_TEST_ARTIFACTS/browser``), and a failing test leaves one named after itself.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from agents.llm.base import ChatResult, Completion
from indices.embeddings import HashingEmbedder
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from perf.page import CHROMIUM_ARGS
from server.app import create_app
from server.state import AppState, build_state
from tests.agents.conftest import spider_path
from tests.agents.scripted import sql_reply
from tests.server.conftest import ROLES, make_settings
from tests.support.postgres import free_port

ARTIFACTS = Path(os.environ.get("ALMANAC_TEST_ARTIFACTS", Path(__file__).parents[2] / ".artifacts"))
ARTIFACTS = ARTIFACTS / "browser"
DEFAULT_SQL = "SELECT country, COUNT(*) AS singers FROM singer GROUP BY country ORDER BY country"


def chromium_executable() -> str:
    """Debian's Chromium (``make setup`` installs it); a clear failure when it is missing."""
    for candidate in (os.environ.get("ALMANAC_CHROMIUM"), "chromium", "chromium-browser"):
        found = candidate and shutil.which(candidate)
        if found:
            return found
    pytest.fail("Chromium is not installed: run `make setup` (it installs Debian's chromium)")


class BrowserLLM:
    """A scripted model for the page: the SQL for a question comes from ``answers`` (the
    first pattern found in the prompt's last message wins), else :data:`DEFAULT_SQL`."""

    name = "scripted"

    def __init__(self) -> None:
        self.answers: list[tuple[str, str]] = []
        self.replies: list[tuple[str, str]] = []
        self.calls = 0
        self.delay_s = 0.0
        self._lock = threading.Lock()

    def answer(self, pattern: str, sql: str) -> None:
        with self._lock:
            self.answers.insert(0, (pattern, sql))

    def reply(self, pattern: str, text: str) -> None:
        """Reply ``text`` as it is (not as SQL) to prompts matching ``pattern`` (e.g. an
        analysis plan or narrative in JSON); checked before the SQL answers."""
        with self._lock:
            self.replies.insert(0, (pattern, text))

    def chat(self, messages: Any, **options: Any) -> ChatResult:
        with self._lock:
            self.calls += 1
            answers = list(self.answers)
            replies = list(self.replies)
        if self.delay_s:
            time.sleep(self.delay_s)
        prompt = messages[-1]["content"] if messages else ""
        sql = next((s for p, s in answers if re.search(p, prompt, re.IGNORECASE)), DEFAULT_SQL)
        text = next((t for p, t in replies if re.search(p, prompt, re.IGNORECASE)), None)
        text = text if text is not None else sql_reply(sql, "scripted for the browser tests")
        n = options.get("n", 1)
        return ChatResult(
            completions=[Completion(text, "stop") for _ in range(n)],
            model=self.name,
            prompt_tokens=len(prompt) // 4,
            completion_tokens=len(text) // 4,
            latency_s=self.delay_s,
        )


class Tiers:
    default = "scripted"  # the tier questions use (what server.llm_factory.LLMTiers offers)

    def __init__(self, llm: BrowserLLM) -> None:
        self.llm = llm

    def get(self, name: str | None = None) -> BrowserLLM:
        return self.llm

    def decoded_together(self, name: str) -> int:
        return 1

    def describe(self) -> list[dict[str, Any]]:
        """The scripted model as the one tier /v1/health lists."""
        return [
            {
                "name": "default",
                "backend": "scripted",
                "model": self.llm.name,
                "base_url": None,
                "loaded": True,
            }
        ]


class LiveServer:
    """A uvicorn server in a thread, a key per role, and the scripted model."""

    def __init__(self, state: AppState, llm: BrowserLLM, port: int) -> None:
        self.state, self.llm, self.port = state, llm, port
        self.url = f"http://127.0.0.1:{port}"
        self.keys = {role: self.key(role) for role in ROLES}
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def key(self, role: str, user: str | None = None) -> str:
        _, secret = self.state.keys.create(role=role, user=user or role)
        return secret

    def start(self) -> None:
        config = uvicorn.Config(
            create_app(self.state, close_state=False),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert self._thread.is_alive(), "uvicorn stopped while starting"
            assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
            time.sleep(0.05)
        assert self.state.indices.wait_ready(30)

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(15)
            self._server = self._thread = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def crash_and_restart(self) -> None:
        """Cut every open connection (as a dying server would: streams end mid-answer
        without their final event), then restart; answers still running finish unseen."""
        server = self._server
        assert server is not None, "the server is not running"
        for connection in list(server.server_state.connections):
            connection.loop.call_soon_threadsafe(connection.transport.abort)
        server.force_exit = True
        self.restart()


@contextmanager
def concert_server(folder: Path, **overrides: Any) -> Iterator[LiveServer]:
    """concert_singer profiled into a SQLite store under ``folder`` and served with the
    scripted model; ``overrides`` go to the settings (e.g. ``confidence``)."""
    store_url = f"sqlite:///{folder / 'knowledge.db'}"
    target_url = f"sqlite:///{spider_path('concert_singer')}"
    with KnowledgeStore(store_url) as store, Database(target_url) as database:
        profile_database(
            database, store, database_name="concert_singer", options=ProfileOptions(progress=False)
        )
    llm = BrowserLLM()
    settings = make_settings(
        folder, store_url, target_url=target_url, target_name="concert_singer", **overrides
    )
    state = build_state(settings, embedder=HashingEmbedder(), llms=Tiers(llm))
    server = LiveServer(state, llm, free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        state.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """concert_singer served with the scripted model (:func:`concert_server`)."""
    with concert_server(tmp_path_factory.mktemp("browser")) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, for one test module: Playwright's sync API keeps an asyncio loop running in
    this thread while it lives, which would break the next module's ``asyncio.run``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_executable(), headless=True, args=list(CHROMIUM_ARGS)
        )
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page in a fresh context (fresh sessionStorage); screenshots on failure."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.page_errors = errors
    yield opened
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot(opened, f"FAILED-{request.node.name}")
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot of ``page`` as an artefact and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def login(page: Any, live: LiveServer, role_or_key: str) -> None:
    """Open the page and log in with the key of ``role_or_key`` (a role or a key itself)."""
    key = live.keys.get(role_or_key, role_or_key)
    page.goto(f"{live.url}/ui/")
    page.fill("#api-key", key)
    page.click("form.login button[type=submit]")
    page.wait_for_selector("#who:not(:empty)")


@pytest.fixture()
def logged_in(page: Any, live: LiveServer) -> Callable[[str], Any]:
    def log_in(role_or_key: str) -> Any:
        login(page, live, role_or_key)
        return page

    return log_in
