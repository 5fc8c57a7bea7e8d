"""Suite-wide guards: no network, stable terminal settings, golden-file updates."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Set before typer or rich are imported anywhere in the suite.
os.environ["_TYPER_FORCE_DISABLE_TERMINAL"] = "1"
os.environ["NO_COLOR"] = "1"
os.environ["COLUMNS"] = "100"
os.environ["TERM"] = "dumb"
os.environ.pop("TIKTOKEN_ENCODINGS_BASE", None)
# The parsed-vocabulary cache goes to a folder of this run, never to the user's ~/.cache.
# Removed when the process ends (each xdist worker makes and removes its own): 609 empty ones
# were found left in /tmp (red team L6).
_CACHE = tempfile.mkdtemp(prefix="harmony-doctor-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["HARMONY_DOCTOR_CACHE"] = _CACHE

# Property tests: fast by default (part of `make test`), many more examples on demand with
# HYPOTHESIS_PROFILE=deep. No deadline: timing is never asserted (CI machines vary).
settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NETWORK_ATTEMPTS: list[str] = []
# The one exception: tests that start a server of their own on 127.0.0.1 (moto's S3) talk to it
# while they hold the `loopback_only` fixture. Nothing else, not even `localhost`, is reached.
LOOPBACK = "127.0.0.1"
_LOOPBACK_ALLOWED: list[bool] = [False]
_real_getaddrinfo = socket.getaddrinfo
_real_create_connection = socket.create_connection


def _to_loopback(address: Any) -> bool:
    return _LOOPBACK_ALLOWED[0] and isinstance(address, tuple) and address[:1] == (LOOPBACK,)


class _NoNetwork(socket.socket):
    """A socket that refuses to leave the machine (AF_UNIX pairs are allowed)."""

    def connect(self, address: Any) -> None:
        if _to_loopback(address):
            return super().connect(address)
        NETWORK_ATTEMPTS.append(f"connect {address!r}")
        raise OSError("network access is blocked in the harmony-doctor test suite")

    def connect_ex(self, address: Any) -> int:
        if _to_loopback(address):
            return super().connect_ex(address)
        self.connect(address)
        return 1

    def sendto(self, *args: Any) -> int:
        NETWORK_ATTEMPTS.append("sendto")
        raise OSError("network access is blocked in the harmony-doctor test suite")


def _blocked_getaddrinfo(*args: Any, **kwargs: Any) -> Any:
    if _to_loopback(args[:1]):  # a numeric address: parsed, never looked up
        return _real_getaddrinfo(*args, **kwargs)
    NETWORK_ATTEMPTS.append(f"getaddrinfo {args[:2]!r}")
    raise OSError("name resolution is blocked in the harmony-doctor test suite")


def _blocked_create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
    # No socket is made: an unclosed one would be a ResourceWarning (an error in this suite).
    if _to_loopback(address):
        return _real_create_connection(address, *args, **kwargs)
    NETWORK_ATTEMPTS.append(f"connect {address!r}")
    raise OSError("network access is blocked in the harmony-doctor test suite")


socket.socket = _NoNetwork  # type: ignore[misc]
socket.getaddrinfo = _blocked_getaddrinfo
socket.create_connection = _blocked_create_connection


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="Rewrite tests/cases/*.out from the output."
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--update-golden"):
        os.environ["HD_UPDATE_GOLDEN"] = "1"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if NETWORK_ATTEMPTS:
        print(f"\nnetwork access attempted during the suite: {NETWORK_ATTEMPTS[:5]}")
        session.exitstatus = 1


@pytest.fixture(scope="module")
def loopback_only() -> Iterator[str]:
    """127.0.0.1 reachable for the module's tests (servers they start there), for as long as
    they run; every other address stays blocked."""
    _LOOPBACK_ALLOWED[0] = True
    try:
        yield LOOPBACK
    finally:
        _LOOPBACK_ALLOWED[0] = False


@pytest.fixture(scope="session")
def vocab() -> Iterator[Any]:
    from harmony_doctor.harmony.vocab import load_vocab

    yield load_vocab()
