"""Loading a GGUF without llama.cpp's AMX weight buffers where the build has AMX."""

from __future__ import annotations

from typing import Any

import llama_cpp
import llama_cpp.llama_cpp as low_level
import pytest

from agents.llm import llamacpp_load
from agents.llm.llamacpp_load import amx_in_build, load_llama


class _RecordingLlama:
    """Stands in for ``llama_cpp.Llama``: records the default model parameters it would use."""

    def __init__(self, model_path: str, **options: Any) -> None:
        self.model_path = model_path
        self.options = options
        self.model_params = low_level.llama_model_default_params()
        self.extra_buffers = self.model_params.use_extra_bufts


_ORIGINAL_DEFAULTS = low_level.llama_model_default_params


class _StaleLlama(_RecordingLlama):
    """A llama-cpp-python that no longer reads its defaults through the module attribute."""

    def __init__(self, model_path: str, **options: Any) -> None:
        super().__init__(model_path, **options)
        self.model_params = _ORIGINAL_DEFAULTS()


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_cpp, "Llama", _RecordingLlama)


def _system_info(monkeypatch: pytest.MonkeyPatch, text: bytes) -> None:
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: text)


def test_amx_in_build_reads_llama_cpp_system_info(monkeypatch: pytest.MonkeyPatch) -> None:
    _system_info(monkeypatch, b"CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 | ")
    assert amx_in_build()
    _system_info(monkeypatch, b"CPU : AVX2 = 1 | AVX512 = 1 | REPACK = 1 | ")
    assert not amx_in_build()


def test_an_amx_build_loads_without_extra_buffers_then_restores_the_defaults(
    monkeypatch: pytest.MonkeyPatch, recording: None, caplog: pytest.LogCaptureFixture
) -> None:
    _system_info(monkeypatch, b"CPU : AVX512 = 1 | AMX_INT8 = 1 | ")
    defaults = low_level.llama_model_default_params
    with caplog.at_level("INFO", logger=llamacpp_load.__name__):
        llama = load_llama("/models/m.gguf", n_ctx=512, verbose=False)
    assert llama.extra_buffers is False
    assert llama.model_path == "/models/m.gguf"
    assert llama.options == {"n_ctx": 512, "verbose": False}
    assert low_level.llama_model_default_params is defaults
    assert low_level.llama_model_default_params().use_extra_bufts is True
    assert "AMX" in caplog.text and "/models/m.gguf" in caplog.text


def test_a_build_without_amx_keeps_llama_cpp_s_buffers(
    monkeypatch: pytest.MonkeyPatch, recording: None
) -> None:
    _system_info(monkeypatch, b"CPU : AVX2 = 1 | REPACK = 1 | ")
    assert load_llama("/models/m.gguf").extra_buffers is True


def test_weight_repack_overrides_the_build_check(
    monkeypatch: pytest.MonkeyPatch, recording: None
) -> None:
    _system_info(monkeypatch, b"CPU : AMX_INT8 = 1 | ")
    assert load_llama("/models/m.gguf", weight_repack=True).extra_buffers is True
    _system_info(monkeypatch, b"CPU : AVX2 = 1 | ")
    assert load_llama("/models/m.gguf", weight_repack=False).extra_buffers is False


def test_the_defaults_are_restored_when_loading_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(model_path: str, **_options: Any) -> None:
        raise ValueError(f"Failed to load model from file: {model_path}")

    monkeypatch.setattr(llama_cpp, "Llama", failing)
    defaults = low_level.llama_model_default_params
    with pytest.raises(ValueError, match=r"missing\.gguf"):
        load_llama("/models/missing.gguf", weight_repack=False)
    assert low_level.llama_model_default_params is defaults


def test_a_load_that_kept_the_extra_buffers_is_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(llama_cpp, "Llama", _StaleLlama)
    with caplog.at_level("WARNING", logger=llamacpp_load.__name__):
        load_llama("/models/m.gguf", weight_repack=False)
    assert "despite weight_repack=False" in caplog.text
