"""The lines ``almanac serve`` prints while it warms up: one as each component settles, then
that it is ready (only once uvicorn listens) or that it is up but degraded."""

from __future__ import annotations

import threading
import time

from server.cli_server import announce_readiness
from server.readiness import INDICES, PREFILL, Phase, Readiness
from tests.server.test_readiness import DEFAULT, wait_until


def test_serve_says_each_component_as_it_settles_then_that_it_is_ready():
    readiness = Readiness()
    for name in (INDICES, DEFAULT, PREFILL):
        readiness.add(name)
    listening = threading.Event()
    lines: list[str] = []
    announcing = threading.Thread(
        target=announce_readiness,
        args=(readiness, "http://127.0.0.1:8421", listening, lines.append),
    )
    announcing.start()
    wait_until(lambda: bool(lines), "the warming-up line")
    assert lines[0] == (
        "Almanac is warming up: indices, model default, prompt prefill "
        "(a question asked meanwhile waits for them)"
    )
    for name in (INDICES, DEFAULT, PREFILL):
        readiness.mark(name, Phase.WARMING)
        readiness.mark(name, Phase.READY)
    wait_until(lambda: len(lines) == 4, "a line per component")
    assert lines[1].startswith("Almanac: indices built (") and lines[1].endswith(" s after start)")
    assert lines[2].startswith("Almanac: model default loaded (")
    assert lines[3].startswith("Almanac: prompt prefill done (")
    time.sleep(0.05)
    assert len(lines) == 4  # not ready before uvicorn listens
    listening.set()
    announcing.join(10)
    assert lines[-1].startswith(
        "Almanac is ready on http://127.0.0.1:8421 (indices, models and prompt prefill warm, "
    )
    assert lines[-1].endswith(" s after start)") and len(lines) == 5


def test_serve_says_when_it_is_degraded():
    readiness = Readiness()
    listening = threading.Event()
    listening.set()
    lines: list[str] = []
    readiness.mark(INDICES, Phase.READY)
    readiness.mark(DEFAULT, Phase.FAILED, "FileNotFoundError: no model.gguf")
    readiness.mark(PREFILL, Phase.SKIPPED, "the model failed")
    announce_readiness(readiness, "http://h:1", listening, lines.append)
    assert "Almanac: model default failed (" in lines[1] and "no model.gguf" in lines[1]
    assert lines[-1].startswith("Almanac is up on http://h:1 but degraded: model default failed")
