"""Many GPU workers, one web (``python -m bench many_workers``): does the leaderboard stay fast for readers?

A whole platform runs in real processes (:mod:`bench.harness`: PostgreSQL, Redis, the CPU worker
with the tick), its web under gunicorn with exactly the options ``docker-compose.yml`` gives it
(read from that file, so what is measured is what operators run). Then:

1. **Idle**: ``readers`` readers load the BLURB leaderboard over and over (each pausing
   ``reader_pause_s`` between loads) for ``idle_s``: the page's median and p95 with no worker.
2. **Under load**: ``workers`` simulated GPU workers, light clients spread over ``processes``
   processes (a thread each), do what a real worker does over the internal API at the production
   intervals: a liveness heartbeat every ``heartbeat_s``, each worker at its own phase as workers
   started at different moments would, and for each job a claim, a job heartbeat with progress
   every ``heartbeat_s`` while it "runs" ``hold_s`` (0.5x to 1.5x: jobs differ), the results
   uploaded through the web and the completion. The same readers load the page meanwhile, for ``load_s``.

Goal (evaluation across many hosts): the page's p95 under load within 1.5x of the idle figure, and
no 5xx to anyone. Every call is counted by what it answered; a client never retries here, so a 5xx
or a refused connection is seen, not hidden.

Writes ``var/bench/many_workers.json``: top-level ``idle_p95_ms``, ``load_p95_ms``, ``p95_ratio``,
``server_errors`` and ``goals``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import queue
import random
import re
import resource
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import common
from bench.harness import ROOT, Platform, wait_until
from bench.jobs import CREATE_JOBS, percentile
from bench.noop_worker import empty_results

NAME = "many_workers"
PAGE = "/leaderboard/blurb/"
TIMEOUT_S = 30.0


@dataclass
class Config:
    workers: int = 200
    processes: int = 4
    readers: int = 8
    reader_pause_s: float = 0.5
    idle_s: float = 60.0  # as long as load_s: two p95s from samples of one size (30 s gave an idle p95 of 12-22 ms)
    load_s: float = 60.0
    warmup_s: float = 10.0  # the workers' first claims and heartbeats, before the readers are timed
    hold_s: float = 20.0  # how long each simulated job "runs", heartbeating
    heartbeat_s: float = 5.0  # the production interval of both heartbeats
    database_server: str = "postgres://postgres@127.0.0.1:5432"


@dataclass(frozen=True)
class ComposeWeb:
    """How ``docker-compose.yml`` runs gunicorn: the web's options, and the internal API's when it has a service
    of its own (``internal-api``), with the nice level that stands for its ``cpu_shares`` on one machine."""

    web: list[str]
    internal: list[str] | None

    def describe(self) -> str:
        internal = f"; internal API {' '.join(self.internal)}" if self.internal else ""
        return f"web {' '.join(self.web)}{internal}"


def compose_web(compose: Path = ROOT / "docker-compose.yml") -> ComposeWeb:
    """What ``docker-compose.yml`` runs gunicorn with, less ``--bind``: the web this benchmark measures."""
    services = yaml.safe_load(compose.read_text())["services"]
    internal = services.get("internal-api")
    return ComposeWeb(
        web=gunicorn_options(str(services["web"]["command"]), compose),
        internal=None
        if internal is None
        else nice_prefix(internal.get("cpu_shares")) + gunicorn_options(str(internal["command"]), compose),
    )


def gunicorn_options(command: str, compose: Path) -> list[str]:
    found = re.search(r"gunicorn biolm_site\.wsgi:application ([^\"\n]+)", command)
    if found is None:
        raise RuntimeError(f"{compose}: no gunicorn command for biolm_site.wsgi:application in {command!r}")
    words = found.group(1).split()
    return [word for index, word in enumerate(words) if not (word == "--bind" or word.startswith("--bind=")
                                                             or (index and words[index - 1] == "--bind"))]  # fmt: skip


def nice_prefix(cpu_shares: int | None) -> list[str]:
    """Docker's ``cpu_shares`` (1024 is the default weight) as the nice level of the same weight: each level
    weighs 1.25x less (the kernel's CFS), so 512, half the weight, is ``nice -n 3``."""
    if not cpu_shares or int(cpu_shares) >= 1024:
        return []
    return ["nice", "-n", str(round(math.log(1024 / int(cpu_shares)) / math.log(1.25)))]


def call(method: str, url: str, token: str = "", body: bytes | None = None, headers: dict | None = None):
    """One request, never retried: ``(status, seconds, answer)``; status 0 when no answer came."""
    request = urllib.request.Request(url, data=body, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            answer = response.read()
            return response.status, time.perf_counter() - start, answer
    except urllib.error.HTTPError as exc:
        return exc.code, time.perf_counter() - start, b""
    except OSError:
        return 0, time.perf_counter() - start, b""


class SimulatedWorker:
    """One GPU worker's traffic, at its real intervals, with nothing trained: what 200 of them ask of the web."""

    def __init__(self, name: str, api: str, secret: str, jobs, stop_at: float, config: dict, tally: Counter,
                 lock: threading.Lock, timings: dict[str, list[float]]) -> None:  # fmt: skip
        self.name, self.api, self.secret, self.jobs, self.stop_at = name, api, secret, jobs, stop_at
        self.heartbeat_s, self.hold_s = config["heartbeat_s"], config["hold_s"]
        self.tally, self.lock, self.timings = tally, lock, timings
        self.random = random.Random(name)

    def post(self, path: str, payload: dict, token: str) -> tuple[int, bytes]:
        status, took, answer = call("POST", self.api + path, token, json.dumps(payload).encode(),
                                    {"Content-Type": "application/json"})  # fmt: skip
        kind = "liveness" if path == "workers/heartbeat" else path.rsplit("/", 1)[-1]
        self.count(kind, status, took)
        return status, answer

    def count(self, kind: str, status: int, took: float) -> None:
        with self.lock:
            self.tally[f"{kind} {status}"] += 1
            self.timings.setdefault(kind, []).append(took * 1000)

    def liveness(self) -> None:
        beat = {"name": self.name, "queues": ["gpu"], "slots": 1, "gpus": 1, "gpus_free": 1,
                "gpu_devices": [{"name": "simulated", "memory_bytes": 80 << 30}]}  # fmt: skip
        self.post("workers/heartbeat", beat, self.secret)

    def run(self) -> None:
        # Real workers start at different moments: each beats at its own phase, not all 200 in the same instant.
        next_beat = time.monotonic() + self.random.uniform(0, self.heartbeat_s)
        while time.monotonic() < self.stop_at:
            if time.monotonic() >= next_beat:
                self.liveness()
                next_beat += self.heartbeat_s
            try:
                job_id, token = self.jobs.get(timeout=0.1)
            except queue.Empty:
                time.sleep(max(0.0, min(next_beat, self.stop_at) - time.monotonic()))
                continue
            next_beat = self.run_job(job_id, token, next_beat)

    def run_job(self, job_id: int, token: str, next_beat: float) -> float:
        delivery = uuid.uuid4().hex
        status, answer = self.post(f"jobs/{job_id}/claim", {"delivery": delivery, "worker": self.name}, token)
        if status != 200:
            return next_beat
        spec = json.loads(answer)["spec"]
        started, hold = time.monotonic(), self.hold_s * self.random.uniform(0.5, 1.5)  # jobs differ in length
        step = 0
        while time.monotonic() - started < hold and time.monotonic() < self.stop_at:
            time.sleep(max(0.0, min(next_beat, started + hold) - time.monotonic()))
            if time.monotonic() >= next_beat:
                self.liveness()
                step += 1
                beat = {"delivery": delivery, "step": step, "total": 100, "loss": 1.0 / step, "eta_s": 60.0}
                self.post(f"jobs/{job_id}/heartbeat", beat, token)
                next_beat += self.heartbeat_s
        if time.monotonic() >= self.stop_at:
            return next_beat
        headers = {"Content-Type": "application/octet-stream", "X-Biolm-Delivery": delivery,
                   "Content-Disposition": 'attachment; filename="results.json"'}  # fmt: skip
        status, took, _ = call("PUT", f"{self.api}jobs/{job_id}/outputs/results.json", token,
                               json.dumps(empty_results(spec)).encode(), headers)  # fmt: skip
        self.count("results.json", status, took)
        self.post(f"jobs/{job_id}/complete", {"delivery": delivery}, token)
        return next_beat


def simulate(names: list[str], api: str, secret: str, jobs, stop_at: float, config: dict, out) -> None:
    """One process of simulated workers, a thread each; its tally of answers, their latencies and its own CPU
    seconds go to ``out``. The workers stand for other hosts, so they yield this one's CPU (nice 10) to the
    platform they load: on a small machine their own Python would otherwise take cores the web has in production."""
    os.nice(10)
    tally, lock, timings = Counter(), threading.Lock(), {}
    # time.monotonic() differs between processes: stop_at arrives as seconds from now
    deadline = time.monotonic() + stop_at
    workers = [SimulatedWorker(name, api, secret, jobs, deadline, config, tally, lock, timings) for name in names]
    threads = [threading.Thread(target=worker.run, daemon=True) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put((dict(tally), timings, usage.ru_utime + usage.ru_stime))


def read_page(url: str, seconds: float, readers: int, pause_s: float) -> dict:
    """``readers`` readers loading ``url`` for ``seconds``: each load's latency, and what was answered."""
    latencies: list[float] = []
    statuses: Counter = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def reader() -> None:
        while time.monotonic() < deadline:
            status, took, _ = call("GET", url)
            with lock:
                statuses[status] += 1
                if status == 200:
                    latencies.append(took * 1000)
            time.sleep(pause_s)

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"loads": len(latencies), "median_ms": statistics.median(latencies) if latencies else None,
            "p95_ms": percentile(latencies, 0.95) if latencies else None, "statuses": dict(statuses)}  # fmt: skip


def under_load(platform: Platform, config: Config) -> dict:
    plan = json.dumps([["many", config.workers * 4]])
    ids = json.loads(platform.manage("shell", "-c", CREATE_JOBS % plan).strip().splitlines()[-1])
    rows = platform.query(f"SELECT id, token FROM jobs_job WHERE id IN ({','.join(str(int(i)) for i in ids)})")
    context = multiprocessing.get_context("spawn")
    jobs, out = context.Queue(), context.Queue()
    for row in sorted(rows, key=lambda r: r["id"]):
        jobs.put((row["id"], row["token"]))
    api, secret = platform.environment["BIOLM_API_URL"], platform.environment["BIOLM_WORKER_SECRET"]
    settings = {"heartbeat_s": config.heartbeat_s, "hold_s": config.hold_s}
    names = [f"sim{i}@host{i % 50}" for i in range(config.workers)]
    share = -(-len(names) // config.processes)
    run_for = config.warmup_s + config.load_s
    processes = [context.Process(target=simulate, args=(names[i : i + share], api, secret, jobs, run_for, settings,
                                                        out)) for i in range(0, len(names), share)]  # fmt: skip
    for process in processes:
        process.start()
    time.sleep(config.warmup_s)
    web = [platform.processes[name].pid for name in ("web", "internal") if name in platform.processes]
    web_before, busy_before, started = sum(map(common.process_tree_cpu_s, web)), common.machine_busy_s(), time.time()
    page = read_page(f"http://127.0.0.1:{platform.port}{PAGE}", config.load_s, config.readers, config.reader_pause_s)
    web_cpu_s = sum(map(common.process_tree_cpu_s, web)) - web_before
    busy_after, elapsed = common.machine_busy_s(), time.time() - started
    machine_busy = None if busy_before is None or busy_after is None else (
        (busy_after - busy_before) / (elapsed * (os.cpu_count() or 1))
    )  # fmt: skip
    tally: Counter = Counter()
    timings: dict[str, list[float]] = {}
    generator_cpu_s = 0.0
    for _ in processes:
        answers, took, cpu_s = out.get(timeout=run_for + 120)
        tally.update(answers)
        generator_cpu_s += cpu_s
        for kind, values in took.items():
            timings.setdefault(kind, []).extend(values)
    for process in processes:
        process.join(timeout=60)
    (done,) = platform.query("SELECT count(*) AS n FROM jobs_job WHERE status = 'succeeded'")
    (live,) = platform.query("SELECT count(*) AS n FROM jobs_worker WHERE name LIKE ?", "sim%")
    requests = sum(tally.values())
    return {
        "page": page, "worker_answers": dict(sorted(tally.items())), "worker_requests": requests,
        "worker_calls_ms": {kind: {"n": len(v), "median_ms": statistics.median(v), "p95_ms": percentile(v, 0.95)}
                            for kind, v in sorted(timings.items())},
        "worker_requests_per_s": requests / run_for, "jobs_completed": done["n"], "workers_seen": live["n"],
        "web_cpu_s_per_s": web_cpu_s / config.load_s, "simulated_workers_cpu_s_per_s": generator_cpu_s / run_for,
        "machine_busy_share": machine_busy, "cores": os.cpu_count(),
    }  # fmt: skip


def server_errors(answers: dict) -> int:
    """5xx answers and requests that got none (status 0), from ``{status: n}`` or ``{"kind status": n}``."""
    total = 0
    for key, count in answers.items():
        status = int(str(key).rsplit(" ", 1)[-1])
        total += count if status >= 500 or status == 0 else 0
    return total


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    web = compose_web()
    timings = {"BIOLM_HEARTBEAT_S": str(config.heartbeat_s), "BIOLM_HEARTBEAT_STALE_S": "30", "BIOLM_TICK_S": "5",
               "BIOLM_REDISPATCH_AFTER_S": "120"}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="biolm-bench-many-") as folder:
        server = os.environ.get("BIOLM_BENCH_DATABASE_SERVER", config.database_server)
        platform = Platform(Path(folder), database_server=server, timings=timings, web_options=web.web,
                            internal_web=web.internal)  # fmt: skip
        try:
            platform.start(datasets=("demo-ner",))
            url = f"http://127.0.0.1:{platform.port}{PAGE}"
            wait_until(lambda: call("GET", url)[0] == 200, 60, "the leaderboard page")
            idle = read_page(url, config.idle_s, config.readers, config.reader_pause_s)
            loaded = under_load(platform, config)
        finally:
            platform.stop()
    errors = server_errors(idle["statuses"]) + server_errors(loaded["page"]["statuses"])
    errors += server_errors(loaded["worker_answers"])
    ratio = loaded["page"]["p95_ms"] / idle["p95_ms"] if idle["p95_ms"] and loaded["page"]["p95_ms"] else None
    result = {
        "name": NAME, "idle_p95_ms": idle["p95_ms"], "load_p95_ms": loaded["page"]["p95_ms"], "p95_ratio": ratio,
        "server_errors": errors, "gunicorn": {"web": web.web, "internal_api": web.internal}, "idle": idle,
        "under_load": loaded,
        "gunicorn_description": web.describe(),
        "goals": {"p95_within_1_5x_of_idle": ratio is not None and ratio <= 1.5, "no_5xx": errors == 0},
    }  # fmt: skip
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    idle, loaded = result["idle"], result["under_load"]
    rows = [
        ["idle", idle["loads"], idle["median_ms"], idle["p95_ms"]],
        [f"{loaded['workers_seen']} workers", loaded["page"]["loads"], loaded["page"]["median_ms"],
         loaded["page"]["p95_ms"]],
    ]  # fmt: skip
    return (
        common.table(["leaderboard page", "loads", "median ms", "p95 ms"], rows)
        + f"\np95 under load / idle: {result['p95_ratio']:.2f} (goal <= 1.5); 5xx or no answer: "
        f"{result['server_errors']}; workers sent {loaded['worker_requests_per_s']:.0f} requests/s and completed "
        f"{loaded['jobs_completed']} jobs; gunicorn as docker-compose.yml runs it "
        f"({result['gunicorn_description']}) used "
        f"{loaded['web_cpu_s_per_s']:.2f} CPU-s/s, the machine's {loaded['cores']} cores were "
        f"{loaded['machine_busy_share']:.0%} busy"
    )
