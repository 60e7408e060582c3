"""``almanac mine --labeled``: the library run from the command line, on GeoQuery."""

from __future__ import annotations

import json

from server.cli import main
from tests.agents.learn.conftest import GEOQUERY, labeled


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
