"""A whole platform in real processes, for the end-to-end and fault tests and the jobs benchmark.

Each :class:`Platform` gets a database of its own (a fresh PostgreSQL database on the server
``DATABASE_URL`` names, else a SQLite file), a Redis server of its own on a free port (so a test
may stop and restart it without touching the server CI shares), the web app (the internal API)
on a free port, the platform's CPU worker with the job tick, and as many GPU workers as a test
starts: database-free ``workers.runner`` processes, started without ``DATABASE_URL``. Timings are
shortened (heartbeats every second, silence of 8 s counts as death) so faults play out in seconds.
The test reads the database directly with SQL, as an operator would.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import secrets
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
PYTHON = sys.executable
POSTGRES_ONLY = "fault tests run against PostgreSQL (set DATABASE_URL=postgres://...), as CI's first pass does"


def stop_process_group(process: subprocess.Popen | None, grace_s: float = 30, signum: int = signal.SIGTERM) -> str:
    """Send ``signum`` to ``process``'s whole group (gunicorn and the workers it forked), SIGKILL it after ``grace_s``.

    Started with ``start_new_session=True``, a server is its own group, so nothing it forked outlives it.
    Returns "" when the group exited in time, else what it was doing just before the SIGKILL
    (:func:`describe_process_group`), for a caller to whom a stop that hangs is a failure.
    """
    if process is None or process.poll() is not None:
        return ""
    os.killpg(process.pid, signum)
    try:
        process.wait(timeout=grace_s)
        return ""
    except subprocess.TimeoutExpired:
        stuck = describe_process_group(process.pid)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return stuck


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live process under it, read from /proc (each task's children)."""
    tree, index = [pid], 0
    while index < len(tree):
        try:
            tasks = list(Path(f"/proc/{tree[index]}/task").iterdir())
        except OSError:
            tasks = []  # it exited meanwhile
        for task in tasks:
            with contextlib.suppress(OSError):
                tree += [int(child) for child in (task / "children").read_text().split()]
        index += 1
    return tree


def processes_with(library: str, pid: int) -> list[int]:
    """The processes of ``pid``'s tree with ``library`` (a shared object's name: ``libtorch``) in their memory
    map: the ones that imported the module that loads it, whatever its ``sys.modules`` now says."""
    found = []
    for member in process_tree(pid):
        try:
            maps = Path(f"/proc/{member}/maps").read_text()
        except OSError:
            continue
        if library in maps:
            found.append(member)
    return found


def innermost_frames(log: str, frames: int = 6) -> str:
    """The first ``frames`` lines of each thread's stack that faulthandler wrote into ``log`` (the innermost calls,
    where a stuck thread waits), from the last dump in it: what a truncated log tail would cut first."""
    dumps = log.split("(most recent call first):")
    if len(dumps) == 1:
        return "(no stacks in the log)"
    heads = []
    for before, stack in itertools.pairwise(dumps):
        thread = before.rsplit("\n", 1)[-1].strip()
        lines = [line.strip() for line in stack.splitlines() if line.strip().startswith("File ")][:frames]
        heads.append(f"{thread}: " + " <- ".join(lines))
    return "\n".join(heads[-12:])


def describe_process_group(session: int) -> str:
    """What the processes of a group that will not stop are doing: a line each, and each biolm worker's stacks.

    Read from ``/proc`` (pid, state, kernel wait channel, command line), so it needs no ``ps``. A
    supervisor and its Celery workers write every thread's stack to their log on SIGUSR2
    (:func:`workers.runner.processes.dump_stacks_on_signal`), so the log read after this shows them.
    """
    lines, asked = [], []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:  # a process may exit while it is read
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"
            if int(fields[3]) != session:  # state, ppid, pgrp, session
                continue
            wchan = (entry / "wchan").read_text().strip() or "-"
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        lines.append(f"{entry.name} state {fields[0]} parent {fields[1]} waiting in {wchan}: {command}")
        if "workers.runner" in command:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGUSR2)
                asked.append(entry.name)
    time.sleep(1 if asked else 0)  # faulthandler writes at once, from C
    return "\n".join(sorted(lines, key=lambda line: int(line.split()[0]))) + (
        f"\n(stacks asked of {', '.join(asked) or 'none'}: in the log below)"
    )


def web_is_healthy(process: subprocess.Popen | None, port: int, log: Callable[[], str]) -> bool:
    """Whether the web server on ``port`` answers /healthz with 200; raises with its log's tail if it exited."""
    if process is not None and process.poll() is not None:
        raise RuntimeError(f"gunicorn exited ({process.returncode}):\n{log()[-3000:]}")
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class Redis:
    """A redis-server of its own on a free port; with ``password``, it requires it (``requirepass``); with ``tls``
    (certificate, key and CA files), it speaks only TLS, as ``rediss://`` reaches it; with ``acl_file``, its users
    are that file's (``--aclfile``)."""

    def __init__(self, directory: Path, password: str = "", tls: tuple[Path, Path, Path] | None = None,
                 host: str = "127.0.0.1", acl_file: Path | None = None) -> None:  # fmt: skip
        self.acl_file = acl_file
        self.host = host
        self.port = free_port()
        self.directory = directory
        self.password = password
        self.tls = tls
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        credentials = f":{self.password}@" if self.password else ""
        return f"{'rediss' if self.tls else 'redis'}://{credentials}{self.host}:{self.port}/0"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(self.port), "--bind", self.host, "--save", "", "--appendonly", "no",
                   "--dir", str(self.directory)]  # fmt: skip
        if self.password:
            command += ["--requirepass", self.password]
        if self.acl_file is not None:
            command += ["--aclfile", str(self.acl_file)]
        if self.tls:
            certificate, key, authority = self.tls
            command[1:3] = ["--port", "0", "--tls-port", str(self.port)]
            command += ["--tls-cert-file", str(certificate), "--tls-key-file", str(key),
                        "--tls-ca-cert-file", str(authority), "--tls-auth-clients", "no"]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(self._answers, 20, "redis-server")
        except BaseException:  # a server that never answered is not left running
            self.stop()
            raise

    def _answers(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as plain:
                connection = plain
                if self.tls:
                    context = ssl.create_default_context(cafile=str(self.tls[2]))
                    connection = context.wrap_socket(plain, server_hostname=self.host)
                connection.sendall(b"PING\r\n")
                answer = connection.recv(64)
                guarded = bool(self.password) or self.acl_file is not None
                return answer.startswith(b"+PONG") or (guarded and answer.startswith(b"-NOAUTH"))
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def split_prefix(words: list[str]) -> tuple[list[str], list[str]]:
    """``["nice", "-n", "3", "--workers", "3"]`` -> the command to run gunicorn under, and gunicorn's options."""
    for index, word in enumerate(words):
        if word.startswith("--"):
            return words[:index], words[index:]
    return words, []


class Platform:
    def __init__(
        self, directory: Path, database_server: str | None = None, timings: dict | None = None, python: str = PYTHON,
        web_options: list[str] | None = None, internal_web: list[str] | None = None, host: str = LOOPBACK,
    ) -> None:  # fmt: skip
        """``database_server``: a PostgreSQL server URL to create the database on (default: ``DATABASE_URL``'s);
        ``timings``: environment values replacing the shortened heartbeat and tick settings; ``python``: the
        interpreter of every process (a virtualenv of the test's own, to install plugins into while it runs);
        ``web_options``: gunicorn's options (default: 3 sync workers, a 120 s timeout); ``internal_web``: the
        command prefix and options of a second gunicorn, on a port of its own, that serves the workers' internal
        API (``BIOLM_API_URL``), as docker-compose's ``internal-api`` does; by default the web serves both;
        ``host``: the address the web and Redis listen on and workers are given (a veth pair's, for a second
        host, :class:`bench.netns.SecondHost`)."""
        self.host = host
        self.directory = directory
        self.python = python
        self.web_options = web_options or ["--workers", "3", "--timeout", "120"]
        self.internal_web = internal_web
        self.internal_port = free_port() if internal_web is not None else None
        self.var = directory / "var"
        # Reached from elsewhere, Redis asks for a password (its protected mode refuses other hosts without one).
        self.redis = Redis(directory / "redis", host=host, password=secrets.token_hex(12) if host != LOOPBACK else "")
        self.port = free_port()
        self.processes: dict[str, subprocess.Popen] = {}
        configured = f"{database_server.rstrip('/')}/x" if database_server else os.environ.get("DATABASE_URL", "")
        self.postgres = configured.startswith("postgres")
        if self.postgres:
            self.server_url = configured.rsplit("/", 1)[0]
            self.database = f"biolm_harness_{uuid.uuid4().hex[:10]}"
            self.database_url = f"{self.server_url}/{self.database}"
        else:
            self.database_url = f"sqlite:///{directory / 'platform.sqlite3'}"
        self.environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("BIOLM_", "CELERY_", "DATABASE_"))},
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.redis.url,
            "BIOLM_VAR_DIR": str(self.var),
            "BIOLM_WORKER_SECRET": secrets.token_urlsafe(24),
            "BIOLM_API_URL": f"http://{host}:{self.internal_port or self.port}/internal/",
            "ALLOWED_HOSTS": ",".join(dict.fromkeys([host, "127.0.0.1", "localhost"])),
            "BIOLM_HEARTBEAT_S": "1",
            "BIOLM_HEARTBEAT_STALE_S": "8",
            "BIOLM_TICK_S": "1",
            "BIOLM_REDISPATCH_AFTER_S": "10",
            "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
            # One job per dataset, as the measurements and fault tests built on this harness expect; a platform
            # that slices its protocols (the default elsewhere, jobs/graph.py) sets it to 1 in ``timings``.
            "BIOLM_SLICE_PROTOCOLS": "0",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)]),
            **(timings or {}),
        }

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, datasets: tuple[str, ...] = ("demo-ner",)) -> Platform:
        if self.postgres:
            self._admin_sql(f'CREATE DATABASE "{self.database}"')
        self.redis.start()
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("sync_plugins")
        if "STATIC_ROOT" not in self.environment:  # else already collected, e.g. by the test session
            self.manage("collectstatic", "--noinput", "-v", "0")  # pages name the hashed files it writes
        for dataset in datasets:
            self.manage("import_dataset", dataset)
        self.manage("shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('alice')")
        # gunicorn, as in production: a bounded number of processes and database connections
        # (runserver opens a thread, and a persistent connection, per request).
        self.spawn("web", [self.python, "-m", "gunicorn", "biolm_site.wsgi:application",
                           "--bind", f"{self.host}:{self.port}", *self.web_options])  # fmt: skip
        wait_until(self._web_answers, 60, "the web app")
        if self.internal_web is not None:
            prefix, options = split_prefix(self.internal_web)
            self.spawn("internal", [*prefix, self.python, "-m", "gunicorn", "biolm_site.wsgi:application",
                                    "--bind", f"{self.host}:{self.internal_port}", *options])  # fmt: skip
            wait_until(lambda: self._answers(self.internal_port), 60, "the internal API's web")
        self.start_cpu_worker()
        return self

    def start_cpu_worker(self, beat: bool = True) -> subprocess.Popen:
        """The platform's CPU worker; ``beat=False`` leaves out its embedded beat (the watchdog must tick)."""
        command = [self.python, "-m", "celery", "-A", "biolm_site", "worker", "-Q", "cpu", "-c", "2",
                   "-n", "cpu@harness", "--without-gossip", "--without-mingle"]  # fmt: skip
        if beat:
            command += ["-B", "--schedule", str(self.var / "celerybeat-schedule")]
        return self.spawn("cpu", command)

    def stop(self) -> None:
        for name in list(self.processes):
            self.kill(name, signal.SIGKILL)
        self.redis.stop()
        if self.postgres:
            self._admin_sql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    def _web_answers(self) -> bool:
        return self._answers(self.port)

    def _answers(self, port: int) -> bool:
        try:
            with socket.create_connection((self.host, port), timeout=1):
                return True
        except OSError:
            return False

    def _admin_sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.server_url}/postgres", autocommit=True) as connection:
            connection.execute(statement)

    # -- processes ------------------------------------------------------------------------------

    def manage(self, *arguments: str) -> str:
        result = subprocess.run([self.python, "manage.py", *arguments], cwd=ROOT, env=self.environment,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode == 0, f"manage.py {' '.join(arguments)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def spawn(self, name: str, command: list[str], environment: dict | None = None) -> subprocess.Popen:
        log = (self.directory / f"{name}.log").open("ab")
        process = subprocess.Popen(command, cwd=ROOT, env=environment or self.environment, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.processes[name] = process
        return process

    def worker_environment(self) -> dict[str, str]:
        """What a GPU host is given: no database URL and no object-store credentials (it uses pre-signed URLs)."""
        return {k: v for k, v in self.environment.items() if k != "DATABASE_URL" and not k.startswith("BIOLM_S3_")}

    def start_gpu_worker(self, name: str, app: str = "workers.runner.app", prefix: tuple[str, ...] = (),
                         **extra: str) -> subprocess.Popen:  # fmt: skip
        """A database-free worker: DATABASE_URL is not in its environment at all, nor the object store's keys;
        ``prefix`` runs it elsewhere (``ip netns exec NAME``: a second host's network)."""
        environment = self.worker_environment() | extra
        command = [*prefix, self.python, "-m", "celery", "-A", app, "worker", "-Q", "gpu", "--pool", "solo",
                   "-n", f"{name}@harness", "--without-gossip", "--without-mingle"]  # fmt: skip
        return self.spawn(name, command, environment)

    def start_supervised_gpu_workers(self, name: str, gpus: int = 0, **extra: str) -> subprocess.Popen:
        """``python -m workers.runner``, as operators run it: its Celery workers are ``<name><i>@<host>``."""
        environment = self.worker_environment() | extra
        command = [self.python, "-m", "workers.runner", "--gpus", str(gpus), "--name", name]
        return self.spawn(name, command, environment)

    def kill(self, name: str, signum: int = signal.SIGKILL, grace_s: float = 30) -> None:
        """Signal ``name``'s whole process group and wait for it to exit.

        One that is still running after ``grace_s`` is killed, so that it cannot hold a queue or a port
        for the tests after it, and the failure shows why it did not stop: its processes and their state,
        and its log's tail, with a biolm worker's stacks in it.
        """
        stuck = stop_process_group(self.processes.pop(name), grace_s, signum)
        if stuck:
            log = (self.directory / f"{name}.log").read_text(errors="replace")
            raise AssertionError(
                f"{name} did not exit within {grace_s:g} s of {signal.Signals(signum).name}; killed.\n"
                f"{stuck}\n--- where each thread was (innermost frames) ---\n{innermost_frames(log)}\n"
                f"--- the tail of its log ---\n{log[-12000:]}"
            )

    def children(self, name: str) -> list[int]:
        """The pids of a process's children (a supervisor's workers)."""
        pid = self.processes[name].pid
        try:
            return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except FileNotFoundError:
            return []

    def log(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(errors="replace")

    # -- the operator's view --------------------------------------------------------------------

    def submit(self, *arguments: str) -> dict:
        return json.loads(self.manage("submit", "--owner", "alice", "--json", *arguments))

    def query(self, sql: str, *parameters) -> list[dict]:
        if self.postgres:
            import psycopg
            from psycopg.rows import dict_row

            with psycopg.connect(self.database_url, row_factory=dict_row) as connection:
                return list(connection.execute(sql.replace("?", "%s"), parameters))
        connection = sqlite3.connect(self.directory / "platform.sqlite3", timeout=30)
        connection.row_factory = sqlite3.Row
        try:
            return [dict(row) for row in connection.execute(sql, parameters)]
        finally:
            connection.close()

    def job(self, job_id: int) -> dict:
        (row,) = self.query("SELECT * FROM jobs_job WHERE id = ?", job_id)
        return row

    def wait_for_job(self, job_id: int, states: tuple[str, ...], timeout: float = 240) -> dict:
        """The job's row once it is in one of ``states``; on time-out, fails with :meth:`diagnosis`."""
        try:
            return wait_until(lambda: (j := self.job(job_id))["status"] in states and j, timeout,
                              f"job #{job_id} to be {' or '.join(states)}")  # fmt: skip
        except AssertionError as timed_out:
            raise AssertionError(f"{timed_out}\n{self.diagnosis()}") from None

    def diagnosis(self, log_lines: int = 40) -> str:
        """Every job's state and every process's last log lines: what a fault test that timed out in CI
        leaves behind, where the platform's directory is gone by the time anyone reads the output."""
        columns = "id, kind, queue, status, attempts, claim, worker, first_sent_at, dispatched_at, started_at, error"
        lines = ["jobs:"] + [f"  {row}" for row in self.query(f"SELECT {columns} FROM jobs_job ORDER BY id")]
        lines += ["workers:"] + [f"  {row}" for row in self.query("SELECT name, last_heartbeat FROM jobs_worker")]
        for log in sorted(self.directory.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-log_lines:]
            lines += [f"--- {log.name} (last {len(tail)} lines)", *tail]
        return "\n".join(lines)

    def results(self, model_slug: str) -> list[dict]:
        return self.query(
            "SELECT r.value, r.std, r.n_seeds, r.job_id, d.slug AS dataset FROM leaderboard_result r "
            "JOIN registry_languagemodel m ON m.id = r.language_model_id "
            "JOIN registry_dataset d ON d.id = r.dataset_id WHERE m.slug = ? AND r.scope = ''",
            model_slug,
        )
