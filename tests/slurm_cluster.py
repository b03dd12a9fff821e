"""A real two-node Slurm cluster on this one host, for the Slurm executor's tests (workers/runner/slurm.py).

Debian's ``slurm-wlm`` and ``munge`` packages, run as root from a temporary folder: a ``munged`` with a
key and socket of its own, a ``slurmctld`` and two ``slurmd`` (``-N n1``, ``-N n2``), every daemon in
the foreground (``-D``) as a child of the test process, in a session of its own. Both nodes have
``NodeAddr=127.0.0.1`` and a port each, so two "machines" share the loopback interface; the
controller listens on a free port. Nothing touches /etc/slurm, /etc/munge or the system's munged,
so a system Slurm (or the services Debian's packages install but, without systemd, do not start)
can run beside it.

Every client command must carry :attr:`SlurmCluster.env` (``SLURM_CONF`` naming this cluster's
slurm.conf), and so do the jobs, so teardown finds what outlived the daemons by it: slurmstepd
leaves slurmd's session, and a job on a node whose slurmd was killed keeps running. Stopping ends
the daemons' process groups, then every process whose environment names this cluster's
slurm.conf, then munged.

There is no slurmdbd (so no ``sacct``): finished jobs stay readable through ``scontrol show job``
for ``MinJobAge`` seconds, and jobcomp/filetxt writes each ending to ``jobcomp.txt``.

The ``slurm_cluster`` fixture (a test module imports ``slurm_cluster_fixture``) skips, naming the missing
command, where Slurm or munge is not installed, except under ``BIOLM_REQUIRE_SLURM=1`` (CI: ``.ci/run``
installs them), where it fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness import stop_process_group

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "srun", "sinfo")
NODES = ("n1", "n2")
START_TIMEOUT_S = 30.0
# A lost node is noticed in about two pings: Slurm 22.05 retries a refused connection for ~12 s per ping.
SLURMD_TIMEOUT_S = 5


def missing_commands() -> list[str]:
    """The daemons and client commands this harness needs that are not on PATH (nor in /usr/sbin)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in DAEMONS if shutil.which(name, path=path) is None]


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's pick for port 0); a small race, as any such pick."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SlurmClusterError(RuntimeError):
    """The cluster did not come up (or a node did not come back); the message carries the daemons' log tails."""


class SlurmCluster:
    """The folder, the configuration and the daemons of one test cluster; :meth:`start` and :meth:`stop` it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "sock" / "munge.socket"
        self.jobcomp = root / "log" / "jobcomp.txt"
        self.ports = {"slurmctld": free_port(), **{node: free_port() for node in NODES}}
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.env["PATH"] = os.pathsep.join([self.env.get("PATH", ""), "/usr/sbin", "/sbin"])
        self.processes: dict[str, subprocess.Popen] = {}

    # -- starting ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """munged, then the controller and both nodes; returns once both nodes are idle."""
        self._make_folders()
        self.conf.write_text(self.slurm_conf(), encoding="utf-8")
        self._start_munged()
        self._spawn("slurmctld", ["slurmctld", "-D"])
        for node in NODES:
            self.start_node(node)
        self.wait_for_nodes("idle", NODES)

    def _make_folders(self) -> None:
        # munged insists that every folder above its socket is searchable by all, and its key readable by it alone.
        self.root.chmod(0o755)
        for name, mode in (("sock", 0o755), ("munge", 0o700), ("state", 0o700), ("log", 0o755), ("spool", 0o755)):
            (self.root / name).mkdir()
            (self.root / name).chmod(mode)  # not mkdir's mode, which the umask narrows
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)

    def _start_munged(self) -> None:
        munge = self.root / "munge"
        self._spawn("munged", [
            "munged", "--foreground", f"--socket={self.munge_socket}", f"--key-file={munge / 'munge.key'}",
            f"--pid-file={munge / 'munged.pid'}", f"--log-file={self.root / 'log' / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        ])  # fmt: skip
        self._wait(lambda: self.munge_socket.exists(), "munged to create its socket")

    def start_node(self, node: str) -> None:
        """Start (or restart) ``slurmd -N node``; with ``ReturnToService=2`` a node that was DOWN comes back."""
        (self.root / "spool" / node).mkdir(exist_ok=True)
        self._spawn(node, ["slurmd", "-D", "-N", node])

    def slurm_conf(self) -> str:
        """The cluster's slurm.conf: loopback nodes, no cgroups, every path in :attr:`root`."""
        root, host = self.root, socket.gethostname().split(".")[0]
        nodes = "\n".join(
            f"NodeName={node} NodeAddr=127.0.0.1 Port={self.ports[node]} CPUs=1 RealMemory=100 State=UNKNOWN"
            for node in NODES
        )
        return f"""\
ClusterName=biolmtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={self.ports["slurmctld"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SlurmdTimeout={SLURMD_TIMEOUT_S}
MessageTimeout=5
KillWait=5
ReturnToService=2
MinJobAge=600
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
{nodes}
PartitionName=test Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
"""

    def _spawn(self, name: str, command: list[str]) -> None:
        out = (self.root / "log" / f"{name}.out").open("ab")
        self.processes[name] = subprocess.Popen(
            command, env=self.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, cwd=self.root,
        )  # fmt: skip
        out.close()

    # -- watching ----------------------------------------------------------------------------------------------

    def run(self, *command: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        """A client command (``scontrol ...``) against this cluster."""
        return subprocess.run(command, env=self.env, capture_output=True, text=True, check=check, timeout=timeout)

    def node_states(self) -> dict[str, str]:
        """``{"n1": "idle", ...}`` as ``sinfo`` says (``down*``: down and not responding)."""
        if not self.conf.exists():
            return {}
        try:
            listed = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False, timeout=10)
        except subprocess.TimeoutExpired:
            return {}
        return dict(line.split(maxsplit=1) for line in listed.stdout.splitlines() if " " in line)

    def wait_for_nodes(self, state: str, nodes: tuple[str, ...] = NODES, timeout_s: float = START_TIMEOUT_S) -> None:
        self._wait(lambda: all(self.node_states().get(node) == state for node in nodes),
                   f"nodes {', '.join(nodes)} to be {state}", timeout_s)  # fmt: skip

    def _wait(self, condition, what: str, timeout_s: float = START_TIMEOUT_S) -> None:
        started = time.monotonic()
        while not condition():
            dead = {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}
            waited = time.monotonic() - started
            if waited > timeout_s or dead.get("slurmctld") is not None or dead.get("munged") is not None:
                raise SlurmClusterError(f"waited {waited:.0f} s for {what}; exited: {dead or 'none'}; "
                                        f"nodes: {self.node_states()}\n{self.log_tails()}")  # fmt: skip
            time.sleep(0.2)

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, for an error that says why the cluster is not up."""
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)

    # -- stopping ----------------------------------------------------------------------------------------------

    def kill_node(self, node: str) -> None:
        """The node's slurmd dies (SIGKILL); its jobs' processes keep running, as on a node cut off the network."""
        process = self.processes.pop(node)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        """Everything this cluster started: jobs and slurmstepd (found by SLURM_CONF), the daemons, then munged.

        The jobs go first: a slurmstepd whose job ended keeps retrying to tell a stopped controller, and a
        slurmd asked to stop waits for it. After a node was lost the controller can take seconds to exit
        (still talking to the node): its state is thrown away, so it gets one second.
        """
        self._kill_strays()
        for name in ("slurmctld", *NODES):
            if name in self.processes:  # a throwaway cluster: no need to wait long for its state to be saved
                stop_process_group(self.processes.pop(name), grace_s=1)
        self._kill_strays()
        if "munged" in self.processes:
            stop_process_group(self.processes.pop("munged"), grace_s=5)

    def _kill_strays(self) -> None:
        daemons = {process.pid for process in self.processes.values()}
        for pid in self._processes_of_this_cluster():
            if pid not in daemons:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _processes_of_this_cluster(self) -> list[int]:
        marker = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:  # a process may exit while it is read, and another user's cannot be read at all
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found


@contextlib.contextmanager
def running_cluster() -> Iterator[SlurmCluster]:
    """A started cluster in a fresh folder under /tmp, stopped and removed on exit (even when starting failed)."""
    root = Path(tempfile.mkdtemp(prefix="biolm-slurm-", dir="/tmp"))  # short paths: a socket's is at most 107
    cluster = SlurmCluster(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module", name="slurm_cluster")
def slurm_cluster_fixture() -> Iterator[SlurmCluster]:
    """A real two-node Slurm cluster for the module's tests; skipped (failed under BIOLM_REQUIRE_SLURM=1) without
    Slurm and munge installed, or when not run as root (the daemons run as root, as ``SlurmUser=root`` says)."""
    missing = missing_commands()
    reason = f"Slurm is not installed here: {', '.join(missing)} not found (apt-get install slurm-wlm munge)"
    if not missing and os.geteuid() != 0:
        reason = "the test Slurm cluster runs its daemons as root"
    if missing or os.geteuid() != 0:
        if os.environ.get("BIOLM_REQUIRE_SLURM") == "1":
            pytest.fail(f"{reason} (BIOLM_REQUIRE_SLURM=1: the Slurm tests must run here)", pytrace=False)
        pytest.skip(reason)
    with running_cluster() as cluster:
        yield cluster
