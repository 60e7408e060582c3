"""Registered students: exported GGUFs copied into the data dir under a name, for a tier.

``almanac distill register RUN --name NAME`` copies the run's exported ``student.gguf``
(:func:`distill.eval_inputs.student_gguf`) to ``<data_dir>/models/students/NAME/student.gguf``
beside a ``manifest.json``: the file's ``sha256`` and ``size``, the ``base_model`` (the run's
base folder and, when ``almanac distill base`` made it, the packaged model or GGUF it came
from), the ``run`` (its directory and id), the ``dataset`` (its ``manifest.json``'s SHA-256 and
the knowledge store hash it records), the adapter and dtype of the export, and ``created_at``.

A tier with ``backend = "student"`` and ``model = "NAME"`` serves it
(:mod:`server.llm_factory`): :func:`verify_student` checks the file against the manifest
before llama.cpp loads it, its size and then its SHA-256 (hashed in full at each load, a
second or two per GB, as the packaged models are hashed when assembled); a missing, changed
or truncated file is a :class:`StudentError` that names the student, the file and the
command that registers it again. The file's identity (device, inode, size, modification
time) is taken before the hash and compared after it and after llama.cpp loaded the path,
so a file replaced or rewritten in between is refused rather than served unverified.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.llm.models import file_sha256
from distill.eval_inputs import BASE_SOURCE, EXPORT_RECORD, read_run_config, student_gguf

STUDENTS_DIR = Path("models") / "students"
GGUF_FILE = "student.gguf"
MANIFEST_FILE = "manifest.json"
DATASET_MANIFEST = "manifest.json"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class StudentError(ValueError):
    """A student that cannot be registered or served (names it and the file at fault)."""


@dataclass(frozen=True)
class Student:
    """A registered student: its name, GGUF file and manifest (``error``: why the manifest
    could not be read; the manifest is then empty)."""

    name: str
    folder: Path
    manifest: dict[str, Any]
    error: str | None = None

    @property
    def gguf(self) -> Path:
        return self.folder / GGUF_FILE

    def row(self) -> dict[str, Any]:
        """One line of ``almanac distill list``."""
        base = self.manifest.get("base_model") or {}
        return {
            "name": self.name,
            "size_mb": round(int(self.manifest.get("size", 0)) / 1e6, 1),
            "sha256": str(self.manifest.get("sha256", ""))[:12],
            "base": base.get("model") or base.get("gguf") or base.get("folder"),
            "run": (self.manifest.get("run") or {}).get("id"),
            "created_at": self.manifest.get("created_at"),
            "path": str(self.gguf),
        }


def check_name(name: str) -> str:
    """``name`` when it can name a student folder (letters, digits, ``.``, ``_``, ``-``)."""
    if not NAME.fullmatch(name):
        raise StudentError(
            f"student name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def students_dir(data_dir: Path) -> Path:
    return data_dir / STUDENTS_DIR


def register(
    run_dir: Path,
    data_dir: Path,
    *,
    name: str | None = None,
    gguf: Path | None = None,
    replace: bool = False,
    link: bool = False,
) -> Student:
    """Copy (``link``: hard-link when on the same file system) the run's exported GGUF (or
    ``gguf``) into the registry as ``name`` (default: the run directory's name)."""
    run_dir = run_dir.resolve()
    source = student_gguf(run_dir, gguf)
    name = check_name(name or run_dir.name)
    folder = students_dir(data_dir) / name
    if (folder / MANIFEST_FILE).is_file() and not replace:
        raise StudentError(
            f"student {name!r} is already registered ({folder}); pass --replace to overwrite it"
        )
    manifest = _manifest(run_dir, source, name)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{GGUF_FILE}.partial-{os.getpid()}"
    try:
        _place(source, partial, link)
        sha = file_sha256(partial)
        partial.replace(folder / GGUF_FILE)
    finally:
        partial.unlink(missing_ok=True)
    manifest["sha256"], manifest["size"] = sha, (folder / GGUF_FILE).stat().st_size
    _write_json(folder / MANIFEST_FILE, manifest)
    return Student(name, folder, manifest)


def _place(source: Path, target: Path, link: bool) -> None:
    if link:
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another file system: copy
    shutil.copyfile(source, target)


def _manifest(run_dir: Path, source: Path, name: str) -> dict[str, Any]:
    config = read_run_config(run_dir)
    base_folder = Path(str(config.get("base_model", "")))
    base: dict[str, Any] = {"folder": str(base_folder)}
    if (base_folder / BASE_SOURCE).is_file():
        base.update(_read_json(base_folder / BASE_SOURCE))
    dataset: dict[str, Any] = {"folder": str(config.get("data", ""))}
    dataset_manifest = run_dir / DATASET_MANIFEST
    if dataset_manifest.is_file():
        dataset["manifest_sha256"] = file_sha256(dataset_manifest)
        dataset["store_hash"] = (_read_json(dataset_manifest).get("store") or {}).get("hash")
    export: dict[str, Any] = {"gguf": str(source.resolve())}
    if (run_dir / EXPORT_RECORD).is_file():
        record = _read_json(run_dir / EXPORT_RECORD)
        if Path(str(record.get("gguf", ""))).resolve() == source.resolve():
            export.update(record)  # its adapter and dtype: of this very file
    return {
        "name": name,
        "base_model": base,
        "run": {"id": run_dir.name, "dir": str(run_dir)},
        "full_finetune": bool(config.get("full_finetune", False)),
        "dataset": dataset,
        "export": export,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def get_student(data_dir: Path, name: str) -> Student:
    """Student ``name`` as registered (its manifest read; the file not checked)."""
    folder = students_dir(data_dir) / check_name(name)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        known = _registered_names(data_dir)
        raise StudentError(
            f"no student {name!r} is registered in {students_dir(data_dir)} "
            f"(registered: {known or 'none'}); register one with "
            f"`almanac distill register RUN --name {name}`"
        )
    return Student(name, folder, _read_json(path))


def _registered_names(data_dir: Path) -> list[str]:
    """The names with a manifest, none read (another student's bad manifest is not this)."""
    root = students_dir(data_dir)
    if not root.is_dir():
        return []
    return sorted(f.name for f in root.iterdir() if (f / MANIFEST_FILE).is_file())


def list_students(data_dir: Path) -> list[Student]:
    """Every registered student, by name (one whose manifest is unreadable carries the
    error)."""
    root = students_dir(data_dir)
    if not root.is_dir():
        return []
    students = []
    for folder in sorted(root.iterdir()):
        if not (folder / MANIFEST_FILE).is_file():
            continue
        try:  # one unreadable manifest is listed as such, not the end of the list
            students.append(Student(folder.name, folder, _read_json(folder / MANIFEST_FILE)))
        except StudentError as exc:
            students.append(Student(folder.name, folder, {}, error=str(exc)))
    return students


def verified_student(data_dir: Path, name: str) -> Path:
    """The GGUF of student ``name``, checked against its manifest: size, then SHA-256."""
    return verify_student(data_dir, name).path


@dataclass(frozen=True)
class VerifiedGGUF:
    """A student's GGUF as :func:`verify_student` hashed it: its path and the file's identity
    then (device, inode, size, modification time), to tell whether the file llama.cpp then
    opens is still the one hashed (:meth:`check_unchanged`)."""

    name: str
    path: Path
    identity: tuple[int, int, int, int]

    def check_unchanged(self) -> None:
        """:class:`StudentError` when the file was replaced or written since it was hashed."""
        now = _identity(self.path)
        if now != self.identity:
            raise StudentError(
                f"student {self.name!r}: {self.path} changed after its sha256 was checked "
                f"(was {self.identity}, now {now}: device, inode, size, mtime_ns); "
                "nothing unverified is served, load the tier again"
            )


def verify_student(data_dir: Path, name: str) -> VerifiedGGUF:
    """Student ``name``'s GGUF checked against its manifest (size, then SHA-256), with the
    file's identity taken before hashing and checked unchanged after it (a file replaced or
    written while it was hashed is refused)."""
    student = get_student(data_dir, name)
    path, expected = student.gguf, str(student.manifest.get("sha256", ""))
    again = f"register it again with `almanac distill register RUN --name {name} --replace`"
    if not path.is_file():
        raise StudentError(f"student {name!r}: its GGUF {path} is missing; {again}")
    verified = VerifiedGGUF(name, path, _identity(path))
    size = verified.identity[2]
    if size != student.manifest.get("size"):
        raise StudentError(
            f"student {name!r}: {path} has {size} bytes, its manifest says "
            f"{student.manifest.get('size')} (corrupted or truncated); {again}"
        )
    actual = file_sha256(path)
    verified.check_unchanged()
    if actual != expected:
        raise StudentError(
            f"student {name!r}: sha256 of {path} is {actual}, its manifest says {expected} "
            f"(corrupted); {again}"
        )
    return verified


def _identity(path: Path) -> tuple[int, int, int, int]:
    try:
        stat = path.stat()
    except OSError as exc:
        raise StudentError(f"{path}: {exc}") from None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StudentError(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise StudentError(f"{path} is not a JSON object")
    return value


def _write_json(path: Path, value: dict[str, Any]) -> None:
    partial = path.with_suffix(f".partial-{os.getpid()}")
    partial.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
