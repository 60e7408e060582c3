"""``python -m perf.page`` (the page's speed, issue 27) run once against its own server: every
figure is measured, the cold load carries the assets and the warm one revalidates them.

The run is a process of its own, as the command is run: Playwright's sync API refuses to start
in a thread where another instance (a browser fixture of tests/browser/conftest.py) runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from perf.page import kind_of, summarise

FIGURES = ("dcl_ms", "ready_ms", "answer_ms", "html_bytes", "js_bytes", "css_bytes", "requests")


def test_requests_are_sorted_by_kind():
    base = "http://127.0.0.1:8000"
    assert kind_of(f"{base}/ui/") == "html"
    assert kind_of(f"{base}/ui/static/js/views/ask.js") == "js"
    assert kind_of(f"{base}/ui/static/css/ask.css?v=1") == "css"
    assert kind_of(f"{base}/ui/static/vendor/chart.umd.min.js") == "vendor"
    assert kind_of(f"{base}/v1/ask/stream") == "api"
    assert kind_of(f"{base}/favicon.ico") == "other"


def test_the_summary_gives_p50_and_p90_per_load():
    runs = [
        {
            load: {
                "times": {"dcl": float(i), "login": None if load == "warm" else 2.0 * i},
                "bytes": {"js": 100 * i, "requests": i},
            }
            for load in ("cold", "warm")
        }
        for i in range(1, 11)
    ]
    summary = summarise(runs)
    assert summary["cold"]["dcl_ms"] == {"p50": 5.5, "p90": 10.0}
    assert summary["cold"]["login_ms"]["p50"] == 11.0
    assert "login_ms" not in summary["warm"]
    assert summary["warm"]["js_bytes"]["p90"] == 1000
    assert summary["warm"]["requests"]["p50"] == 5.5


def test_one_run_of_the_page_benchmark(tmp_path: Path):
    out = tmp_path / "page.json"
    command = [sys.executable, "-m", "perf.page", "--runs", "1", "--warmup", "0", "--out", str(out)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    printed = ran.stdout
    assert "1 runs (after 0 not counted)" in printed
    assert all(figure in printed for figure in FIGURES), printed
    report = json.loads(out.read_text())
    cold, warm = report["runs"][0]["cold"], report["runs"][0]["warm"]
    assert min(cold["times"][name] for name in ("dcl", "login", "ready", "answer")) > 0
    assert min(warm["times"][name] for name in ("dcl", "ready", "answer")) > 0
    assert warm["times"]["login"] is None  # the key was kept: no login form
    assert min(cold["bytes"][k] for k in ("html", "js", "css", "vendor", "api")) > 0
    assert cold["bytes"]["vendor"] > 100_000  # Chart.js, whole
    assert warm["bytes"]["vendor"] < 5_000  # revalidated: 304, no body
    assert cold["bytes"]["requests"] >= 10 and warm["bytes"]["requests"] >= 10
    assert report["summary"]["cold"]["ready_ms"]["p50"] == cold["times"]["ready"]
