"""A private bzfs on a free loopback port, optionally under ``faketime`` (the warp), stopped on ``stop()``."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional, Sequence

BZFS = "/usr/games/bzfs"
PING_REQUEST = bytes([0x00, 0x02, 0x04, 0x04, 0x00, 0x00])
PING_REPLY_PREFIX = bytes([0x00, 0x38, 0x03, 0x03]) + b"BZFS"


def usable_udp_port(port: int) -> bool:
    # bzfs on a little-endian host ignores UDP from source ports whose low byte is 0..3.
    return port & 0xFF > 3


def free_port() -> int:
    """A loopback port free for both TCP and UDP (and usable for BZFlag's UDP)."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
        if not usable_udp_port(port):
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
        except OSError:
            continue
        return port
    raise RuntimeError("no free loopback port")


def udp_socket() -> socket.socket:
    """A UDP socket on loopback whose port bzfs answers."""
    for _ in range(100):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        if usable_udp_port(s.getsockname()[1]):
            return s
        s.close()
    raise RuntimeError("no usable UDP source port")


def wait_ready(proc: subprocess.Popen, port: int, timeout: float) -> Optional[str]:
    """Pings the bzfs of `proc` on loopback `port` until it answers: None, or why not ("exited with 1", "was not
    ready within 15 s")."""
    deadline = time.monotonic() + timeout
    ping = udp_socket()
    ping.settimeout(0.1)
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return f"exited with {proc.returncode}"
            try:
                ping.sendto(PING_REQUEST, ("127.0.0.1", port))
                data, _ = ping.recvfrom(1024)
                if data.startswith(PING_REPLY_PREFIX):
                    return None
            except OSError:
                time.sleep(0.05)
        return f"was not ready within {timeout} s"
    finally:
        ping.close()


def faketime_command(warp: float) -> list:
    """The prefix that runs a program at ``warp`` times real time (Debian's ``faketime``)."""
    exe = shutil.which("faketime")
    if exe is None:
        raise RuntimeError("warp != 1 needs faketime: apt-get install faketime libfaketime")
    return [exe, "-f", f"+0 x{warp:g}"]


class PrivateServer:
    """``/usr/games/bzfs`` on 127.0.0.1 and a free port; its log goes to a temporary file (``log()``)."""

    def __init__(
        self,
        *,
        world: Optional[str] = None,
        mode: str = "ctf",
        options: Sequence[str] = (),
        warp: float = 1.0,
        bzfs: str = BZFS,
        ready_timeout: float = 15.0,
    ):
        if not os.access(bzfs, os.X_OK):
            raise RuntimeError(f"{bzfs} is missing: install Debian's bzflag-server (or pass server='HOST:PORT')")
        if mode not in ("ctf", "ffa"):
            raise ValueError(f"mode must be 'ctf' or 'ffa', not {mode!r}")
        self.port = free_port()
        args = [bzfs, "-i", "127.0.0.1", "-p", str(self.port), "-j", "-ms", "3", "-d"]
        if mode == "ctf":
            args.append("-c")
        if world is not None:
            args += ["-world", str(world)]
        args += [str(o) for o in options]
        self.cmd = (faketime_command(warp) if warp != 1.0 else []) + args
        self._log = tempfile.NamedTemporaryFile(prefix="bzhead-env-bzfs-", suffix=".log", delete=False)
        # A process group of its own: under `faketime` bzfs is faketime's child, and `stop` ends the whole group.
        self.proc = subprocess.Popen(
            self.cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait_ready(ready_timeout)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def exit_code(self) -> Optional[int]:
        """None while it runs."""
        return self.proc.poll()

    def log(self) -> str:
        try:
            with open(self._log.name, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _wait_ready(self, timeout: float) -> None:
        error = wait_ready(self.proc, self.port, timeout)
        if error is not None:
            self.stop()
            raise RuntimeError(f"{self.cmd} {error}:\n{self.log()}")

    def _signal_group(self, sig: int) -> bool:
        """Sends `sig` to the server's process group (bzfs, and faketime when warped); False when none is left."""
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _group_alive(self) -> bool:
        return self._signal_group(0)

    def stop(self) -> None:
        """Ends bzfs (and its `faketime` parent) and waits for them, even when only one of the two was still up."""
        if self._signal_group(signal.SIGTERM):
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                self.proc.poll()
                if not self._group_alive():
                    break
                time.sleep(0.02)
            else:
                self._signal_group(signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        try:
            self._log.close()
            os.unlink(self._log.name)
        except OSError:
            pass
