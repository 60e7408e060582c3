"""What the LLM systems under benchmark share: models, a knowledge store, prepared databases.

``AgentWorkspace`` owns one knowledge store (SQLite in a temporary folder unless given) that
holds every benchmark database's profile; a database is profiled the first time one of its
questions comes, and a knowledge pack lying beside its SQLite file (``knowledge.jsonl``, as
AutoFin writes it) is imported then. With ``data_dictionary=True`` a data dictionary shipped
by the benchmark (Spider's ``tables.json``, found in the folders above the SQLite file) is
applied too (:mod:`kb.dictionary`): its natural-language table and column names become
descriptions and synonyms of the database's entries. Models are loaded once per process and
optionally wrapped in the response cache (``agents.llm.cache``) so reruns cost nothing.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.models import DEFAULT_MODEL, TEST_MODEL, default_data_dir, get_model, pull
from agents.llm.prompt_cache import PromptStateCache, cache_folder
from bench.datasets import Example
from indices.embeddings import Embedder, shared_minilm
from indices.index_set import IndexSet
from indices.retriever import RetrievalOptions, Retriever
from kb.dictionary import DataDictionary, DictionaryError, apply_dictionary, read_dictionary
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF

log = logging.getLogger(__name__)
KNOWLEDGE_PACK = "knowledge.jsonl"
DATA_DICTIONARY = "tables.json"
DICTIONARY_LEVELS = 3  # database/<db>/<db>.sqlite: tables.json is three folders up
_LLMS: dict[tuple[str, str | None, str | None], LLM] = {}
_LLMS_LOCK = threading.Lock()


@dataclass
class ModelChoice:
    """Where the benchmark's models come from.

    Attributes:
        model: the default (large) model: a packaged name or a GGUF path.
        small_model: the small cascade tier.
        small_temperature: its sampling temperature (None: the pipeline's).
        small_max_tokens: its completion budget (None: the pipeline's).
        data_dir: where packaged models are cached.
        llm_cache: response cache file (None: no cache).
        threads: llama.cpp threads (None: its default).
        prompt_cache: folder of llama.cpp context states (None: none).
    """

    model: str = DEFAULT_MODEL
    small_model: str = TEST_MODEL
    small_temperature: float | None = None
    small_max_tokens: int | None = None
    small_samples: int = 2  # the cascade's small tier draws up to this many
    data_dir: Path | None = None
    llm_cache: Path | None = None
    threads: int | None = None
    prompt_cache: Path | None = None
    sequences: int = 1  # replies decoded together (LlamaCppLLM parallel_sequences)


OPENAI_PREFIX = "openai:"


def load_llm(name_or_path: str, choice: ModelChoice) -> LLM:
    """One model per (file or endpoint, cache) per process: a packaged name or a GGUF path is
    loaded in process; ``openai:NAME@URL`` is the model NAME of the OpenAI-compatible server
    at URL (vLLM, the llama.cpp server, Ollama), asked with the reply prefilled as those
    servers continue it."""
    if name_or_path.startswith(OPENAI_PREFIX):
        return _endpoint_llm(name_or_path, choice)
    path = _model_file(name_or_path, choice.data_dir)
    key = (
        str(path),
        str(choice.llm_cache) if choice.llm_cache else None,
        str(choice.prompt_cache) if choice.prompt_cache else None,
        choice.sequences,
    )
    with _LLMS_LOCK:
        if key not in _LLMS:
            states = None
            if choice.prompt_cache is not None:
                folder = cache_folder(choice.prompt_cache, str(path), 8192, choice.sequences)
                states = PromptStateCache(folder)
            llm: LLM = LlamaCppLLM(
                str(path),
                n_ctx=8192,
                n_threads=choice.threads,
                prompt_cache=states,
                parallel_sequences=choice.sequences,
            )
            _LLMS[key] = _cached(llm, choice)
        return _LLMS[key]


def _endpoint_llm(spec: str, choice: ModelChoice) -> LLM:
    name, at, url = spec[len(OPENAI_PREFIX) :].partition("@")
    if not name or not at or not url.startswith(("http://", "https://")):
        raise ValueError(f"expected openai:NAME@http(s)://HOST/v1, got {spec!r}")
    key = (spec, str(choice.llm_cache) if choice.llm_cache else None, None, choice.sequences)
    with _LLMS_LOCK:
        if key not in _LLMS:
            from agents.llm.openai_compat import OpenAICompatibleLLM

            llm: LLM = OpenAICompatibleLLM(url, name, timeout=600.0, prefill=True)
            _LLMS[key] = _cached(llm, choice)
        return _LLMS[key]


def _cached(llm: LLM, choice: ModelChoice) -> LLM:
    """``llm`` behind the response cache when ``choice`` names one."""
    if choice.llm_cache is None:
        return llm
    from agents.llm.cache import CachedLLM

    return CachedLLM(llm, choice.llm_cache)


def _model_file(name_or_path: str, data_dir: Path | None) -> Path:
    if Path(name_or_path).suffix == ".gguf":
        return Path(name_or_path)
    get_model(name_or_path)  # a clear error for unknown names
    return pull(name_or_path, data_dir or default_data_dir(), progress=False)


class AgentWorkspace:
    """Profiles benchmark databases into one store and keeps their connections."""

    def __init__(
        self,
        store_url: str | None = None,
        embedder: Embedder | None = None,
        *,
        data_dictionary: bool = False,
        knowledge_pack: bool = True,
        knowledge_files: tuple[Path, ...] = (),
        retrieval: RetrievalOptions | None = None,
    ) -> None:
        self.data_dictionary, self.knowledge_pack = data_dictionary, knowledge_pack
        self.retrieval = retrieval
        self.knowledge_files = knowledge_files
        self._dictionaries: dict[Path, DataDictionary] = {}
        if store_url is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="almanac-bench-")
            store_url = f"sqlite:///{Path(self._tmp.name) / 'knowledge.db'}"
        self.store = KnowledgeStore(store_url)
        self.embedder = embedder or shared_minilm()
        self.databases: dict[str, Database] = {}
        self._indices: IndexSet | None = None
        self._lock = threading.Lock()

    def database(self, example: Example) -> Database:
        """The example's database, profiled (and its knowledge pack imported) on first use."""
        if not example.database_url:
            raise ValueError(f"example {example.id} has no database_url")
        return self.prepare(example.database, example.database_url)

    def prepare(self, name: str, url: str) -> Database:
        """Database ``name`` at ``url``, profiled and with its knowledge pack, once; the
        ``knowledge_files`` (UKF JSONL, e.g. knowledge extracted from documents) are imported
        after the first database is profiled."""
        with self._lock:
            if name not in self.databases:
                database = Database(url)
                profile_database(
                    database, self.store, database_name=name, options=ProfileOptions(progress=False)
                )
                if self.knowledge_pack:
                    self._import_pack(url)
                if not self.databases:
                    for path in self.knowledge_files:
                        count = self.store.import_jsonl(path)
                        log.info("imported %d knowledge entries from %s", count, path)
                if self.data_dictionary:
                    self._apply_dictionary(name, url)
                self.databases[name] = database
            return self.databases[name]

    @property
    def indices(self) -> IndexSet:
        """The indices over the store, as the server builds them (built after the first
        database is ready; each question's retrieval brings them up to the store)."""
        with self._lock:
            if self._indices is None:
                self._indices = IndexSet.build(self.store, self.embedder)
            return self._indices

    def retriever(self) -> Retriever:
        """A fused retriever over :attr:`indices` with the workspace's retrieval options
        (``None``: the retriever's defaults); pipelines take this method as their factory."""
        return self.indices.retriever(self.retrieval)

    def learn(self, example: Example, sql: str) -> ExperienceUKF:
        """Store ``example`` with ``sql`` (its gold) as a labeled experience; return it."""
        experience = ExperienceUKF.create(
            example.question,
            sql,
            database=example.database,
            context=example.context,
            labeled=True,
            creator="benchmark",
            content_resources={"example": example.id},
        )
        self.store.upsert(experience)
        return experience

    def log_question(self, example: Example) -> ExperienceUKF:
        """Store ``example``'s question alone (no SQL, gold or other) as an unlabeled
        experience, as the server logs a question; return it. Its SQL is what an unlabeled
        miner's vote gives it later (``--learn-unlabeled``)."""
        database = self.database(example)
        experience = ExperienceUKF.create(
            example.question,
            None,
            database=example.database,
            context=example.context,
            dialect=database.dialect,
            creator="benchmark",
            content_resources={"example": example.id},
        )
        self.store.upsert(experience)
        return experience

    def _import_pack(self, url: str) -> None:
        database = make_url(url).database
        if not database:
            return
        pack = Path(database).parent / KNOWLEDGE_PACK
        if pack.exists():
            count = self.store.import_jsonl(pack)
            log.info("imported %d knowledge entries from %s", count, pack)

    def _apply_dictionary(self, name: str, url: str) -> None:
        """Apply the benchmark's ``tables.json`` records about database ``name``, if any."""
        database = make_url(url).database
        if not database:
            return
        folders = Path(database).resolve().parents
        for folder in list(folders)[:DICTIONARY_LEVELS]:
            path = folder / DATA_DICTIONARY
            if not path.exists():
                continue
            if path not in self._dictionaries:
                self._dictionaries[path] = read_dictionary(path)
            dictionary = self._dictionaries[path]
            if name not in dictionary.databases():
                continue
            try:
                report = apply_dictionary(self.store, dictionary, database=name)
            except DictionaryError as exc:
                log.warning("data dictionary %s not applied to %s: %s", path, name, exc)
                return
            log.info("data dictionary %s on %s: %s", path, name, report.summary())
            return

    def close(self) -> None:
        if self._indices is not None:
            self._indices.stop()
        for database in self.databases.values():
            database.close()
        self.store.close()
