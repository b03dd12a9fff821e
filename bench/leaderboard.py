"""The leaderboard at 5,000 models x 30 datasets x 5 seeds: page and API latency, cache misses, queries, re-ranking.

A database of its own (a fresh PostgreSQL database on ``database_server``, dropped afterwards;
a SQLite file when that is empty) is filled by :mod:`bench.leaderboard_fixture` in bulk (``COPY``):
a synthetic benchmark of ``datasets`` datasets aggregated like BLURB, ``models`` reproduced models
(``private_models`` of them private), each with per dataset a fine-tuning job, ``seeds`` runs and one
``Result``, and each model's ``Score`` and bootstrap vector as the scorer computes them. Result
vectors (8 KB each, 1.2 GB for 150,000 results) are stored where the ranking reads them
(``result_vectors``); the fill's scores are checked against ``leaderboard.score_aggregation.recompute_scores``
on ``checked_models`` models, and ranks come from the real ``leaderboard.ranking.rank_benchmark``.
Everything touching Django runs in a child process (``python -m bench.leaderboard``) configured
for that database, as the web processes are, with the Redis cache of ``cache_url`` as
``BIOLM_CACHE_URL`` sets it when deployed (a cache per process when Redis does not answer).

1. **Queries per page**: ``/leaderboard/<slug>/`` and ``/api/v1/benchmarks/<slug>/leaderboard``
   requested in-process under ``CaptureQueriesContext`` with ``small_board_models`` scored, then with
   all: the count must not grow with the models. Each is counted after a change (a cache miss:
   ``queries``) and from the cache (``cached_queries``); with every model, the render is profiled.
2. **Re-ranking after one new result** (``significance_recompute_s``): one public model lacks its
   last dataset's result. Its predictions are real: the engine fine-tunes a tiny BERT on the demo
   NER dataset beforehand; then, timed, ``workers.engine.bootstrap.resampled_values`` scores them on
   every shared resample (``vector``), the ``Result`` and its vector are stored (``store``), and at
   commit the platform's own signal rescores the model (``rescore``) and re-ranks every model of the
   benchmark (``rank``). ``rank_profile``: cProfile of one full re-ranking. Goal: under 30 s.
3. **Latency under load**: ``gunicorn biolm_site.wsgi`` as deployed (sync workers, ``DEBUG`` off,
   ``server_workers`` processes) driven by ``clients`` threads for ``page_requests`` page and
   ``api_requests`` API requests after a warm-up; p50/p95 of the per-request latencies. Goal: page
   and API p95 under 50 ms. ``miss_requests`` requests of each, every one a cache miss, give what a
   reader waits for a board built afresh after a change (``page_miss_p95_ms``, ``api_miss_p95_ms``;
   goal: under 1 s). The page shows 100 rows and the API answers 100 per page.

Writes ``var/bench/leaderboard.json``. ``others_cpu_share`` says how much of the CPU other processes
took during each timed phase (a warning above 15%: the latencies are then queueing behind them).
Absolute figures, not ratios: the goals are absolute. Smaller runs: ``--set models=1000`` and the like.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import common
from bench.harness import free_port, stop_process_group, wait_until, web_is_healthy
from bench.jobs import percentile

NAME = "leaderboard"
SLUG = "bench-board"
METRIC = "bench-f1"
DEMO_DATASET = "demo-ner"
DEMO_METRIC = "entity-f1"
GOALS = {"page_p95_ms": 50.0, "api_p95_ms": 50.0, "miss_p95_ms": 1000.0, "significance_recompute_s": 30.0}
CONTENDED_ABOVE = 0.15  # others_cpu_share over this (PostgreSQL's own work counts as other): not trustworthy


@dataclass
class Config:
    models: int = 5000
    private_models: int = 5
    datasets: int = 30
    groups: int = 6
    seeds: int = 5
    small_board_models: int = 1000  # queries per page are counted with this many models, then with all
    checked_models: int = 20  # rescored by the platform's own scorer, which must agree with the bulk fill
    result_vectors: str = "ranking"  # "ranking": only for the models rescored; "all": every result's (1.2 GB)
    clients: int = 8
    page_requests: int = 200
    api_requests: int = 200
    sequential_requests: int = 20
    miss_requests: int = 10  # one client, each a board-cache miss
    server_workers: int = 3  # as the Dockerfile and docker-compose.yml run gunicorn
    finetune_epochs: int = 5
    database_server: str = "postgres://postgres@127.0.0.1:5432"  # empty: a SQLite file
    cache_url: str = "redis://127.0.0.1:6379/14"  # the web processes' shared cache; empty: one per process

    def __post_init__(self) -> None:
        if self.result_vectors not in ("ranking", "all"):
            raise ValueError(f"result_vectors: 'ranking' or 'all', not {self.result_vectors!r}")
        if self.models < 2 or not 1 <= self.small_board_models <= self.models:
            raise ValueError("models: at least 2; small_board_models: between 1 and models")


def page_path() -> str:
    return f"/leaderboard/{SLUG}/"


def api_path() -> str:
    return f"/api/v1/benchmarks/{SLUG}/leaderboard"


# --- the parent: database, predictions, child, server, clients ----------------------------------


class Database:
    """A database of the benchmark's own: PostgreSQL on ``server`` (created and dropped here) or a SQLite file."""

    def __init__(self, server: str, folder: Path) -> None:
        self.postgres = server.startswith("postgres")
        if self.postgres:
            self.server = server.rstrip("/")
            self.name = f"biolm_bench_leaderboard_{uuid.uuid4().hex[:8]}"
            self.url = f"{self.server}/{self.name}"
        else:
            self.name = str(folder / "leaderboard.sqlite3")
            self.url = f"sqlite:///{self.name}"

    def _admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as connection:
            connection.execute(statement)

    def create(self) -> None:
        if self.postgres:
            self._admin(f'CREATE DATABASE "{self.name}"')

    def drop(self) -> None:
        if self.postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def describe(self) -> dict:
        return {"engine": "postgresql" if self.postgres else "sqlite", "name": self.name}


def environment(database_url: str, var: Path, cache_url: str = "") -> dict[str, str]:
    """The web processes' settings as deployed: DEBUG off, this database, the shared cache when there is one."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BIOLM_", "CELERY_", "DATABASE_", "DJANGO_"))},
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "BIOLM_VAR_DIR": str(var),
        "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
        "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(common.ROOT / "platform"), str(common.ROOT)]),
        **({"BIOLM_CACHE_URL": cache_url} if cache_url else {}),
    }


def reachable_cache(url: str) -> tuple[str, str]:
    """``(url, note)``: the Redis cache to use, or ``""`` (a cache per process) with why, when it does not answer."""
    if not url:
        return "", "no shared cache configured: each web process keeps its own"
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except (redis.RedisError, OSError) as exc:
        return "", f"{url} did not answer ({type(exc).__name__}): each web process keeps its own cache"
    return url, f"Redis at {url}, shared by the web processes as BIOLM_CACHE_URL sets it when deployed"


def demo_predictions(folder: Path, config: Config) -> tuple[Path, Path, float]:
    """A tiny BERT fine-tuned by the engine on the demo NER dataset: its checkpoint, results.json and seconds."""
    from transformers import BertConfig, BertForMaskedLM

    from workers.engine.vocabulary import train_wordpiece

    started = time.perf_counter()
    demo = common.ROOT / "plugins" / "datasets" / "demo"
    texts = [line for path in sorted(demo.glob("*/train.jsonl")) for line in path.read_text().splitlines()]
    checkpoint = folder / "tiny-bert"
    tokenizer = train_wordpiece(texts, 600)
    model_config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=128, max_position_embeddings=512)  # fmt: skip
    BertForMaskedLM(model_config).save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    out = folder / "finetune"
    command = [sys.executable, "-m", "workers.engine", "finetune", "--model", str(checkpoint), "--dataset",
               DEMO_DATASET, "--data_dir", str(demo / DEMO_DATASET), "--data_format", "canonical", "--grid", "single",
               "--seeds", str(config.seeds), "--epochs", str(config.finetune_epochs), "--max_length", "128",
               "--out", str(out)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join([str(common.ROOT / "platform"), str(common.ROOT)])}  # fmt: skip
    done = subprocess.run(command, cwd=common.ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the demo fine-tune failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return checkpoint, out / "results.json", time.perf_counter() - started


def run_child(env: dict[str, str], config: Config, folder: Path, checkpoint: Path, results: Path) -> dict:
    """Fill the database and measure queries and the re-ranking in a Django process of its own."""
    arguments = folder / "child.json"
    answer = folder / "child-answer.json"
    arguments.write_text(json.dumps({"config": asdict(config), "checkpoint": str(checkpoint),
                                     "results": str(results), "answer": str(answer)}))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "bench.leaderboard", str(arguments)], cwd=common.ROOT, env=env,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0 or not answer.is_file():
        raise RuntimeError(f"the leaderboard set-up failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return json.loads(answer.read_text())


class Server:
    """gunicorn as deployed, on a free port."""

    def __init__(self, env: dict[str, str], workers: int, log: Path) -> None:
        self.port = free_port()
        self.command = [sys.executable, "-m", "gunicorn", "biolm_site.wsgi:application", "--bind",
                        f"127.0.0.1:{self.port}", "--workers", str(workers), "--timeout", "120"]  # fmt: skip
        self.log = log
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command, cwd=common.ROOT, env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        wait_until(self._healthy, 90, "gunicorn to answer /healthz")

    def _healthy(self) -> bool:
        return web_is_healthy(self.process, self.port, self.log.read_text)

    def stop(self) -> None:
        stop_process_group(self.process)


def drive(port: int, path: str, requests: int, clients: int, miss: str = "") -> dict:
    """``requests`` GETs of ``path`` by ``clients`` threads at once, each on its own connection; latencies in ms.

    ``miss``: a query parameter given a value of its own in each request, so that every one misses the
    board cache and builds the board: what readers wait after a change. The page's cache keys on its
    whole query string, so ``miss`` (which the view ignores) does; the API's keys on the view, so
    ``pins`` (a pinned slug no model has, which changes no row) does.
    """
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    sizes: list[int] = []
    closed = 0
    issued = 0
    lock = threading.Lock()

    def client() -> None:
        nonlocal issued, closed
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            while True:
                with lock:
                    if issued >= requests:
                        return
                    issued += 1
                    target = f"{path}?{miss}=miss-{uuid.uuid4().hex}" if miss else path
                start = time.perf_counter()
                try:
                    connection.request("GET", target)
                    response = connection.getresponse()
                    body = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    connection.close()
                    with lock:
                        statuses[type(exc).__name__] += 1
                    continue
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    latencies.append(elapsed)
                    statuses[str(response.status)] += 1
                    sizes.append(len(body))
                    closed += response.will_close
        finally:
            connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    ok = statuses.get("200", 0) == requests
    return {
        "path": path,
        "requests": requests,
        "clients": clients,
        "statuses": dict(statuses),
        "all_ok": ok,
        "p50_ms": statistics.median(latencies) if latencies else None,
        "p95_ms": percentile(latencies, 0.95) if latencies else None,
        "mean_ms": statistics.fmean(latencies) if latencies else None,
        "max_ms": max(latencies) if latencies else None,
        "requests_per_second": len(latencies) / seconds if seconds else None,
        "seconds": seconds,
        "response_bytes": statistics.median(sizes) if sizes else None,
        "connections_closed_by_server": closed,
    }


def load(server: Server, config: Config) -> dict:
    """Warm every worker up, then the timed phases: the page and the API under ``clients``, then one client."""
    port = server.port
    warm = {
        p: drive(port, p, 2 * max(config.clients, config.server_workers), config.clients)
        for p in (page_path(), api_path())
    }
    measured: dict = {"warm_up_statuses": {p: w["statuses"] for p, w in warm.items()}, "single_client": {}}
    phases = [(measured, config.clients, config.page_requests, config.api_requests),
              (measured["single_client"], 1, config.sequential_requests, config.sequential_requests)]  # fmt: skip
    for into, clients, page_requests, api_requests in phases:
        for name, path, requests in (("page", page_path(), page_requests), ("api", api_path(), api_requests)):
            with Contention(server) as contention:
                into[name] = drive(port, path, requests, clients)
            into[name]["others_cpu_share"] = contention.others_share
    measured["cache_miss"] = {}
    for name, path, parameter in (("page", page_path(), "miss"), ("api", api_path(), "pins")):
        with Contention(server) as contention:
            measured["cache_miss"][name] = drive(port, path, config.miss_requests, 1, miss=parameter)
        measured["cache_miss"][name]["others_cpu_share"] = contention.others_share
    return measured


class Contention:
    """The share of the machine's CPU that processes other than the server and this one used meanwhile.

    Near 0 on an idle machine; the latencies under load are queueing for the cores, so a large
    share means they measure the other processes as much as the leaderboard.
    """

    def __init__(self, server: Server) -> None:
        self.server = server
        self.others_share: float | None = None

    def __enter__(self) -> Contention:
        self._machine, self._ours, self._start = common.machine_busy_s(), self._our_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        machine, ours, wall = common.machine_busy_s(), self._our_seconds(), time.perf_counter() - self._start
        if machine is not None and self._machine is not None and wall > 0:
            others = (machine - self._machine) - (ours - self._ours)
            self.others_share = max(0.0, others) / (wall * (os.cpu_count() or 1))

    def _our_seconds(self) -> float:
        times = os.times()
        pid = self.server.process.pid if self.server.process is not None else None
        return times.user + times.system + (common.process_tree_cpu_s(pid) if pid is not None else 0.0)


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    server_url = os.environ.get("BIOLM_BENCH_DATABASE_SERVER", config.database_server)
    cache_url, cache_note = reachable_cache(os.environ.get("BIOLM_BENCH_CACHE_URL", config.cache_url))
    with tempfile.TemporaryDirectory(prefix="biolm-bench-leaderboard-") as scratch:
        folder = Path(scratch)
        checkpoint, results, predictions_s = demo_predictions(folder, config)
        database = Database(server_url, folder)
        env = environment(database.url, folder / "var", cache_url)
        server = Server(env, config.server_workers, folder / "gunicorn.log")
        database.create()
        try:
            started = time.perf_counter()
            child = run_child(env, config, folder, checkpoint, results)
            setup_s = time.perf_counter() - started
            loadavg_before = os.getloadavg()[0]
            server.start()
            try:
                measured = load(server, config)
            finally:
                server.stop()
            loadavg_after = os.getloadavg()[0]
        finally:
            database.drop()
    result = _result(measured, child)
    result |= {
        "setup": {**child["setup_s"], "demo_finetune_s": predictions_s, "child_process_s": setup_s},
        "server": {"command": " ".join(["gunicorn", *server.command[3:]]), "workers": config.server_workers,
                   "debug": False, "cache": cache_note},
        "machine_load": {"cores": os.cpu_count(), "loadavg_1min_before_load": loadavg_before,
                         "loadavg_1min_after_load": loadavg_after},
        "database": database.describe(),
    }  # fmt: skip
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def _result(measured: dict, child: dict) -> dict:
    """The top-level figures, the goals they meet, and everything measured beside them."""
    page, api, miss = measured["page"], measured["api"], measured["cache_miss"]
    queries = child["queries"]
    significance = child["significance"]
    total = significance["seconds"]
    worst_miss = max((miss[name]["p95_ms"] or 0.0) for name in ("page", "api"))
    met = {
        "page_p95_under_50_ms": page["all_ok"] and page["p95_ms"] < GOALS["page_p95_ms"],
        "api_p95_under_50_ms": api["all_ok"] and api["p95_ms"] < GOALS["api_p95_ms"],
        "cache_miss_under_1_s": all(miss[n]["all_ok"] for n in miss) and worst_miss < GOALS["miss_p95_ms"],
        "significance_recompute_under_30_s": total < GOALS["significance_recompute_s"],
        "queries_per_page_constant": queries["page"]["constant"] and queries["api"]["constant"],
    }
    return {
        "name": NAME,
        "unit": "milliseconds per request (wall clock at the client); seconds for the set-up and the re-ranking",
        "p50_ms": page["p50_ms"],
        "p95_ms": page["p95_ms"],
        "queries_per_page": queries["page"]["all_models"]["queries"],
        "queries_per_page_cached": queries["page"]["all_models"]["cached_queries"],
        "queries_per_api_answer": queries["api"]["all_models"]["queries"],
        "page_miss_p50_ms": miss["page"]["p50_ms"],
        "page_miss_p95_ms": miss["page"]["p95_ms"],
        "api_miss_p95_ms": miss["api"]["p95_ms"],
        "api_p50_ms": api["p50_ms"] if api["all_ok"] else None,
        "api_p95_ms": api["p95_ms"] if api["all_ok"] else None,
        "significance_recompute_s": total,
        "significance_split_s": significance["split_s"],
        "goals": {**GOALS, "met": met},
        "warnings": warnings(measured),
        "load": measured,
        "queries": queries,
        "significance": significance,
        "rank_profile": child["rank_profile"],
        "fixture_check": child["fixture_check"],
        "data": child["data"],
    }


def warnings(measured: dict) -> list[str]:
    lines = []
    for name in ("page", "api"):
        phases = [("under load", measured[name]), ("with one client", measured["single_client"][name])]
        if name in measured["cache_miss"]:
            phases.append(("missing the cache", measured["cache_miss"][name]))
        for phase, figures in phases:
            share = figures.get("others_cpu_share")  # over a few seconds at least: the counters tick every 10 ms
            if share is not None and share > CONTENDED_ABOVE and figures["seconds"] >= 5:
                lines.append(
                    f"WARNING: other processes used {100 * share:.0f}% of the machine's CPU while the {name} was "
                    f"timed {phase}: its latencies include waiting for them; run again on an idle machine"
                )
    return lines


def summary(result: dict) -> str:
    load_, queries = result["load"], result["queries"]
    rows = []
    for name in ("page", "api"):
        figures, single = load_[name], load_["single_client"][name]
        rows.append([f"{name} ({figures['clients']} clients)", figures["requests"], figures["p50_ms"],
                     figures["p95_ms"], figures["requests_per_second"], json.dumps(figures["statuses"])])  # fmt: skip
        rows.append([f"{name} (1 client)", single["requests"], single["p50_ms"], single["p95_ms"],
                     single["requests_per_second"], json.dumps(single["statuses"])])  # fmt: skip
    for name, miss in load_["cache_miss"].items():
        rows.append([f"{name} (cache miss, 1 client)", miss["requests"], miss["p50_ms"], miss["p95_ms"],
                     miss["requests_per_second"], json.dumps(miss["statuses"])])  # fmt: skip
    data, split, setup = result["data"], result["significance_split_s"], result["setup"]
    page_q, api_q = queries["page"], queries["api"]
    met = result["goals"]["met"]
    return "\n".join(
        [
            f"{NAME}: {data['models']} models x {data['datasets']} datasets, {data['runs']:,} runs, "
            f"{result['database']['engine']}, gunicorn {result['server']['workers']} workers",
            common.table(["endpoint", "requests", "p50 ms", "p95 ms", "req/s", "statuses"], rows),
            f"queries per render (cached): page {page_q['small_board']['queries']} "
            f"({page_q['small_board']['cached_queries']}) with {page_q['small_board']['models']} models, "
            f"{page_q['all_models']['queries']} ({page_q['all_models']['cached_queries']}) with "
            f"{page_q['all_models']['models']}; API {api_q['small_board']['queries']} "
            f"({api_q['small_board']['cached_queries']}) and {api_q['all_models']['queries']} "
            f"({api_q['all_models']['cached_queries']}), status {api_q['all_models']['status']}",
            f"one new result re-ranked in {result['significance_recompute_s']:.2f} s (vector {split['vector']:.2f}, "
            f"store {split['store']:.2f}, rescore {split['rescore']:.2f}, rank {split['rank']:.2f})",
            f"set-up: fill {setup.get('fill', 0):.0f} s, ranks of all models {setup.get('rank_all_models', 0):.1f} s; "
            f"the bulk fill's scores equal recompute_scores' for {result['fixture_check']['models']} models",
            "goals: " + "; ".join(f"{name.replace('_', ' ')} {'met' if ok else 'NOT met'}" for name, ok in met.items()),
            *result["warnings"],
        ]
    )


# --- the child: Django, configured for the benchmark's database -------------------------------


def _child(arguments_path: str) -> None:
    import django

    sys.path[:0] = [str(common.ROOT / "platform"), str(common.ROOT)]
    django.setup()
    from django.core.management import call_command

    from bench import leaderboard_fixture as fixture

    arguments = json.loads(Path(arguments_path).read_text())
    config = Config(**arguments["config"])
    timings: dict[str, float] = {}
    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    if "STATIC_ROOT" not in os.environ:  # else already collected, e.g. by the test session
        call_command("collectstatic", interactive=False, verbosity=0)  # pages name the hashed files it writes
    timings["migrate"] = time.perf_counter() - started
    started = time.perf_counter()
    board = fixture.fill(config, timings)
    timings["fill"] = time.perf_counter() - started
    queries: dict = {"page": {}, "api": {}}
    small = min(config.small_board_models, config.models)
    _scores_and_ranks(board, range(small), timings, "small_board")
    _count_queries(queries, "small_board", small)
    _scores_and_ranks(board, range(small, config.models), timings, "all_models")
    _count_queries(queries, "all_models", config.models)
    for name in ("page", "api"):
        counts = queries[name]
        counts["constant"] = all(
            counts["small_board"][k] == counts["all_models"][k] for k in ("queries", "cached_queries")
        )
    checked = fixture.check_scores(board)
    data, profile = _data(config, board), _rank_profile(board)  # the board as filled, before the newcomer's result
    significance = _new_result(board, Path(arguments["checkpoint"]), Path(arguments["results"]))
    answer = {"setup_s": timings, "data": data, "queries": queries, "significance": significance,
              "fixture_check": checked, "rank_profile": profile}  # fmt: skip
    Path(arguments["answer"]).write_text(json.dumps(answer, default=str))


def _scores_and_ranks(board, indices, timings: dict[str, float], label: str) -> None:
    """Scores for the models at ``indices`` (in bulk), then the real ``rank_benchmark`` over every score so far."""
    from bench import leaderboard_fixture as fixture
    from leaderboard.ranking import rank_benchmark

    started = time.perf_counter()
    fixture.fill_scores(board, list(indices))
    timings[f"scores_{label}"] = time.perf_counter() - started
    _analyze(timings, f"analyze_{label}")
    started = time.perf_counter()
    rank_benchmark(board.benchmark)
    timings[f"rank_{label}"] = time.perf_counter() - started


def _rank_profile(board) -> list[str]:
    """The most expensive functions of one full re-ranking (cProfile, cumulative), for the note."""
    from leaderboard.ranking import rank_benchmark

    return _profiled(lambda: rank_benchmark(board.benchmark))


def _data(config: Config, board) -> dict:
    from biolm.significance import RESAMPLES
    from jobs.models import Job, Run
    from leaderboard.models import Result, ResultResamples, Score

    return {
        "models": config.models,
        "public_models": config.models - len(board.private),
        "private_models": len(board.private),
        "datasets": config.datasets,
        "groups": config.groups,
        "seeds": config.seeds,
        "resamples": RESAMPLES,
        "jobs": Job.objects.count(),
        "runs": Run.objects.count(),
        "results": Result.objects.count(),
        "result_resamples": ResultResamples.objects.count(),
        "result_vectors": config.result_vectors,
        "scores": Score.objects.filter(benchmark=board.benchmark).count(),
        "test_sizes": board.test_sizes,
        "newcomer": board.models[board.newcomer].slug,
    }


def _analyze(timings: dict[str, float], label: str) -> None:
    """PostgreSQL's planner statistics after a bulk load, as autovacuum would soon gather them in production."""
    from django.db import connection

    if connection.vendor == "postgresql":
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        timings[label] = time.perf_counter() - started


def _count_queries(queries: dict, label: str, models: int) -> None:
    """Queries and in-process time of one render (after a change, so a cache miss) and of one cached answer.

    A change is what moves the board cache's version (``leaderboard.board_cache``): here the benchmark's
    ``updated_at``, so the shared Redis cache of the web processes is left as it is. With every model
    on the board, the render is profiled too (``profile``: cProfile's top functions, cumulative).
    """
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from registry.models import Benchmark

    client = Client()
    for name, path in (("page", page_path()), ("api", api_path())):
        client.get(path)  # the first request of a process loads templates, URLs and the like
        figures: dict = {"models": models, "path": path}
        for kind in ("rendered", "cached"):
            if kind == "rendered":
                Benchmark.objects.filter(slug=SLUG).update(updated_at=timezone.now())
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(path)
                elapsed = (time.perf_counter() - started) * 1000
            prefix = "" if kind == "rendered" else "cached_"
            figures |= {
                f"{prefix}status": response.status_code,
                f"{prefix}queries": len(captured.captured_queries),
                f"{prefix}ms": elapsed,
                f"{prefix}sql": [q["sql"][:200] for q in captured.captured_queries],
            }
        figures["response_bytes"] = len(response.content)
        if label == "all_models":
            Benchmark.objects.filter(slug=SLUG).update(updated_at=timezone.now())
            figures["profile"] = _profiled(lambda path=path: client.get(path))
        if name == "api" and response.status_code == 200:  # paginated: the rows of one answer, of how many
            body = response.json()
            figures |= {"rows": len(body.get("rows", [])), "count": body.get("count")}
        queries[name][label] = figures


def _profiled(call) -> list[str]:
    """cProfile's top functions (cumulative) of one ``call()``, as lines."""
    import cProfile
    import io
    import pstats

    profile = cProfile.Profile()
    profile.runcall(call)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(15)
    return [line.rstrip() for line in text.getvalue().splitlines() if line.strip()][-17:]


def _demo_data():
    from biolm.canonical_jsonl import read_canonical_jsonl
    from biolm.dataset_io import LoadedDataset, fingerprint_of
    from biolm.plugins import collect_contributions, get_plugin_manager
    from biolm.schemas import get_schema

    spec = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets[DEMO_DATASET]
    splits = read_canonical_jsonl(common.ROOT / "plugins" / "datasets" / "demo" / DEMO_DATASET)
    splits = {
        split: [{k: v for k, v in row.items() if k != "_where"} for row in rows] for split, rows in splits.items()
    }
    schema = get_schema(spec.adapter.schema)
    labels = sorted({label for rows in splits.values() for row in rows
                     for label in schema.validate(row, "", spec.adapter.multi_label)})  # fmt: skip
    return LoadedDataset(spec, splits, labels, fingerprint_of(splits))


def _new_result(board, checkpoint: Path, results_path: Path) -> dict:
    """One job's result arrives for the model lacking one: its vector, its storage, the rescore and the ranks."""
    from django.db import transaction

    from biolm.contract import ResultsDocument
    from biolm.significance import RESAMPLES
    from jobs.models import Job, Run, canonical_key
    from leaderboard.models import Ranking, Result, Score
    from leaderboard.resamples import store_result_resamples
    from workers.engine.bootstrap import resampled_values

    model, dataset, benchmark = board.models[board.newcomer], board.last_dataset, board.benchmark
    document = ResultsDocument.from_json(json.loads(results_path.read_text()))
    results = document.to_json()
    runs = results["runs"]
    job = Job.objects.create(language_model=model, benchmark=benchmark, dataset=dataset, kind=Job.Kind.FINETUNE,
                             status=Job.Status.SUCCEEDED, spec={"kind": "finetune"}, attempts=1)  # fmt: skip
    Run.objects.bulk_create(
        Run(job=job, language_model=model, dataset=dataset, hyperparameters=run.get("hyperparameters") or {},
            hyperparameters_key=canonical_key(run.get("hyperparameters") or {}), seed=run["seed"], split="test",
            metrics={METRIC: run["metrics"]["test"][DEMO_METRIC]})
        for run in runs
    )  # fmt: skip
    before = Score.objects.get(language_model=model, benchmark=benchmark)
    test = results["test"]

    # The process that computes vectors is a long-lived worker: its first call's imports are paid once, not here.
    gold = _demo_data()
    n_test = len(gold.splits["test"])
    dataset_key = f"{DEMO_DATASET}/test/{n_test}"
    first = time.perf_counter()
    resampled_values(document, checkpoint, gold, gold, DEMO_METRIC, dataset_key, resamples=1)
    first_call_s = time.perf_counter() - first

    started = time.perf_counter()
    gold = _demo_data()
    vector = resampled_values(document, checkpoint, gold, gold, DEMO_METRIC, dataset_key)
    vectored = time.perf_counter()
    with transaction.atomic():
        result = Result.objects.create(
            language_model=model, dataset=dataset, metric=board.metric, value=test["mean"], std=test.get("std"),
            median=test.get("median"), n_seeds=test.get("n"), job=job, provenance={"seeds": [r["seed"] for r in runs]},
        )  # fmt: skip
        store_result_resamples(result, dataset_key, vector)
        stored = time.perf_counter()
    committed = time.perf_counter()  # the commit ran the platform's signal: rescore, then rank_benchmark
    ranking = Ranking.objects.get(benchmark=benchmark)
    after = Score.objects.get(language_model=model, benchmark=benchmark)
    rescore_and_rank = committed - stored
    split = {
        "vector": vectored - started,
        "store": stored - vectored,
        "rescore": max(0.0, rescore_and_rank - ranking.seconds),
        "rank": ranking.seconds,
    }
    runs_scored = len(runs) * RESAMPLES
    return {
        "seconds": committed - started,
        "split_s": split,
        "model": model.slug,
        "dataset": dataset.slug,
        "predictions": {"dataset": DEMO_DATASET, "metric": DEMO_METRIC, "test_examples": n_test, "seeds": len(runs),
                        "resamples": RESAMPLES, "value": test["mean"], "vector_mean": float(vector.mean()),
                        "first_call_s": first_call_s,
                        "microseconds_per_example_scored": 1e6 * split["vector"] / (runs_scored * n_test),
                        "vector_s_per_1000_test_examples": 1000 * split["vector"] / n_test},
        "before": {"score": before.score, "rank": before.rank, "missing": before.missing},
        "after": {"score": after.score, "rank": after.rank, "rank_basis": after.rank_basis,
                  "missing": after.missing},
        "ranking": {"models_ranked": ranking.models_ranked, "models_tested": ranking.models_tested,
                    "seconds": ranking.seconds},
    }  # fmt: skip


if __name__ == "__main__":
    _child(sys.argv[1])
