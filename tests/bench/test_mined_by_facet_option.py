"""``--mined-by-facet``: the bench's LLM systems retrieve mined business knowledge that only the
database facet reaches (left out by default), and the run manifest says so."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import _system_options
from bench.__main__ import main as bench_main
from bench.cli_parser import build_parser
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.bench.test_stream_mining import GEOQUERY

GEOQUERY_ARGS = ["--dataset", "geoquery", "--system", "gold", "--split", "test", "--limit", "1"]


@pytest.mark.parametrize(("flag", "expected"), [([], False), (["--mined-by-facet"], True)])
def test_the_flag_reaches_the_workspace_retriever(flag, expected):
    args = build_parser().parse_args(["run", *GEOQUERY_ARGS, *flag])
    options = _system_options(args)
    system = make_system(
        "almanac", **options, llm=ScriptedLLM([sql_reply("SELECT 1")]), embedder=HashingEmbedder()
    )
    try:
        assert system.workspace.retriever().options.mined_by_facet is expected
    finally:
        system.workspace.close()


def test_the_manifest_records_the_flag_only_when_given(tmp_path):
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY} (set ALMANAC_BENCH_DATA)")
    for flag, out in (([], "default"), (["--mined-by-facet"], "shown")):
        assert bench_main(["run", *GEOQUERY_ARGS, *flag, "--out", str(tmp_path / out)]) == 0
    manifests = {
        o: json.loads((tmp_path / o / "run.json").read_text()) for o in ("default", "shown")
    }
    assert "mined_by_facet" not in manifests["default"]
    assert manifests["shown"]["mined_by_facet"] is True
