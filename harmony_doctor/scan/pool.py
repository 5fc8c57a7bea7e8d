"""The worker processes of a scan's pool: they start with SIGINT left to the parent, end with
the parent however it ends, and are stopped at once on an interrupt or an error. A worker
killed under a task (SIGKILL: the out-of-memory killer) costs that task alone (`gather`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

PR_SET_PDEATHSIG = 1
T = TypeVar("T")


def gather(
    task: Callable[..., T],
    calls: Sequence[tuple[int, tuple[object, ...]]],
    jobs: int,
    make: Callable[[int], ProcessPoolExecutor],
    done: Callable[[int, T], None],
) -> dict[int, str]:
    """Run `task(*args)` for each (index, args) in a pool of `jobs` workers (`make(n)` makes
    one of n), handing each result to `done` as it ends. A worker that dies (SIGKILL from the
    out-of-memory killer) breaks the whole pool, and the pool cannot say whose task killed it:
    the calls not done are run again one at a time, each in a pool of one, so a worker that
    dies again dies under its own call, and every other call is done. Returns why each call
    whose worker died could not be done ({index: "a worker ... was killed by SIGKILL"})."""
    lost = _all_at_once(task, calls, jobs, make, done)
    died: dict[int, str] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for index, args in [c for c in calls if c[0] in lost]:
            if pool is None:
                pool = make(1)
            with starting():
                future = pool.submit(task, *args)
            workers = list((pool._processes or {}).values())
            if not _broke(future):
                done(index, future.result())
                continue
            died[index] = _death(workers)
            stop(pool)
            pool = None
    except BaseException:
        if pool is not None:
            stop(pool)
        raise
    if pool is not None:
        pool.shutdown()
    return died


def _all_at_once(
    task: Callable[..., T],
    calls: Sequence[tuple[int, tuple[object, ...]]],
    jobs: int,
    make: Callable[[int], ProcessPoolExecutor],
    done: Callable[[int, T], None],
) -> set[int]:
    """Every call in one pool of `jobs`; the indices of those a broken pool left undone."""
    from concurrent.futures import as_completed

    pool = make(jobs)
    lost: set[int] = set()
    try:
        with starting():  # workers start here: a signal is handled once they have started
            futures = {pool.submit(task, *args): index for index, args in calls}
        for future in as_completed(futures):
            if _broke(future):
                lost.add(futures[future])
            else:
                done(futures[future], future.result())  # a task's own error is raised
    except BaseException:
        stop(pool)
        raise
    if lost:
        stop(pool)
    else:
        pool.shutdown()
    return lost


def _broke(future: object) -> bool:
    """Whether a finished future failed because its pool broke (a worker died)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    assert isinstance(future, Future)
    return isinstance(future.exception(), BrokenProcessPool)


def _death(workers: Sequence[BaseProcess]) -> str:
    """Why a pool of one broke: its worker's end, the signal named."""
    ends = []
    for worker in workers:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            worker.join(timeout=5)
        code = worker.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                ends.append(f"was killed by {signal.Signals(-code).name}")
                continue
            ends.append(f"was killed by signal {-code}")
        elif code is not None:
            ends.append(f"exited with status {code}")
    end = ends[0] if ends else "ended"
    hint = " (the out-of-memory killer sends it)" if "SIGKILL" in end else ""
    return f"not read: the worker process reading it {end}{hint}"


def stop(pool: ProcessPoolExecutor) -> None:
    """End the workers now (an interrupt, an error): not after the file each is reading."""
    workers = list((pool._processes or {}).values())  # no public way before Python 3.14
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)  # the same
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        with contextlib.suppress(OSError, ValueError):
            worker.terminate()
    for worker in workers:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            worker.join(timeout=5)
    # The pool's own thread sees its workers gone and closes its wake-up pipe; wait for it,
    # or concurrent.futures' exit hook may write to the pipe as it closes (Python 3.11 checks
    # and writes without a lock: "Bad file descriptor" and a traceback at exit). The first
    # shutdown dropped the pool's reference to the thread, so a second one would not wait.
    if manager is not None:
        manager.join(timeout=10)


def start_tracker() -> None:
    """Start multiprocessing's resource tracker with SIGHUP blocked, which it inherits: it
    ignores SIGINT and SIGTERM itself, but a hang-up sent to the process group would end it
    before this process has released its semaphores (a warning and tracebacks on stderr). It
    ends when the last process holding its pipe (this one, the workers) ends."""
    from multiprocessing import resource_tracker

    with blocked("SIGHUP"):
        resource_tracker.ensure_running()


@contextlib.contextmanager
def blocked(*names: str) -> Iterator[None]:
    """Signals held back in this thread while the body runs, and delivered after it; the
    processes it starts inherit them blocked (for good: they never unblock them)."""
    numbers = {getattr(signal, n) for n in names if hasattr(signal, n)}
    if not hasattr(signal, "pthread_sigmask") or not numbers:
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, numbers)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, numbers)


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """Workers being started: SIGINT blocked in this thread (they inherit it blocked: Ctrl-C is
    the parent's to handle), and the Python handlers of SIGINT, SIGTERM and SIGHUP held back
    until they have started (`deferred`)."""
    with blocked("SIGINT"), deferred("SIGINT", "SIGTERM", "SIGHUP"):
        yield


@contextlib.contextmanager
def deferred(*names: str) -> Iterator[None]:
    """The Python handlers of these signals held back while the body runs: one landing then is
    handled as it leaves. A signal taken in the middle of starting a worker would leave one
    that never gets its instructions (it reads them from a pipe this process then closes, and
    says so with a traceback on the shared stderr) and that the pool does not know to stop.
    Only in the main thread (where Python runs its handlers), and only handlers written in
    Python (the default action and an ignored signal stay as they are)."""
    numbers = [getattr(signal, n) for n in names if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    saved = {n: h for n in numbers if callable(h := signal.getsignal(n))}
    for number in saved:
        signal.signal(number, lambda number, frame: arrived.append(number))
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        if arrived:
            saved[arrived[0]](arrived[0], None)


def worker_start(parent: int) -> None:
    """A worker ends with the process that started it, however that ends (SIGKILL included):
    Linux's parent-death signal, else a thread watching the parent. Ctrl-C is the parent's to
    handle: it stops the workers (SIGINT is blocked from their start where signals can be)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)


def _die_with_parent() -> bool:
    """Ask Linux for SIGKILL when the parent ends (prctl PR_SET_PDEATHSIG); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
