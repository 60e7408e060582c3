"""The ``mine`` job's gate holds the questions its candidates can affect first: on GeoQuery
with a scripted model, the job log says how many held questions say a candidate's phrase
(the question saying "NC" is held and the NC candidate fixes it)."""

from __future__ import annotations

import logging

from server.mine_gate import held_sample
from tests.agents.learn.test_gate import NC_CAPITAL, model_reading_knowledge
from tests.agents.scripted import ScriptedLLM
from tests.server.test_job_mine import (  # noqa: F401 - the fixtures
    DATABASE,
    OneTier,
    _mined,
    _submit,
    gated,
    store_url,
)


def test_the_job_log_says_how_many_held_questions_are_targeted(gated, caplog):  # noqa: F811
    caplog.set_level(logging.INFO, logger="server.mine_gate")  # as the server logs (INFO)
    server, since = gated
    server.state.llms = OneTier(ScriptedLLM([model_reading_knowledge]))  # type: ignore[assignment]
    job = server.wait_job(_submit(server, {"since_version": since, "gate": True}), timeout=120)
    assert job["state"] == "succeeded", job

    store = server.state.store
    mined = [e for e in _mined(store) if e.metadata["mining"].get("job_id") == job["id"]]
    held = held_sample(store, DATABASE, mined, 60)
    nc_capital = next(e for e in held.experiences if e.question == NC_CAPITAL)
    assert held.targeted >= 1 and nc_capital in held.experiences[: held.targeted]
    lines = [line["line"] for line in job["log"] if "saying a candidate's phrase" in line["line"]]
    assert lines[0] == (
        f"server.mine_gate: mining gate on {DATABASE}: {len(held.experiences)} held "
        f"question(s), {held.targeted} saying a candidate's phrase, for {len(mined)} "
        "candidate(s)"
    )
    assert lines[-1].endswith(
        f"on {len(held.experiences)} held ({held.targeted} saying a candidate's phrase)"
    )
    gate = job["result"]["gate"]
    assert gate["held"] == len(held.experiences) and gate["targeted"] == held.targeted
    (nc,) = [e for e in mined if e.name == "NC"]
    assert nc.id in gate["activated"] and nc_capital.id in nc.metadata["mining"]["gate"]["fixed"]
