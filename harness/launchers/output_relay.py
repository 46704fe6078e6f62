"""Worker processes' output, printed by their driver: each worker's `sys.stdout` and `sys.stderr` send whole
lines over its own connection to the driver (`RelayServer`), which prints them through the sweep's console
(harness/launchers/sweep_console.py). One connection per worker, so no lock is shared between processes: a
worker killed mid-line cannot block the others. Output written below Python (faulthandler) still goes to
the terminal directly."""
from __future__ import annotations

import os
import sys
import threading
from multiprocessing import current_process
from multiprocessing.connection import Client, Listener
from typing import List, Optional

from harness.launchers.sweep_console import LineRelay, SweepConsole


def relay_output(address: str, authkey: bytes) -> None:
    """In a worker (the pool's initializer): its Python-level output goes to the driver at `address`."""
    connection = Client(address, authkey=authkey)
    lock = threading.Lock()  # the worker's threads (the loop, checkpoint writers, heartbeats) share the connection

    def send(name: str, text: str) -> None:
        try:
            with lock:
                connection.send((name, text))
        except (OSError, ValueError):  # the driver stopped reading (it is dying): the terminal, directly
            os.write(2 if name == "err" else 1, text.encode(errors="replace"))

    sys.stdout = LineRelay("out", send, fileno=1)
    sys.stderr = LineRelay("err", send, fileno=2)


class RelayServer:
    """In the driver: accepts each worker's connection and prints what it sends on `console`."""

    def __init__(self, console: SweepConsole) -> None:
        self.console = console
        self.authkey = bytes(current_process().authkey)
        self._listener = Listener(family="AF_UNIX", authkey=self.authkey)
        self._readers: List[threading.Thread] = []
        self._closed = False
        self._accepting = threading.Thread(target=self._accept, name="output-relay", daemon=True)
        self._accepting.start()

    @property
    def address(self) -> str:
        return self._listener.address

    def initializer(self) -> tuple:
        """(initializer, initargs) for a process pool whose workers relay their output here."""
        return relay_output, (self.address, self.authkey)

    def _accept(self) -> None:
        while True:
            try:
                connection = self._listener.accept()
            except (OSError, EOFError):  # closed (`close`), or a peer that failed the handshake
                if self._closed:  # no more workers
                    return
                continue
            reader = threading.Thread(target=self._read, args=(connection,), name="output-relay-reader",
                                      daemon=True)
            reader.start()
            self._readers.append(reader)

    def _read(self, connection) -> None:
        with connection:
            while True:
                try:
                    name, text = connection.recv()
                except (EOFError, OSError):  # the worker ended (or died): all it sent has been read
                    return
                self.console.line(name, text)

    def close(self, timeout: Optional[float] = 5.0) -> None:
        """Once the workers have ended: print what they sent last, stop accepting."""
        for reader in list(self._readers):
            reader.join(timeout)
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass
