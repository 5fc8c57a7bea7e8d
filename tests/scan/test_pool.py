"""The pool's workers start with the parent's signals held back (scan/pool.py)."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

import pytest

from harmony_doctor.scan.pool import deferred


class _Landed(Exception):
    pass


def _raise(number: int, frame: FrameType | None) -> None:
    raise _Landed(number)


def test_a_signal_while_workers_start_is_handled_as_the_start_ends() -> None:
    saved = signal.signal(signal.SIGUSR1, _raise)
    steps = []
    try:
        with pytest.raises(_Landed) as landed, deferred("SIGUSR1"):
            os.kill(os.getpid(), signal.SIGUSR1)
            os.kill(os.getpid(), signal.SIGUSR1)  # a second one: handled once
            steps.append("the body ran to its end")
        assert landed.value.args == (signal.SIGUSR1,)
        assert steps == ["the body ran to its end"]
        assert signal.getsignal(signal.SIGUSR1) is _raise  # the handler is back
        with deferred("SIGUSR1"):
            steps.append("nothing landed")  # and nothing is raised
    finally:
        signal.signal(signal.SIGUSR1, saved)


def test_only_python_handlers_in_the_main_thread_are_held() -> None:
    saved = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    try:
        with deferred("SIGUSR1"):  # ignored stays ignored
            assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGUSR1)
        signal.signal(signal.SIGUSR1, _raise)
        seen = []

        def elsewhere() -> None:
            with deferred("SIGUSR1"):  # no handler can be set from another thread
                seen.append(signal.getsignal(signal.SIGUSR1))

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        assert seen == [_raise]
    finally:
        signal.signal(signal.SIGUSR1, saved)


def test_stopping_waits_for_the_pools_own_thread() -> None:
    """Its wake-up pipe must be closed before the process exits: Python 3.11's exit hook writes
    to it without a lock ("Bad file descriptor" and a traceback, seen after a SIGTERM)."""
    import multiprocessing
    import time
    from concurrent.futures import ProcessPoolExecutor

    from harmony_doctor.scan.pool import stop

    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    future = pool.submit(time.sleep, 30)
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    assert manager is not None and manager.is_alive()
    stop(pool)
    assert not manager.is_alive()
    assert future.cancelled() or future.exception() is not None
