"""``almanac mine --labeled``: the library run from the command line, on GeoQuery."""

from __future__ import annotations

import json

from server.cli import main
from tests.agents.learn.conftest import GEOQUERY, labeled

NC_SQL = "SELECT population FROM state WHERE state_name = 'north carolina'"


def test_mine_labeled_from_the_command_line(geo, tmp_path, capsys):
    store, _db = geo
    store.upsert_many(
        [
            labeled(
                "how many people live in NC",
                "SELECT population FROM state WHERE state_name = 'north carolina'",
            ),
            labeled("how many planets are there", "SELECT COUNT(*) FROM planet"),
        ]
    )
    version = store.version
    base = ["--data-dir", str(tmp_path), "--store-url", store.url, "mine", "--labeled"]
    target = ["--db", f"sqlite:///{GEOQUERY}", "--name", "geoquery", "--json"]

    assert main([*base, *target]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mined"] == {"value_synonym": 1}
    assert report["merge"] == {"inserted": 1}
    assert [s["reason"] for s in report["skipped"]] == [
        "table(s) ['planet'] not in the profile of 'geoquery'"
    ]
    (candidate,) = report["candidate_ids"]
    assert store.get(candidate).inactive_mark

    assert main([*base, "--since", str(version), *target]) == 0
    assert json.loads(capsys.readouterr().out)["experiences"] == 0

    assert main([*base]) == 0
    assert "merge: {'merged': 1}; 0 new candidate(s)" in capsys.readouterr().out


def test_mine_with_the_gate_from_the_command_line(geo, tmp_path, capsys, monkeypatch):
    """``--gate`` with a scripted ask tier (the tiers come from the settings otherwise): the
    NC synonym is activated, the misleading seattle predicate rejected."""
    from agents.pipeline import ModelTier
    from tests.agents.learn.test_gate import GOLD, model_reading_knowledge
    from tests.agents.scripted import ScriptedLLM

    store, _db = geo
    store.upsert_many([labeled(q, sql, verified=True) for q, sql in GOLD.items()])
    version = store.version
    store.upsert_many(
        [
            labeled(
                "how many people live in NC",
                "SELECT s.population FROM state AS s WHERE s.state_name = 'north carolina'",
                verified=True,
            ),
            labeled(
                "how many people live in seattle",
                "SELECT population FROM city WHERE city_name = 'seattle'",
                verified=True,
            ),
            labeled(  # two say seattle means it: the held Miami question naming it does not
                "what is the population of seattle",
                "SELECT population FROM city WHERE city_name = 'seattle'",
                verified=True,
            ),
        ]
    )
    llm = ScriptedLLM([model_reading_knowledge])
    monkeypatch.setattr("server.cli_mine.ask_tiers", lambda _s: [ModelTier("scripted", llm)])
    monkeypatch.setenv("ALMANAC_EMBEDDER", "none")
    base = ["--data-dir", str(tmp_path), "--store-url", store.url, "mine", "--labeled"]
    since = ["--since", str(version), "--gate", "--gate-batch", "1"]

    assert main([*base, *since]) == 2  # no target: nothing to measure on
    assert "--gate needs the target database" in capsys.readouterr().out

    target = ["--db", f"sqlite:///{GEOQUERY}", "--name", "geoquery"]
    assert main([*base, *since, *target, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    gate = report["gate"]
    names = {store.get(uid).name: uid for uid in report["candidate_ids"]}
    assert names["NC"] in gate["activated"] and names["seattle"] in gate["rejected"]
    assert gate["held"] == 3 and gate["final_ex"] == 1.0 and llm.calls
    assert not store.get(names["NC"]).inactive_mark and store.get(names["seattle"]).inactive_mark


def test_the_gate_summary_says_what_changed():
    from agents.learn.gate import GateDecision, GateReport
    from server.mine_gate import summary

    decisions = [
        GateDecision(["a"], True, 0.5, 1.0, ["q1"], [], 2, 0.1),
        GateDecision(["b"], False, 1.0, 0.5, [], ["q2"], 1, 0.1),
    ]
    report = GateReport(held=2, baseline_ex=0.5, final_ex=1.0, decisions=decisions)
    lines = summary(report)
    assert lines[0].startswith("gate: 1 activated, 1 rejected on 2 held question(s); EX 0.500")
    assert lines[1:] == [
        "  activated a: EX 0.500 -> 1.000",
        "  rejected b: EX 1.000 -> 0.500, broke ['q2']",
    ]


def test_mine_unlabeled_from_the_command_line(geo, tmp_path, capsys, monkeypatch):
    """``--unlabeled`` votes with the ask tiers (scripted here: every sample agrees) and
    mines the question with trust ``unlabeled``; both flags mine labeled first."""
    from agents.confidence.assess import CalibratorSource
    from agents.pipeline import ModelTier
    from tests.agents.scripted import ScriptedLLM, ShareCalibrator, sql_reply
    from ukf import ExperienceUKF

    store, _db = geo
    question = ExperienceUKF.create(
        "how many people live in houston", database="geoquery", dialect="sqlite"
    )
    store.upsert_many([question, labeled("how many people live in NC", NC_SQL)])
    llm = ScriptedLLM([sql_reply("SELECT population FROM city WHERE city_name = 'houston'")])
    monkeypatch.setattr("server.cli_mine.ask_tiers", lambda _s: [ModelTier("scripted", llm)])
    # the vote's confidence is its share (a scripted model's signals say nothing)
    share = CalibratorSource(fallback=ShareCalibrator())  # type: ignore[arg-type]
    monkeypatch.setattr("server.confidence.calibrator_source", lambda _s: share)
    monkeypatch.setenv("ALMANAC_EMBEDDER", "none")
    base = ["--data-dir", str(tmp_path), "--store-url", store.url, "mine"]
    target = ["--db", f"sqlite:///{GEOQUERY}", "--name", "geoquery"]

    assert main([*base]) == 2
    assert "say what to mine" in capsys.readouterr().out
    assert main([*base, "--unlabeled"]) == 2  # no target: nothing to ask on
    assert "--unlabeled needs the target database" in capsys.readouterr().out

    assert main([*base, "--labeled", "--unlabeled", *target, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["miner"] == "labeled" and report["experiences"] == 1
    voted = report["unlabeled"]
    assert voted["miner"] == "unlabeled" and voted["vote"]["kept"] == 1 and llm.calls
    assert {store.get(u).metadata["mining"]["trust"] for u in voted["candidate_ids"]} == {
        "unlabeled"
    }

    assert main([*base, "--unlabeled", *target]) == 0
    out = capsys.readouterr().out
    assert "vote: 0 asked, 1 remembered; 1 kept, 0 refused (none)" in out
    assert "mined 1/1 unlabeled experiences" in out


def test_template_support_from_the_command_line(geo, tmp_path, capsys):
    """Two questions of one shape make a query template by default; ``--template-support 0``
    mines none, a support above the group's none either."""
    store, _db = geo
    store.upsert_many(
        [
            labeled(
                f"what is the population of {state}",
                f"SELECT population FROM state WHERE state_name = '{state}'",
            )
            for state in ("alaska", "texas")
        ]
    )
    base = ["--data-dir", str(tmp_path), "--store-url", store.url, "mine", "--labeled"]
    target = ["--db", f"sqlite:///{GEOQUERY}", "--name", "geoquery", "--dry-run", "--json"]
    mined = {}
    for support in (None, "3", "0"):
        extra = [] if support is None else ["--template-support", support]
        assert main([*base, *target, *extra]) == 0
        mined[support] = json.loads(capsys.readouterr().out)["mined"].get("template", 0)
    assert mined == {None: 1, "3": 0, "0": 0}
