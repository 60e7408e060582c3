"""Bad input is refused with a clear error before any training starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from distill.checkpoints import CorruptCheckpointError
from distill.config import ConfigError, TrainConfig, load_config
from distill.dataset_files import EmptyDatasetError
from distill.train import DeviceMissingError, UnknownBaseModelError, load_records, train
from tests.distill.tiny import tiny_student

MESSAGES = [{"role": "system", "content": "Write SQL."}, {"role": "user", "content": "How many?"}]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tiny_student(
        tmp_path / "base", ["SELECT count(*) FROM singer", "How many singers?"] * 20, 300
    )


def dataset(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def row(target: str = "```sql\nSELECT count(*) FROM singer\n```") -> dict:
    return {"messages": MESSAGES, "target": target}


def test_a_typo_in_the_config_names_the_key_and_the_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("base_model: b\ndata: d\noutput_dir: o\nlearning_rat: 0.1\n")
    with pytest.raises(
        ConfigError, match=r"run.yaml: learning_rat: Extra inputs are not permitted"
    ):
        load_config(path)


def test_a_toml_config_reads_with_paths_from_its_folder(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('base_model = "b"\ndata = "d"\noutput_dir = "o"\n[lora]\nrank = 4\n')
    config = load_config(path, epochs=2)
    assert config.base_model == tmp_path / "b" and config.lora.rank == 4 and config.epochs == 2
    bad = tmp_path / "bad.toml"
    bad.write_text('base_model = "b"\ndata = "d"\noutput_dir = "o"\n[lora]\nrnk = 4\n')
    with pytest.raises(ConfigError, match=r"lora\.rnk"):
        load_config(bad)


def test_an_unknown_base_model_is_refused(tmp_path):
    config = TrainConfig(
        base_model=tmp_path / "nowhere", data=tmp_path, output_dir=tmp_path / "run"
    )
    with pytest.raises(UnknownBaseModelError, match="nowhere is not a Hugging Face model folder"):
        train(config)
    assert not (tmp_path / "run").exists()


def test_a_missing_gpu_is_refused(tmp_path, base):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    config = TrainConfig(base_model=base, data=tmp_path, output_dir=tmp_path / "run", device="cuda")
    with pytest.raises(DeviceMissingError, match="no CUDA GPU"):
        train(config)


def test_an_empty_dataset_is_refused(tmp_path, base):
    data = dataset(tmp_path / "data", [])
    config = TrainConfig(base_model=base, data=data, output_dir=tmp_path / "run")
    with pytest.raises(EmptyDatasetError, match="holds no tuple"):
        train(config)
    assert not (tmp_path / "run").exists()


def test_tuples_over_the_sequence_length_are_dropped_and_counted(tmp_path, base):
    from transformers import AutoTokenizer

    long = row("```sql\n" + "SELECT count(*) FROM singer UNION " * 40 + "SELECT 1\n```")
    data = dataset(tmp_path / "data", [row(), long, row()])
    config = TrainConfig(base_model=base, data=data, output_dir=tmp_path / "run", max_seq_len=64)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    kept, validation, dropped = load_records(config, tokenizer)
    assert len(kept) == 2 and dropped == 1 and validation == []
    only_long = dataset(tmp_path / "long", [long])
    config = config.model_copy(update={"data": only_long})
    with pytest.raises(EmptyDatasetError, match="longer than max_seq_len 64"):
        train(config)


def test_a_corrupted_checkpoint_is_a_clear_error(tmp_path, base):
    data = dataset(tmp_path / "data", [row()])
    run = tmp_path / "run"
    checkpoint = run / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    save_file({"w": torch.zeros(64)}, str(checkpoint / "adapter_model.safetensors"))
    whole = (checkpoint / "adapter_model.safetensors").read_bytes()
    (checkpoint / "adapter_model.safetensors").write_bytes(whole[: len(whole) // 2])
    config = TrainConfig(base_model=base, data=data, output_dir=run)
    with pytest.raises(
        CorruptCheckpointError, match=r"checkpoint-4: adapter_model\.safetensors is corrupt"
    ):
        train(config)
    (checkpoint / "trainer_state.json").write_text("{not json")
    with pytest.raises(CorruptCheckpointError, match=r"trainer_state\.json unreadable"):
        train(config)


def test_more_top_layers_than_the_model_has_is_refused_before_training(tmp_path, base):
    data = dataset(tmp_path / "data", [row()])
    config = TrainConfig(
        base_model=base, data=data, output_dir=tmp_path / "run", lora={"top_layers": 3}
    )
    with pytest.raises(ConfigError, match=r"lora.top_layers is 3 but base model .* has 2 layers"):
        train(config)
    assert not (tmp_path / "run").exists()
