"""all-MiniLM-L6-v2 through ONNX Runtime: the same vectors as sentence-transformers, faster.

A question's embedding sits on the path of every ask; on 2 CPU cores PyTorch takes ~18 ms for
the three short texts of a question, ONNX Runtime ~6-9 ms, with vectors equal to within 1e-6
(so nothing stored needs embedding again).

The ONNX file is exported once from the packaged sentence-transformers model (nothing is
downloaded) and cached under a folder the caller chooses, named by a fingerprint of the
model's weights. The export is checked against PyTorch on padded probe batches before it is
kept. Only models made of Transformer -> mean Pooling (-> Normalize) are exported; others raise
:class:`OnnxUnsupportedError` and stay on PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

MAX_TOKENS = 256  # when the model does not say its max_seq_length
SMALL_BATCH = 8  # up to this many texts run on the query session, more on the bulk session
EXPORT_TOLERANCE = 1e-4
PROBE_TEXTS = (
    "",
    "a",
    "Nova revenue last month?",
    "[TABLE] income_nova [COLUMN] ptd_amt_usd",
    "Ünïcödé 数据 revenue!!",
    "word " * 300,
)


class OnnxUnsupportedError(RuntimeError):
    """The model cannot run through ONNX Runtime here (layout, packages or a failed check)."""


def model_fingerprint(model_dir: Path) -> str:
    """The first 16 hex digits of the sha256 of the weights and the tokenizer."""
    digest = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "tokenizer.json", "config.json"):
        path = model_dir / name
        if path.exists():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def check_layout(model_dir: Path) -> None:
    """Raise :class:`OnnxUnsupportedError` unless the model is Transformer -> mean Pooling."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        types = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling_dir = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
        pooling = json.loads((model_dir / pooling_dir / "config.json").read_text())
    except (OSError, KeyError, StopIteration, ValueError) as exc:
        raise OnnxUnsupportedError(f"{model_dir}: unreadable sentence-transformers layout") from exc
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    if types[:2] != ["Transformer", "Pooling"] or modes != ["pooling_mode_mean_tokens"]:
        raise OnnxUnsupportedError(f"{model_dir}: modules {types} with pooling {modes}")
    if not (model_dir / "tokenizer.json").exists():
        raise OnnxUnsupportedError(f"{model_dir}: no tokenizer.json")


def onnx_model_file(model_dir: Path, cache_dir: Path) -> Path:
    """The cached ONNX export of ``model_dir`` under ``cache_dir``, exported when missing."""
    check_layout(model_dir)
    target = cache_dir / f"minilm-{model_fingerprint(model_dir)}.onnx"
    if not target.exists():
        export_onnx(model_dir, target)
    return target


def export_onnx(model_dir: Path, target: Path) -> None:
    """Export the Transformer module of ``model_dir`` to ``target`` and check it.

    The graph is traced with eager attention on a padded batch, so the attention mask stays an
    input of the graph; the result is compared with PyTorch before it is moved into place.
    """
    try:
        import onnxruntime  # noqa: F401
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise OnnxUnsupportedError(f"cannot export {model_dir}: {exc}") from exc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]

    ids = torch.tensor([[101, 2023, 2003, 1037, 102], [101, 2023, 102, 0, 0]])
    probe_ids, probe_mask = tokenize(load_tokenizer(model_dir), PROBE_TEXTS)
    with torch.no_grad():  # before the export: tracing leaves the module unfit to run again
        hidden = model(
            input_ids=torch.from_numpy(probe_ids), attention_mask=torch.from_numpy(probe_mask)
        )[0].numpy()
    expected = mean_pooled(hidden, probe_mask)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(handle)
    try:
        axes = {0: "batch", 1: "tokens"}
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on the legacy exporter
            torch.onnx.export(
                LastHiddenState(model),
                (ids, (ids > 0).long()),
                scratch,
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state"],
                dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
                opset_version=17,
                dynamo=False,
            )
        runner = OnnxMiniLM(Path(scratch), model_dir, query_threads=1, bulk_threads=1)
        gap = float(np.abs(runner.encode(PROBE_TEXTS) - expected).max())
        if gap > EXPORT_TOLERANCE:
            raise OnnxUnsupportedError(f"ONNX export of {model_dir} differs from torch by {gap}")
        os.replace(scratch, target)
    except OnnxUnsupportedError:
        raise
    except Exception as exc:
        raise OnnxUnsupportedError(f"exporting {model_dir} to ONNX failed: {exc}") from exc
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    logger.info("exported %s to %s in %.1f s", model_dir, target, time.perf_counter() - started)


def load_tokenizer(model_dir: Path) -> Any:
    """The model's fast tokenizer set up as sentence-transformers uses it: truncation at
    ``max_seq_length``, padding to the longest text (``tokenizer.json`` may say otherwise:
    MiniLM's pads every text to 128 tokens)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise OnnxUnsupportedError(f"tokenizers is not installed: {exc}") from exc
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens(model_dir))
    padding = tokenizer.padding or {}
    tokenizer.enable_padding(
        pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]")
    )
    return tokenizer


def tokenize(tokenizer: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(input ids, attention mask) of ``texts``, padded to the longest."""
    encoded = tokenizer.encode_batch(list(texts))
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    return ids, mask


def max_tokens(model_dir: Path) -> int:
    """sentence-transformers' ``max_seq_length`` for the model (256 for all-MiniLM-L6-v2)."""
    try:
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        return int(config["max_seq_length"])
    except (OSError, KeyError, TypeError, ValueError):
        return MAX_TOKENS


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the unmasked token vectors, L2-normalised (a zero vector stays zero)."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class OnnxMiniLM:
    """An exported sentence-transformers model run by ONNX Runtime on CPU.

    Two sessions share the work: a question's few texts run on ``query_threads`` threads,
    bulk batches (index builds) on ``bulk_threads``. Threads do not spin while idle, so
    concurrent requests on a small machine do not burn each other's cores. Thread-safe.

    Args:
        onnx_file: from :func:`onnx_model_file`.
        model_dir: the sentence-transformers folder (for its ``tokenizer.json``).
        query_threads: threads for batches of up to ``SMALL_BATCH`` texts.
        bulk_threads: threads for larger batches (None: every core).
    """

    def __init__(
        self,
        onnx_file: Path,
        model_dir: Path,
        *,
        query_threads: int = 2,
        bulk_threads: int | None = None,
    ) -> None:
        self.onnx_file = onnx_file
        self._tokenizer = load_tokenizer(model_dir)
        self._threads = {"query": query_threads, "bulk": bulk_threads or os.cpu_count() or 1}
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()
        # a damaged file fails here, not in the middle of a request
        output = self._session("query").get_outputs()[0]
        self.dimension = int(output.shape[-1])  # (batch, tokens, hidden): the last is fixed

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dimension)`` float32 matrix of unit rows (one forward pass)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        ids, mask = tokenize(self._tokenizer, texts)
        session = self._session("query" if len(texts) <= SMALL_BATCH else "bulk")
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return mean_pooled(hidden, mask)

    def _session(self, kind: str) -> Any:
        with self._lock:
            if kind not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = self._threads[kind]
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                try:
                    self._sessions[kind] = ort.InferenceSession(
                        str(self.onnx_file), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # onnxruntime raises its own, undocumented types
                    raise OnnxUnsupportedError(f"cannot load {self.onnx_file}: {exc}") from exc
            return self._sessions[kind]
