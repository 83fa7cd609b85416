"""Real peers for the Python tests: bzfs from /usr/games (Debian's bzflag-server), the bzhead CLI built by
`cargo build` (target/debug/bzhead, or $BZHEAD_BIN), on free loopback ports. A missing program fails the test
with what to install; nothing is skipped."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The examples are imported by the tests that run them (python/examples/).
sys.path.insert(0, str(REPO / "python" / "examples"))
BZFS = "/usr/games/bzfs"
WAIT = 10.0

# The loopback port and ping helpers are the package's own (bzhead.env starts private servers the same way).
from bzhead.env._server import (  # noqa: E402
    free_port,
    udp_socket,
    wait_ready,
)


class Bzfs:
    """A bzfs on 127.0.0.1 (debug log kept); killed by `stop()` or the fixture."""

    def __init__(self, *args: str, ready_timeout: float = 15.0):
        if not os.access(BZFS, os.X_OK):
            pytest.fail(f"{BZFS} is missing: run scripts/install-peers (or ./test), which installs bzflag-server")
        self.port = free_port()
        self.cmd = [BZFS, "-i", "127.0.0.1", "-p", str(self.port), *args, "-d", "-d"]
        self.proc = subprocess.Popen(
            self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_ready(ready_timeout)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._lock:
                self._lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def _wait_ready(self, timeout: float) -> None:
        error = wait_ready(self.proc, self.port, timeout)
        if error is not None:
            pytest.fail(f"{self.cmd} {error}:\n{self.log()}")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        with self._lock:
            return "\n".join(self._lines)

    def wait_for_log(self, pattern: str, timeout: float = WAIT) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pattern in self.log():
                return True
            time.sleep(0.05)
        return pattern in self.log()

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=2)
        return self.log()


# A small open world for bzhead.env games: no building between the tanks.
OPEN_WORLD = "world\n  size 60\nend\n"


@pytest.fixture
def open_world(tmp_path):
    p = tmp_path / "open.bzw"
    p.write_text(OPEN_WORLD)
    return str(p)


@pytest.fixture
def bzfs_factory():
    servers: list[Bzfs] = []

    def start(*args: str) -> Bzfs:
        s = Bzfs(*args)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def bzhead_bin() -> str:
    """The CLI: $BZHEAD_BIN, else target/debug/bzhead (./test builds it before the Python step)."""
    path = os.environ.get("BZHEAD_BIN") or str(REPO / "target" / "debug" / "bzhead")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run `cargo build` first (./test does)")
    return path


def run_bzhead(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [bzhead_bin(), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def run_python(code: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter of the test's virtual environment."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def udp_bound(port: int) -> bool:
    """True once some socket is bound to UDP `port` (read from /proc/net/udp, no probe datagram)."""
    try:
        with open("/proc/net/udp") as f:
            next(f)
            return any(int(line.split()[1].split(":")[1], 16) == port for line in f)
    except OSError:
        return False


class GameServer:
    """A DDNet server on 127.0.0.1 (Debian ddnet-server), registering with no master, with a throwaway HOME."""

    def __init__(self, tmp_path: Path, name: str):
        program = "/usr/games/DDNet-Server"
        if not os.access(program, os.X_OK):
            pytest.fail(f"{program} is missing: run scripts/install-peers (or ./test), which installs ddnet-server")
        self.port = free_port()
        args = [
            f"sv_port {self.port}",
            "sv_ipv4only 1",
            "bindaddr 127.0.0.1",
            "sv_register 0",
            f'sv_name "{name}"',
            "sv_max_clients_per_ip 64",
        ]
        env = dict(os.environ, HOME=str(tmp_path))
        self.proc = subprocess.Popen(
            [program, *args],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not udp_bound(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"DDNet-Server did not start on port {self.port}")
            time.sleep(0.05)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def ddnet(tmp_path):
    server = GameServer(tmp_path, "bzhead python test")
    yield server
    server.stop()


class Bzadmin:
    """bzadmin as a witness of what the server tells every player (kills: "*** 'V' destroyed by 'K'.")."""

    def __init__(self, callsign: str, addr: str):
        program = "/usr/games/bzadmin"
        if not os.access(program, os.X_OK):
            pytest.fail(f"{program} is missing: run scripts/install-peers (or ./test), which installs bzflag-server")
        self.proc = subprocess.Popen(
            [program, "-ui", "stdboth", f"{callsign}@{addr}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._lines: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._lock:
                self._lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def output(self) -> str:
        with self._lock:
            return "\n".join(self._lines)

    def wait_for(self, pattern: str, timeout: float = WAIT) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pattern in self.output():
                return True
            time.sleep(0.05)
        return pattern in self.output()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
