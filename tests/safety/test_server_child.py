"""`harness server` killed with SIGKILL (no chance to clean up) takes its `mlflow server` child with it:
no MLflow process is left holding the port."""
from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from tracking_helpers import Server, free_port


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.slow  # end to end: `harness server` started for real (~10 s to answer), then SIGKILLed
def test_sigkilled_server_leaves_no_mlflow_child(tmp_path):
    port = free_port()
    server = Server(tmp_path, port).start()
    assert not port_free(port)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(30)
    deadline = time.monotonic() + 30
    while (group_alive(server.group) or not port_free(port)) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = group_alive(server.group)
    if alive:
        os.killpg(server.group, signal.SIGKILL)  # leave nothing behind, then fail
    assert not alive, "mlflow server outlived the SIGKILLed harness server"
    assert port_free(port), f"port {port} still held"
