"""The leaderboard at 1,000 models: page and API latency under load, queries per page, re-ranking after a result.

A database of its own (a fresh PostgreSQL database on ``database_server``, dropped afterwards;
a SQLite file when that is empty) is filled as the platform fills it, in bulk: a synthetic
benchmark of ``datasets`` datasets aggregated like BLURB (the mean of ``groups`` group means),
``models`` reproduced models (``private_models`` of them private), each with a fine-tuning job,
``seeds`` ``jobs.Run`` rows and one ``Result`` (mean, std over the seeds) per dataset, and each
result's ``ResultResamples`` vector of ``biolm.significance.RESAMPLES`` float64 (its value plus a
resample effect shared by every model on that dataset plus the model's own noise, as a paired
bootstrap gives). Scores, their ``ScoreResamples`` and the ranks then come from the real code,
``leaderboard.scoring.recompute_scores`` (which calls ``leaderboard.ranking.rank_benchmark``).
Everything touching Django runs in a child process (``python -m bench.leaderboard``) configured
for that database, as the web processes are.

1. **Queries per page**: ``/leaderboard/<slug>/`` and ``/api/v1/benchmarks/<slug>/leaderboard``
   requested in-process (``django.test.Client``) under ``CaptureQueriesContext``, once when only
   ``small_board_models`` models have scores and once with all of them: the count must not grow
   with the models. Boards are cached per process until what they show changes
   (``leaderboard.board_cache``), so each is counted (and timed) twice: rendered, the cache
   emptied first (``queries_per_page``), and answered from the cache (``queries_per_page_cached``).
2. **Re-ranking after one new result** (``significance_recompute_s``): one public model lacks its
   last dataset's result. Its predictions are real: the engine fine-tunes a tiny BERT on the demo
   NER dataset (``seeds`` seeds) beforehand; then, timed, ``workers.engine.bootstrap
   .resampled_values`` scores them on every shared resample (``vector``), the ``Result`` and its
   ``ResultResamples`` are stored in one transaction (``store``), and at commit the platform's
   own signal rescores the model (``rescore``: its score and ``ScoreResamples``) and re-ranks all
   models of the benchmark (``rank``, as ``Ranking.seconds`` records it). Goal: under 60 s.
3. **Latency under load**: ``gunicorn biolm_site.wsgi`` as deployed (sync workers, ``DEBUG``
   off, ``server_workers`` processes) is driven by ``clients`` threads, each with its own
   ``http.client`` connection (kept alive when the server allows; sync workers close it, so a
   request's latency includes its connection), for ``page_requests`` page and ``api_requests``
   API requests after a warm-up of every worker (which fills each worker's board cache); p50/p95
   over the per-request latencies. Goal: page p95 under 100 ms. A single client's latencies
   (``sequential_requests``) give the service time without queueing; ``miss_requests`` page
   requests, each with a query string of its own, give what a reader waits for a board rendered
   afresh (``page_miss_p95_ms``: the first reader of each worker after a change).

Writes ``var/bench/leaderboard.json`` with top-level ``p50_ms``, ``p95_ms`` (the page),
``queries_per_page``, ``api_p95_ms`` (None when the API does not answer 200) and
``significance_recompute_s``, with ``significance_split_s``, the cache-miss and cached figures
beside them. ``others_cpu_share`` says how much of the CPU other processes took during each
timed phase (a warning above 15%: the latencies are then queueing behind them). Absolute figures,
not ratios: the goals are absolute.
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
from collections import Counter, defaultdict
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
GOALS = {"page_p95_ms": 100.0, "significance_recompute_s": 60.0}
CONTENDED_ABOVE = 0.15  # others_cpu_share over this (PostgreSQL's own work counts as other): not trustworthy


@dataclass
class Config:
    models: int = 1000
    private_models: int = 5
    datasets: int = 30
    groups: int = 6
    seeds: int = 5
    small_board_models: int = 10
    clients: int = 8
    page_requests: int = 200
    api_requests: int = 200
    sequential_requests: int = 20
    miss_requests: int = 10  # one client, each a board-cache miss
    server_workers: int = 3  # as the Dockerfile and docker-compose.yml run gunicorn
    finetune_epochs: int = 5
    batch_size: int = 2000
    database_server: str = "postgres://postgres@127.0.0.1:5432"  # empty: a SQLite file


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


def environment(database_url: str, var: Path) -> dict[str, str]:
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
    }


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


def drive(port: int, path: str, requests: int, clients: int, miss: bool = False) -> dict:
    """``requests`` GETs of ``path`` by ``clients`` threads at once, each on its own connection; latencies in ms.

    ``miss``: each request with a query string of its own (``?miss=<n>``, which the view ignores but
    the board cache keys on), so every one renders the board: what readers wait after a change.
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
                    target = f"{path}?miss={uuid.uuid4().hex}" if miss else path
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
    with Contention(server) as contention:
        measured["cache_miss"] = {"page": drive(port, page_path(), config.miss_requests, 1, miss=True)}
    measured["cache_miss"]["page"]["others_cpu_share"] = contention.others_share
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
        self._machine, self._ours, self._start = _busy_seconds(), self._our_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        machine, ours, wall = _busy_seconds(), self._our_seconds(), time.perf_counter() - self._start
        if machine is not None and self._machine is not None and wall > 0:
            others = (machine - self._machine) - (ours - self._ours)
            self.others_share = max(0.0, others) / (wall * (os.cpu_count() or 1))

    def _our_seconds(self) -> float:
        times = os.times()
        pid = self.server.process.pid if self.server.process is not None else None
        return times.user + times.system + (_process_tree_seconds(pid) if pid is not None else 0.0)


def _busy_seconds() -> float | None:
    """CPU seconds the whole machine spent busy (every state of /proc/stat but idle and iowait) since boot."""
    values = common._cpu_stat()
    if values is None:
        return None
    return (sum(values[:8]) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def _process_tree_seconds(pid: int) -> float:
    """User and system CPU seconds of a process and its children (gunicorn's master and workers)."""
    total = 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for each in [pid, *map(int, children)]:
        try:
            stat = Path(f"/proc/{each}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is the state, the 3rd field of the file
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    server_url = os.environ.get("BIOLM_BENCH_DATABASE_SERVER", config.database_server)
    with tempfile.TemporaryDirectory(prefix="biolm-bench-leaderboard-") as scratch:
        folder = Path(scratch)
        checkpoint, results, predictions_s = demo_predictions(folder, config)
        database = Database(server_url, folder)
        env = environment(database.url, folder / "var")
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
    page, api = measured["page"], measured["api"]
    queries = child["queries"]
    significance = child["significance"]
    total = significance["seconds"]
    met = {
        "page_p95_under_100_ms": page["all_ok"] and page["p95_ms"] < GOALS["page_p95_ms"],
        "significance_recompute_under_60_s": total < GOALS["significance_recompute_s"],
    }
    result = {
        "name": NAME,
        "unit": "milliseconds per request (wall clock at the client); seconds for the set-up and the re-ranking",
        "p50_ms": page["p50_ms"],
        "p95_ms": page["p95_ms"],
        "queries_per_page": queries["page"]["all_models"]["queries"],
        "queries_per_page_cached": queries["page"]["all_models"]["cached_queries"],
        "page_miss_p50_ms": measured["cache_miss"]["page"]["p50_ms"],
        "page_miss_p95_ms": measured["cache_miss"]["page"]["p95_ms"],
        "api_p50_ms": api["p50_ms"] if api["all_ok"] else None,
        "api_p95_ms": api["p95_ms"] if api["all_ok"] else None,
        "significance_recompute_s": total,
        "significance_split_s": significance["split_s"],
        "goals": {**GOALS, "met": met},
        "warnings": warnings(measured),
        "load": measured,
        "queries": queries,
        "significance": significance,
        "data": child["data"],
        "setup": {**child["setup_s"], "demo_finetune_s": predictions_s, "child_process_s": setup_s},
        "server": {
            "command": " ".join(["gunicorn", *server.command[3:]]),
            "workers": config.server_workers,
            "debug": False,
        },
        "machine_load": {
            "cores": os.cpu_count(),
            "loadavg_1min_before_load": loadavg_before,
            "loadavg_1min_after_load": loadavg_after,
        },
        "database": database.describe(),
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


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
    miss = load_["cache_miss"]["page"]
    rows.append(["page (cache miss, 1 client)", miss["requests"], miss["p50_ms"], miss["p95_ms"],
                 miss["requests_per_second"], json.dumps(miss["statuses"])])  # fmt: skip
    data, split = result["data"], result["significance_split_s"]
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
            f"goals: page p95 < {GOALS['page_p95_ms']:g} ms {'met' if met['page_p95_under_100_ms'] else 'NOT met'}; "
            f"re-ranking < {GOALS['significance_recompute_s']:g} s "
            f"{'met' if met['significance_recompute_under_60_s'] else 'NOT met'}",
            *result["warnings"],
        ]
    )


# --- the child: Django, configured for the benchmark's database -------------------------------


def _child(arguments_path: str) -> None:
    import django

    sys.path[:0] = [str(common.ROOT / "platform"), str(common.ROOT)]
    django.setup()
    from django.core.management import call_command

    arguments = json.loads(Path(arguments_path).read_text())
    config = Config(**arguments["config"])
    timings: dict[str, float] = {}
    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    if "STATIC_ROOT" not in os.environ:  # else already collected, e.g. by the test session
        call_command("collectstatic", interactive=False, verbosity=0)  # pages name the hashed files it writes
    timings["migrate"] = time.perf_counter() - started
    state = _fill(config, timings)
    _analyze(timings, "analyze_after_fill")
    queries = {"page": {}, "api": {}}
    started = time.perf_counter()
    _score(state, state["models"][: config.small_board_models])
    timings["scores_small_board"] = time.perf_counter() - started
    _count_queries(queries, "small_board", config.small_board_models)
    started = time.perf_counter()
    scored = _score(state, None)
    timings["scores_and_ranks_all_models"] = time.perf_counter() - started
    _analyze(timings, "analyze_after_scores")
    _count_queries(queries, "all_models", scored)
    for name in ("page", "api"):
        counts = queries[name]
        counts["constant"] = all(
            counts["small_board"][k] == counts["all_models"][k] for k in ("queries", "cached_queries")
        )
    significance = _new_result(state, Path(arguments["checkpoint"]), Path(arguments["results"]))
    answer = {"setup_s": timings, "data": state["data"], "queries": queries, "significance": significance}
    Path(arguments["answer"]).write_text(json.dumps(answer, default=str))


def _fill(config: Config, timings: dict[str, float]) -> dict:
    """The catalogue rows, the models, and per dataset: jobs, runs, results and their resample vectors."""
    import numpy as np

    from biolm.significance import RESAMPLES
    from jobs.models import Run
    from leaderboard.models import ResultResamples

    started = time.perf_counter()
    rng = np.random.default_rng(20240)
    n_models, n_datasets, n_seeds = config.models, config.datasets, config.seeds
    catalogue = _fill_catalogue(config, rng)
    models, private, newcomer = _fill_models(config, catalogue["architecture"])
    timings["catalogue_and_models"] = time.perf_counter() - started

    # A model's true level on a dataset: the dataset's difficulty, the model's quality, their interaction.
    quality = rng.normal(0.0, 3.0, n_models)
    difficulty = rng.uniform(55.0, 88.0, n_datasets)
    true = np.clip(difficulty[None, :] + quality[:, None] + rng.normal(0.0, 1.0, (n_models, n_datasets)), 1, 99)
    seed_spread = rng.uniform(0.3, 1.5, n_datasets)
    counts: Counter[str] = Counter()
    phases: defaultdict[str, float] = defaultdict(float)
    for d, dataset in enumerate(catalogue["datasets"]):
        owners = [i for i in range(n_models) if not (i == newcomer and d == n_datasets - 1)]
        level = (true[:, d, None], seed_spread[d])
        _fill_dataset(config, rng, catalogue, dataset, int(catalogue["test_sizes"][d]), models, owners,
                      level, counts, phases)  # fmt: skip
    timings.update({f"bulk_{name}": seconds for name, seconds in phases.items()})
    data = {
        "models": n_models,
        "public_models": n_models - len(private),
        "private_models": len(private),
        "datasets": n_datasets,
        "groups": config.groups,
        "seeds": n_seeds,
        "resamples": RESAMPLES,
        "jobs": counts["jobs"],
        "runs": Run.objects.count(),
        "results": counts["results"],
        "result_resamples": ResultResamples.objects.count(),
        "test_sizes": [int(n) for n in catalogue["test_sizes"]],
        "newcomer": models[newcomer].slug,
    }
    return {"benchmark": catalogue["benchmark"], "models": models, "newcomer": models[newcomer], "data": data,
            "last_dataset": catalogue["datasets"][-1], "metric": catalogue["metric"]}  # fmt: skip


def _fill_catalogue(config: Config, rng) -> dict:
    """The task type, metric, architecture, ``config.datasets`` datasets and the benchmark grouping them.

    The benchmark aggregates as BLURB does (the mean of the group means), so scoring and ranking
    do the work they do on the real board. Draws the datasets' test sizes first from ``rng``.
    """
    from registry.models import Architecture, Benchmark, BenchmarkEntry, Dataset, Metric, TaskType

    n_datasets = config.datasets
    plugin = "bench-leaderboard"
    task = TaskType.objects.create(slug="bench-tagging", name="Tagging", plugin=plugin)
    metric = Metric.objects.create(slug=METRIC, name="F1", plugin=plugin)
    architecture = Architecture.objects.create(slug="bench-bert", name="BERT", plugin=plugin, model_type="bert")
    test_sizes = rng.integers(300, 5000, n_datasets)
    datasets = Dataset.objects.bulk_create(
        Dataset(slug=f"bench-d{d:02d}", name=f"Dataset {d:02d}", plugin=plugin, task_type=task, metric=metric,
                domain=Dataset.Domain.BIOMEDICAL, splits=[{"name": "test", "size": int(test_sizes[d]), "unit": "x"}])
        for d in range(n_datasets)
    )  # fmt: skip
    groups = [list(range(n_datasets))[g :: config.groups] for g in range(config.groups)]
    aggregation = {
        "version": "1",
        "primary": "bench-score",
        "groups": [{"slug": f"group-{g}", "name": f"Group {g}", "members": [f"d{d:02d}" for d in sorted(members)]}
                   for g, members in enumerate(groups)],
        "summaries": [{"slug": "bench-score", "name": "Bench score", "method": "mean_of_groups",
                       "members": [f"group-{g}" for g in range(config.groups)], "weights": []}],
        "show_group_scores": True,
    }  # fmt: skip
    benchmark = Benchmark.objects.create(
        slug=SLUG, name="Bench board", plugin=plugin, description="A synthetic benchmark of the leaderboard bench.",
        aggregation=aggregation, aggregation_version="1", precision=2,
    )  # fmt: skip
    BenchmarkEntry.objects.bulk_create(
        BenchmarkEntry(benchmark=benchmark, key=f"d{d:02d}", dataset=datasets[d], metric=metric,
                       label=f"D{d:02d}", position=d)
        for d in range(n_datasets)
    )  # fmt: skip
    return {"metric": metric, "architecture": architecture, "datasets": datasets, "test_sizes": test_sizes,
            "benchmark": benchmark}  # fmt: skip


def _fill_models(config: Config, architecture) -> tuple[list, set[int], int]:
    """The models, which of them are private (spread evenly, one owner), and the public newcomer.

    The newcomer is the public model left without its last dataset's result, for the re-ranking
    phase to give it one.
    """
    from django.contrib.auth.models import User

    from registry.models import LanguageModel

    n_models = config.models
    owner = User.objects.create_user("bench-owner")
    stride = max(1, n_models // max(1, config.private_models))
    private = {(i * stride + stride // 2 + 1) % n_models for i in range(config.private_models)}
    newcomer = next(i for i in range(n_models // 2, n_models) if i not in private)
    sizes = [14_000_000, 110_000_000, 340_000_000, 1_300_000_000]
    models = LanguageModel.objects.bulk_create(
        (LanguageModel(slug=f"bench-m{i:04d}", name=f"Bench model {i:04d}", architecture=architecture,
                       parameter_count=sizes[i % len(sizes)], vocabulary="PubMed WordPiece",
                       pretraining_corpus="PubMed abstracts", pretraining_domain=LanguageModel.Domain.PUBMED,
                       vocabulary_kind=LanguageModel.VocabularyKind.DOMAIN,
                       initialisation=LanguageModel.Initialisation.SCRATCH,
                       visibility=LanguageModel.Visibility.PRIVATE if i in private else LanguageModel.Visibility.PUBLIC,
                       owner=owner if i in private else None, origin=LanguageModel.Origin.REPRODUCED).fill_defaults()
         for i in range(n_models)),
        batch_size=config.batch_size,
    )  # fmt: skip
    return models, private, newcomer


def _fill_dataset(
    config: Config, rng, catalogue: dict, dataset, test_size: int, models: list, owners: list[int],
    level: tuple, counts: Counter, phases: defaultdict,
) -> None:  # fmt: skip
    """One dataset's rows for every model in ``owners``: a job, its seeds' runs, a result and its resamples.

    ``level`` is (each model's true level on this dataset, the dataset's seed spread). Each bulk
    insert's seconds add to ``phases``, so the report says which kind of row the fill spends on.
    """
    import numpy as np

    from biolm.significance import RESAMPLES
    from jobs.models import Job, Run, canonical_key
    from leaderboard.models import Result, ResultResamples
    from leaderboard.resamples import encode

    true_level, seed_spread = level
    n_models, n_seeds = len(models), config.seeds
    hyperparameters = {"learning_rate": 5e-05, "batch_size": 32, "epochs": 3}
    key = canonical_key(hyperparameters)
    seeds = [42 + s for s in range(n_seeds)]
    metric, benchmark = catalogue["metric"], catalogue["benchmark"]
    tick = time.perf_counter()
    jobs = Job.objects.bulk_create(
        (Job(language_model=models[i], benchmark=benchmark, dataset=dataset, kind=Job.Kind.FINETUNE,
             status=Job.Status.SUCCEEDED, spec={"kind": "finetune", "dataset": dataset.slug}, attempts=1)
         for i in owners),
        batch_size=config.batch_size,
    )  # fmt: skip
    per_seed = np.clip(true_level + rng.normal(0.0, 1.0, (n_models, n_seeds)) * seed_spread, 0.0, 100.0)
    phases["jobs"] += time.perf_counter() - tick
    tick = time.perf_counter()
    Run.objects.bulk_create(
        (Run(job=job, language_model=models[i], dataset=dataset, hyperparameters=hyperparameters,
             hyperparameters_key=key, seed=seed, split=Run.Split.TEST,
             metrics={METRIC: float(per_seed[i, s])})
         for job, i in zip(jobs, owners, strict=True) for s, seed in enumerate(seeds)),
        batch_size=config.batch_size,
    )  # fmt: skip
    phases["runs"] += time.perf_counter() - tick
    tick = time.perf_counter()
    results = Result.objects.bulk_create(
        (Result(language_model=models[i], dataset=dataset, metric=metric, value=float(per_seed[i].mean()),
                std=float(per_seed[i].std(ddof=1)) if n_seeds > 1 else None,
                median=float(np.median(per_seed[i])), n_seeds=n_seeds, job=job,
                provenance={"seeds": seeds}, inference_per_s=900.0)
         for job, i in zip(jobs, owners, strict=True)),
        batch_size=config.batch_size,
    )  # fmt: skip
    phases["results"] += time.perf_counter() - tick
    tick = time.perf_counter()
    # A paired bootstrap: what a resample makes easy or hard is shared by every model (its
    # standard error on a test set of this size), plus a smaller part of each model's own.
    error = 100 * np.sqrt(0.2 / test_size)
    shared = rng.normal(0.0, 0.9 * error, RESAMPLES)
    dataset_key = f"{dataset.slug}/test/{test_size}"
    ResultResamples.objects.bulk_create(
        (ResultResamples(result=result, dataset_key=dataset_key,
                         values=encode(result.value + shared + rng.normal(0.0, 0.45 * error, RESAMPLES)))
         for result in results),
        batch_size=max(1, config.batch_size // 4),
    )  # fmt: skip
    phases["result_resamples"] += time.perf_counter() - tick
    counts["jobs"] += len(jobs)
    counts["results"] += len(results)


def _analyze(timings: dict[str, float], label: str) -> None:
    """PostgreSQL's planner statistics after a bulk load, as autovacuum would soon gather them in production."""
    from django.db import connection

    if connection.vendor == "postgresql":
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        timings[label] = time.perf_counter() - started


def _score(state: dict, models) -> int:
    from leaderboard.models import Score
    from leaderboard.scoring import recompute_scores

    recompute_scores(state["benchmark"], models)
    scored = Score.objects.filter(benchmark=state["benchmark"]).count()
    state["data"]["scores"] = scored
    return scored


def _count_queries(queries: dict, label: str, models: int) -> None:
    """Queries and in-process time of one render (the board cache emptied first) and of one cached answer."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    for name, path in (("page", page_path()), ("api", api_path())):
        client.get(path)  # the first request of a process loads templates, URLs and the like
        figures: dict = {"models": models, "path": path}
        for kind in ("rendered", "cached"):
            if kind == "rendered":
                cache.clear()  # the per-process board cache (leaderboard.board_cache): a miss, as after a change
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
        if name == "api" and response.status_code == 200:  # paginated: the rows of one answer, of how many
            body = response.json()
            figures |= {"rows": len(body.get("rows", [])), "count": body.get("count")}
        queries[name][label] = figures


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


def _new_result(state: dict, checkpoint: Path, results_path: Path) -> dict:
    """One job's result arrives for the model lacking one: its vector, its storage, the rescore and the ranks."""
    from django.db import transaction

    from biolm.contract import ResultsDocument
    from biolm.significance import RESAMPLES
    from jobs.models import Job, Run, canonical_key
    from leaderboard.models import Ranking, Result, Score
    from leaderboard.resamples import store_result_resamples
    from workers.engine.bootstrap import resampled_values

    model, dataset, benchmark = state["newcomer"], state["last_dataset"], state["benchmark"]
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
            language_model=model, dataset=dataset, metric=state["metric"], value=test["mean"], std=test.get("std"),
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
