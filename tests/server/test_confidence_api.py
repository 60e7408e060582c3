"""Confidence over HTTP on concert_singer: an abstaining answer, feedback queueing a refit,
the calibrate job writing the deployment's calibrator and the next answer using it, and the
CLI's ``almanac kb calibrate``."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from agents.confidence.assess import describe, packaged_calibrator
from agents.confidence.calibrator import Calibrator
from indices.embeddings import HashingEmbedder
from kb.profile.profiler import ProfileOptions, profile_database
from server.cli import main
from server.job_kinds import runners_for
from server.state import build_state
from server.worker import JobWorker
from tests.agents.learn.conftest import SPIDER
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import Server, make_settings, running_server
from ukf import ExperienceUKF

DATABASE = "concert_singer"
TARGET = SPIDER / DATABASE / f"{DATABASE}.sqlite"


class OneTier:
    """One LLM tier (what ``server.llm_factory.LLMTiers`` offers)."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.default = llm, "default"

    def get(self, name: str | None = None) -> Any:
        return self.llm

    def decoded_together(self, name: str) -> int:
        return 1


@pytest.fixture()
def concert(tmp_path) -> Iterator[Any]:
    if not TARGET.is_file():
        pytest.skip(f"benchmark database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    with ExitStack() as stack:

        def start(llm: Any, **confidence: Any) -> Server:
            settings = make_settings(
                tmp_path,
                f"sqlite:///{tmp_path / 'knowledge.db'}",
                target_url=f"sqlite:///{TARGET}",
                target_name=DATABASE,
                jobs={"workers": 0},
                confidence=confidence,
            )
            state = build_state(settings, embedder=HashingEmbedder(), llms=OneTier(llm))
            server = stack.enter_context(running_server(state))
            assert state.target is not None
            options = ProfileOptions(progress=False)
            profile_database(state.target, state.store, database_name=DATABASE, options=options)
            worker = JobWorker(state.jobs, runners_for(state), poll_s=0.05)
            worker.start()
            stack.callback(worker.stop)
            return server

        yield start


def judged_answers(store: Any, right: int, wrong: int, seed: int = 0) -> None:
    """``right`` + ``wrong`` logged answers with signals and a verdict: right ones covered
    and fluent, wrong ones with unmatched words and hesitant (noisy, so a fit is needed)."""
    rng = random.Random(seed)
    entries = []
    for i in range(right + wrong):
        good = i < right
        signals = {
            "span_coverage": 1.0 if good or rng.random() < 0.3 else 0.5,
            "unmatched_content_words": 0.0 if good else float(rng.randint(0, 2)),
            "logprob_mean": rng.gauss(-0.15 if good else -0.6, 0.15),
            "samples": 1.0,
        }
        entry = ExperienceUKF.create(f"judged question {i}", "SELECT 1", database=DATABASE)
        record = {"sql": "SELECT 1", "signals": signals, "verdict": "correct" if good else "wrong"}
        resources = {**entry.content_resources, "answers": {f"a{i}": record}}
        entries.append(entry.clone(content_resources=resources))
    store.upsert_many(entries)


def test_an_unsure_answer_abstains_over_http_and_can_be_forced(concert):
    llm = ScriptedLLM([sql_reply("SELECT avg(age) FROM singer")])
    server = concert(llm, abstain_below=0.95)
    body = {"question": "What is the average salary of singers?"}
    answer = server.request("POST", "/v1/ask", "analyst", json=body).json()
    assert answer["abstained"] and answer["rows"] == [] and answer["withheld_rows"] == 1
    assert answer["sql"] == "SELECT avg(age) FROM singer"
    assert any("'salary'" in reason for reason in answer["abstention"]["reasons"])
    assert answer["signals"]["unmatched_content_words"] == 1.0
    forced = {**body, "options": {"abstain": False}}
    kept = server.request("POST", "/v1/ask", "analyst", json=forced).json()
    assert not kept["abstained"] and kept["rows"] and kept["abstention"] is None


def test_feedback_queues_a_refit_and_the_job_writes_the_calibrator_the_next_answer_uses(
    concert, tmp_path: Path
):
    llm = ScriptedLLM([sql_reply("SELECT count(*) FROM singer")])
    server = concert(llm, refit_every=2)
    state = server.state
    judged_answers(state.store, right=40, wrong=30)
    first = server.request("POST", "/v1/ask", "analyst", json={"question": "How many singers?"})
    before = first.json()
    assert before["calibrator"].split()[0] in ("logistic", "prior")  # the packaged one
    for verdict in ("correct", "correct"):
        reply = server.request(
            "POST", f"/v1/answers/{before['id']}/feedback", "analyst", json={"verdict": verdict}
        )
        assert reply.status_code == 200, reply.text
    jobs = server.request("GET", "/v1/jobs", "ops", params={"kind": "calibrate"}).json()
    (queued,) = jobs["items"]
    assert state.jobs.get(queued["id"]).submitter["user"] == "calibrate-hook"
    job = server.wait_job(queued["id"])
    assert job["state"] == "succeeded", job
    assert job["result"]["written"] and job["result"]["answers"] == 71
    saved = Calibrator.load(tmp_path / "calibrator.json")
    # the packaged calibrator's recordings (if it names any) are fitted on beside the 71
    recorded = job["result"]["packaged"]
    names = packaged_calibrator().recordings
    pooled = bool(names)
    assert (recorded > 0) == pooled and saved.recordings == names
    assert saved.source == ("deployment+recordings" if pooled else "deployment")
    assert saved.method == "logistic" and saved.fitted_on.examples == 71 + recorded
    after = server.request("POST", "/v1/ask", "analyst", json={"question": "How many singers?"})
    assert after.json()["calibrator"] == describe(saved)


def test_a_calibrate_job_without_enough_verdicts_writes_nothing_and_scoped_keys_are_refused(
    concert, tmp_path: Path
):
    server = concert(ScriptedLLM([sql_reply("SELECT 1")]))
    judged_answers(server.state.store, right=5, wrong=2)
    submit = {"kind": "calibrate", "params": {}}
    job = server.wait_job(server.request("POST", "/v1/jobs", "ops", json=submit).json()["id"])
    assert job["state"] == "succeeded" and not job["result"]["written"]
    assert "7 verified answers" in job["result"]["note"]
    assert not (tmp_path / "calibrator.json").exists()
    scoped = server.key("ops", user="w", workspace="team-a")
    refused = server.request("POST", "/v1/jobs", scoped, json=submit)
    assert refused.status_code == 403


def test_the_cli_refits_and_reports(tmp_path: Path, capsys):
    from kb.store import KnowledgeStore

    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store:
        judged_answers(store, right=30, wrong=25)
    data = ["--data-dir", str(tmp_path)]
    assert main([*data, "kb", "calibrate", "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["answers"] == 55 and not dry["written"] and dry["method"] == "logistic"
    assert main([*data, "kb", "calibrate"]) == 0
    out = capsys.readouterr().out
    assert "fitted on 55 verified answers (30 correct)" in out
    first = Calibrator.load(tmp_path / "calibrator.json")
    assert main([*data, "kb", "calibrate", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["version"] == first.version + 1


def test_the_cli_refit_fits_on_the_packaged_recordings_too(tmp_path: Path, capsys, monkeypatch):
    """The recordings the packaged calibrator names are fitted on beside the deployment's
    verdicts; unreadable ones (logged) or the setting off leave the deployment's alone."""
    import server.confidence as wiring
    from agents.confidence.recorded_answers import packaged_answers, write_recording

    rng = random.Random(3)
    rows = [
        {"id": f"b{i}", "signals": {"logprob_mean": rng.gauss(-0.2, 0.2)}, "scores": {"ex": 1.0}}
        for i in range(60)
    ]
    header = {"set": "bench", "kind": "run", "commits": ["c1"], "command": "x"}
    write_recording(tmp_path / "recordings" / "bench.jsonl.gz", header, rows)
    listed = packaged_calibrator()
    listed.recordings = ["bench.jsonl.gz"]
    monkeypatch.setattr(wiring, "packaged_calibrator", lambda: listed)
    monkeypatch.setattr(
        wiring, "packaged_answers", lambda names: packaged_answers(names, tmp_path / "recordings")
    )
    from kb.store import KnowledgeStore

    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store:
        judged_answers(store, right=30, wrong=25)
    data = ["--data-dir", str(tmp_path)]
    assert main([*data, "kb", "calibrate"]) == 0
    assert "55 verified answers (30 correct) and 60 recorded bench answers" in (
        capsys.readouterr().out
    )
    assert Calibrator.load(tmp_path / "calibrator.json").recordings == ["bench.jsonl.gz"]

    monkeypatch.setenv("ALMANAC_CONFIDENCE__REFIT_WITH_PACKAGED", "false")
    assert main([*data, "kb", "calibrate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["packaged"] == 0
    monkeypatch.delenv("ALMANAC_CONFIDENCE__REFIT_WITH_PACKAGED")
    (tmp_path / "recordings" / "bench.jsonl.gz").write_bytes(b"broken")
    assert main([*data, "kb", "calibrate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["packaged"] == 0
