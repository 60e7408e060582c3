"""Settings from the environment and TOML, and the LLM tiers built from them (one real
llama.cpp tier on the packaged 0.5B model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.llm.base import ChatResult, Completion, LLMBusyError, ResilientLLM
from agents.llm.models import TEST_MODEL
from server.llm_factory import LLMTiers, MeteredLLM, build_backend
from server.metrics import Metrics
from server.settings import LLMTierSettings, Settings


def test_environment_and_toml_fill_nested_settings(tmp_path, monkeypatch):
    config = tmp_path / "almanac.toml"
    config.write_text(
        'target_url = "sqlite:////data/shop.sqlite"\n'
        "port = 9000\n"
        "[limits]\nmax_body_bytes = 2048\n"
        "[jobs]\nworkers = 2\n"
        '[[llm_tiers]]\nname = "small"\nbackend = "packaged"\nmodel = "qwen2.5-coder-0.5b"\n'
        '[[llm_tiers]]\nname = "big"\nbackend = "openai"\nbase_url = "http://vllm:8000/v1"\n'
        'model = "qwen-32b"\napi_key = "sk-secret"\n'
    )
    monkeypatch.setenv("ALMANAC_CONFIG", str(config))
    monkeypatch.setenv("ALMANAC_PORT", "9100")
    monkeypatch.setenv("ALMANAC_LIMITS__RATE_PER_S", "7.5")
    settings = Settings(data_dir=tmp_path)
    assert settings.port == 9100  # the environment beats the file
    assert settings.limits.max_body_bytes == 2048 and settings.limits.rate_per_s == 7.5
    assert settings.jobs.workers == 2
    assert [t.name for t in settings.llm_tiers] == ["small", "big"]
    assert settings.llm_tiers[1].api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in repr(settings)
    assert settings.resolved_target_name == "shop"
    assert settings.resolved_import_dir == tmp_path / "imports"


def test_settings_defaults_and_bad_values(tmp_path, monkeypatch):
    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    settings = Settings(data_dir=tmp_path)
    assert settings.llm_tiers[0].backend == "packaged" and settings.target_url is None
    assert Settings(data_dir=tmp_path, target_url="postgresql://h/sales").resolved_target_name == (
        "sales"
    )
    with pytest.raises(ValidationError, match="needs 'path'"):
        LLMTierSettings(backend="gguf")
    with pytest.raises(ValidationError, match="base_url"):
        LLMTierSettings(backend="openai", model="m")
    with pytest.raises(ValidationError, match="unique"):
        Settings(data_dir=tmp_path, llm_tiers=[LLMTierSettings(), LLMTierSettings()])
    with pytest.raises(ValidationError, match="not a tier"):
        Settings(data_dir=tmp_path, describe_tier="nope")
    monkeypatch.setenv("ALMANAC_LIMITS__MAX_BODY_BYTES", "-1")
    with pytest.raises(ValidationError, match="max_body_bytes"):
        Settings(data_dir=tmp_path)


def test_the_confidence_targets_reach_the_options(tmp_path, monkeypatch):
    from server.confidence import confidence_options

    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    defaults = confidence_options(Settings(data_dir=tmp_path))
    assert (defaults.target, defaults.escalation_target) == (0.1, 0.5)
    monkeypatch.setenv("ALMANAC_CONFIDENCE__TARGET", "0.3")
    monkeypatch.setenv("ALMANAC_CONFIDENCE__ESCALATION_TARGET", "0.7")
    options = confidence_options(Settings(data_dir=tmp_path))
    assert (options.target, options.escalation_target) == (0.3, 0.7)
    monkeypatch.setenv("ALMANAC_CONFIDENCE__ESCALATION_TARGET", "1.5")
    with pytest.raises(ValidationError, match="escalation_target"):
        Settings(data_dir=tmp_path)


def test_tiers_are_built_lazily_and_named(tmp_path):
    tiers = LLMTiers(
        [
            LLMTierSettings(
                name="remote", backend="openai", base_url="http://127.0.0.1:9/v1", model="m"
            ),
            LLMTierSettings(name="file", backend="gguf", path=tmp_path / "missing.gguf"),
        ],
        tmp_path,
        Metrics(),
    )
    assert tiers.default == "remote" and tiers.loaded() == []
    remote = tiers.get()
    assert isinstance(remote, MeteredLLM) and isinstance(remote.inner, ResilientLLM)
    assert remote.name == "openai:m@http://127.0.0.1:9/v1" and tiers.get("remote") is remote
    with pytest.raises(FileNotFoundError, match=r"missing\.gguf"):
        tiers.get("file")
    with pytest.raises(KeyError, match="unknown LLM tier"):
        tiers.get("nope")
    assert [t["loaded"] for t in tiers.describe()] == [True, False]


class _Scripted:
    name = "scripted"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def chat(self, messages, **options):
        if self.fail:
            raise LLMBusyError("busy")
        return ChatResult(
            [Completion("SELECT 1")], "scripted", prompt_tokens=12, completion_tokens=3
        )


def test_llm_tokens_and_calls_are_counted_per_tier():
    metrics = Metrics()
    MeteredLLM(_Scripted(), "small", metrics).chat([{"role": "user", "content": "hi"}])
    with pytest.raises(LLMBusyError):
        MeteredLLM(_Scripted(fail=True), "small", metrics).chat([])
    text = metrics.render()
    assert 'almanac_llm_tokens_total{tier="small",kind="prompt"} 12' in text
    assert 'almanac_llm_tokens_total{tier="small",kind="completion"} 3' in text
    assert 'almanac_llm_calls_total{tier="small",outcome="ok"} 1' in text
    assert 'almanac_llm_calls_total{tier="small",outcome="busy"} 1' in text
    assert 'almanac_llm_duration_seconds_count{tier="small"} 2' in text


def _model_dir() -> Path:
    from agents.llm.models import default_data_dir

    return default_data_dir()


@pytest.mark.slow
def test_a_packaged_tier_runs_the_real_model_and_counts_its_tokens():
    metrics = Metrics()
    tier = LLMTierSettings(name="small", backend="packaged", model=TEST_MODEL, n_ctx=512)
    assert build_backend(tier, _model_dir()).name.endswith("qwen2.5-coder-0.5b-instruct.gguf")
    llm = LLMTiers([tier], _model_dir(), metrics).get()
    result = llm.chat([{"role": "user", "content": "Say OK."}], max_tokens=4)
    assert result.completions[0].text.strip()
    text = metrics.render()
    assert 'almanac_llm_calls_total{tier="small",outcome="ok"} 1' in text
    assert (
        f'almanac_llm_tokens_total{{tier="small",kind="completion"}} {result.completion_tokens}'
        in text
    )
