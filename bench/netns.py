"""A second host on this machine: a network namespace joined to this one by a veth pair and nothing else.

Processes started with :attr:`SecondHost.prefix` (``ip netns exec NAME``) have a network of their own:
their ``127.0.0.1`` is their own loopback, and the only other address they reach is :attr:`SecondHost.peer`,
this side of the pair. So a service reaches them only if it listens on that address, as a web host's
services listen on the address other hosts use; PostgreSQL, listening on this side's loopback, is out of
their reach, as a database on another host's private network is. Making one needs root and iproute2.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys


class SecondHost:
    """``with SecondHost() as host: subprocess.run([*host.prefix, "python", ...])``; removed on exit."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 10000}{random.randrange(100, 1000)}"
        self.name = f"biolm-host-{tag}"
        self.here, self.there = f"bh{tag}a", f"bh{tag}b"  # interface names: at most 15 characters
        subnet = random.randrange(1, 250)
        self.peer = f"10.231.{subnet}.1"  # this side: the address the second host's processes are given
        self.address = f"10.231.{subnet}.2"

    @staticmethod
    def unavailable() -> str:
        """Why no second host can be made here ("" when one can): it needs root and ``ip``."""
        if os.geteuid() != 0:
            return "a second host (a network namespace and a veth pair) needs root"
        if shutil.which("ip") is None:
            return "a second host needs iproute2's ip command (apt-get install iproute2)"
        return ""

    @property
    def prefix(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.name)

    def __enter__(self) -> SecondHost:
        steps = [
            ["ip", "netns", "add", self.name],
            ["ip", "link", "add", self.here, "type", "veth", "peer", "name", self.there],
            ["ip", "link", "set", self.there, "netns", self.name],
            ["ip", "addr", "add", f"{self.peer}/30", "dev", self.here],
            ["ip", "link", "set", self.here, "up"],
            [*self.prefix, "ip", "addr", "add", f"{self.address}/30", "dev", self.there],
            [*self.prefix, "ip", "link", "set", self.there, "up"],
            [*self.prefix, "ip", "link", "set", "lo", "up"],
        ]
        try:
            for step in steps:
                subprocess.run(step, check=True, capture_output=True, text=True, timeout=30)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        # Deleting the namespace ends what still runs in it, and removes the pair with its inner end.
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.here], capture_output=True, timeout=30)

    def reaches(self, host: str, port: int) -> bool:
        """Whether a process on the second host can open a TCP connection to ``host:port``."""
        probe = (
            "import socket, sys\n"
            "try:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()\n"
            "except OSError:\n    sys.exit(1)\n"
        )
        done = subprocess.run([*self.prefix, sys.executable, "-c", probe, host, str(port)], timeout=30)
        return done.returncode == 0


def listening_port(url: str) -> tuple[str, int]:
    """``(host, port)`` of a ``postgres://``-style URL (the default port per scheme when it names none)."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    defaults = {"postgres": 5432, "postgresql": 5432, "redis": 6379, "http": 80}
    return parsed.hostname or "127.0.0.1", parsed.port or defaults.get(parsed.scheme, 0)
