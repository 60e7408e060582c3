"""Two processes writing at once lose nothing."""

import multiprocessing as mp

from kb.migrations import LATEST_VERSION
from kb.store import KnowledgeStore
from ukf import KnowledgeUKF


def _writer(url: str, worker: int, batches: int, size: int, versions) -> None:
    with KnowledgeStore(url) as store:
        for batch in range(batches):
            entries = [
                KnowledgeUKF.create(f"w{worker}-b{batch}-{i}", f"content {i}", synonyms=[f"s{i}"])
                for i in range(size)
            ]
            shared = KnowledgeUKF.create("shared", f"from worker {worker}", synonyms=[f"w{worker}"])
            versions.append(store.upsert_many([*entries, shared]))


def test_two_processes_upserting_at_once_lose_nothing(store_url):
    KnowledgeStore(store_url).close()  # create the schema first, like a deployed server
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        versions = manager.list()
        workers = [
            ctx.Process(target=_writer, args=(store_url, w, 20, 50, versions)) for w in range(2)
        ]
        for proc in workers:
            proc.start()
        for proc in workers:
            proc.join(timeout=300)
        assert [proc.exitcode for proc in workers] == [0, 0]
        seen = list(versions)
    with KnowledgeStore(store_url) as store:
        assert store.count() == 2 * 20 * 50 + 1
        assert len(seen) == len(set(seen)) == 40  # every transaction got its own version
        assert store.version == max(seen)
        shared = store.search(name="shared")[0]
        assert shared.content in {"from worker 0", "from worker 1"}
        assert store.count(synonym="s4") == 40  # s4 in each of 40 batches
        assert store.count(synonym_prefix="s4") == 40 * 11  # s4, s40 ... s49


def test_opening_a_fresh_store_from_two_processes_at_once(store_url):
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        versions = manager.list()
        workers = [ctx.Process(target=_writer, args=(store_url, w, 1, 5, versions)) for w in (0, 1)]
        for proc in workers:
            proc.start()
        for proc in workers:
            proc.join(timeout=120)
        assert [proc.exitcode for proc in workers] == [0, 0]
    with KnowledgeStore(store_url) as store:
        assert store.count() == 11 and store.schema_version == LATEST_VERSION
