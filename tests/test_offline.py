"""The suite's no-network guard (tests/conftest.py) really blocks, and really records."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests import conftest


@pytest.fixture
def attempts() -> Iterator[list[str]]:
    """The attempts this test makes; removed afterwards so the session does not fail."""
    before = len(conftest.NETWORK_ATTEMPTS)
    new: list[str] = []
    yield new
    new.extend(conftest.NETWORK_ATTEMPTS[before:])
    del conftest.NETWORK_ATTEMPTS[before:]


def test_guard_is_installed() -> None:
    assert socket.socket is conftest._NoNetwork


def test_create_connection_is_blocked_and_recorded(attempts: list[str]) -> None:
    with pytest.raises(OSError, match="blocked"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)
    assert conftest.NETWORK_ATTEMPTS[-1] == "connect ('192.0.2.1', 443)"


def test_name_resolution_connect_and_sendto_are_blocked(attempts: list[str]) -> None:
    with pytest.raises(OSError, match="blocked"):
        socket.getaddrinfo("openaipublic.blob.core.windows.net", 443)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(OSError):
        sock.connect(("192.0.2.1", 80))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(OSError):
        sock.sendto(b"x", ("192.0.2.1", 53))
    recorded = conftest.NETWORK_ATTEMPTS[-3:]
    assert recorded[0].startswith("getaddrinfo") and recorded[1].startswith("connect")
    assert recorded[2] == "sendto"


def test_urllib_download_fails_like_an_offline_machine(attempts: list[str]) -> None:
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen("https://openaipublic.blob.core.windows.net/encodings/x", timeout=1)
    assert any("getaddrinfo" in a or "connect" in a for a in conftest.NETWORK_ATTEMPTS)


def test_local_socket_pairs_still_work() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"ping")
        assert right.recv(4) == b"ping"


def test_loopback_stays_blocked_outside_loopback_only(attempts: list[str]) -> None:
    # conftest.loopback_only opens 127.0.0.1 only for the module that asks for it.
    assert not conftest._LOOPBACK_ALLOWED[0]
    with pytest.raises(OSError, match="blocked"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert conftest.NETWORK_ATTEMPTS[-1] == "connect ('127.0.0.1', 9)"


def test_loopback_only_lets_nothing_else_through(attempts: list[str]) -> None:
    before = len(conftest.NETWORK_ATTEMPTS)
    conftest._LOOPBACK_ALLOWED[0] = True
    try:
        for host in ("localhost", "127.0.0.2", "192.0.2.1", "::1"):
            with pytest.raises(OSError, match="blocked"):
                socket.create_connection((host, 9), timeout=1)
            with pytest.raises(OSError, match="blocked"):
                socket.getaddrinfo(host, 9)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            with pytest.raises(OSError, match="blocked"):
                sock.connect(("10.0.0.1", 80))
            # 127.0.0.1 itself is reached (nothing listens on port 9: refused, not blocked).
            assert sock.connect_ex(("127.0.0.1", 9)) != 0
    finally:
        conftest._LOOPBACK_ALLOWED[0] = False
    recorded = conftest.NETWORK_ATTEMPTS[before:]
    assert len(recorded) == 9 and not any("127.0.0.1" in a for a in recorded)
