"""A Mosquitto broker on this machine, for ``club-sim``, ``bench/club.py`` and the tests.

The real broker (Debian's ``mosquitto``), never a fake: a generated config
file, a free 127.0.0.1 port kept across restarts, persistence on, so that a
broker stopped and started again keeps the retained state and the queued
messages of persistent subscribers, as a hall's broker does.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

MOSQUITTO = "/usr/sbin/mosquitto"
START_S = 10.0


def mosquitto_path() -> str | None:
    return shutil.which("mosquitto") or (MOSQUITTO if os.access(MOSQUITTO, os.X_OK) else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mosquitto:
    """``mosquitto -c CONF`` on ``127.0.0.1:port``; :meth:`stop` and :meth:`start` again at will."""

    def __init__(
        self,
        folder: str | Path | None = None,
        port: int | None = None,
        auth: tuple[Path, Path] | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """``auth``: (password file, ACL file): no anonymous client, each user its topics.
        ``tls``: (certificate, key): the listener speaks TLS only (``mqtts://``)."""
        path = mosquitto_path()
        if path is None:
            raise FileNotFoundError("mosquitto is not installed (apt-get install mosquitto)")
        self.binary = path
        self.folder = Path(folder or tempfile.mkdtemp(prefix="mosquitto-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.config = self.folder / "mosquitto.conf"
        lines = [f"listener {self.port} 127.0.0.1"]
        if tls:
            lines += [f"certfile {tls[0]}", f"keyfile {tls[1]}"]
        if auth:
            lines += ["allow_anonymous false", f"password_file {auth[0]}", f"acl_file {auth[1]}"]
        else:
            lines += ["allow_anonymous true"]
        lines += [
            f"user {getpass.getuser()}",  # as root it would drop to `mosquitto`: no files
            "persistence true",
            f"persistence_location {self.folder}/",
            "autosave_interval 1",
            "max_queued_messages 100000",
            "max_inflight_messages 100",
            f"log_dest file {self.folder}/mosquitto.log",
        ]
        self.config.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None
        self.tls = tls is not None

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "-c", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {self.proc.returncode} ({self.config})")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not listen on {self.port} within {START_S:g} s")

    def stop(self) -> None:
        """An orderly stop (SIGTERM): mosquitto saves its sessions and retained messages."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
