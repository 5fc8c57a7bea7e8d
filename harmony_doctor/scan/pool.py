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
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.connection import Connection
    from multiprocessing.context import SpawnContext

PR_SET_PDEATHSIG = 1
T = TypeVar("T")


def gather(
    task: Callable[..., T],
    calls: Sequence[tuple[int, tuple[object, ...]]],
    jobs: int,
    context: SpawnContext,
    done: Callable[[int, T], None],
) -> dict[int, str]:
    """Run `task(*args)` for each (index, args) in a pool of `jobs` workers (started in
    `context`, by `worker_start`), handing each result to `done` as it ends. A worker that
    dies (SIGKILL from the out-of-memory killer) breaks the whole pool, and the pool cannot
    say whose task killed it: the calls not done are run again one at a time, each in a
    worker process of its own, so a worker that dies again dies under its own call, with its
    signal known, and every other call is done. Returns why each call whose worker died could
    not be done ({index: "... was killed by SIGKILL ..."}); a task's own error is raised."""
    from concurrent.futures import ProcessPoolExecutor

    hush_broken_pools()
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=worker_start, initargs=(os.getpid(),)
    )
    lost = _all_at_once(task, calls, pool, done)
    died: dict[int, str] = {}
    for index, args in [c for c in calls if c[0] in lost]:
        ended = _alone(task, args, context)
        if isinstance(ended, str):
            died[index] = ended
        else:
            done(index, ended[0])
    return died


def _all_at_once(
    task: Callable[..., T],
    calls: Sequence[tuple[int, tuple[object, ...]]],
    pool: ProcessPoolExecutor,
    done: Callable[[int, T], None],
) -> set[int]:
    """Every call in one pool; the indices of those a broken pool left undone."""
    from concurrent.futures import as_completed

    lost: set[int] = set()
    try:
        futures = {}
        with starting():  # workers start here: a signal is handled once they have started
            for index, args in calls:
                submitted = _submit(pool, task, args)
                if submitted is None:  # broke as it was given work: the rest go with it
                    lost.add(index)
                else:
                    futures[submitted] = index
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


def _submit(
    pool: ProcessPoolExecutor, task: Callable[..., T], args: tuple[object, ...]
) -> Future[T] | None:
    """The call given to the pool, or None when the pool broke before it took it: submit
    says so (BrokenProcessPool), or, when the pool's thread is closing the broken pool's
    queue as submit starts a worker, fails to hand the worker that queue (OSError "handle is
    closed", a race in Python's pool; a failure of this machine's own shows again when the
    call runs alone)."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool.submit(task, *args)
    except (BrokenProcessPool, OSError):
        return None


def _broke(future: Future[T]) -> bool:
    """Whether a finished future failed because its pool broke (a worker died)."""
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(future.exception(), BrokenProcessPool)


def _alone(
    task: Callable[..., T], args: tuple[object, ...], context: SpawnContext
) -> tuple[T] | str:
    """One call in a worker process of its own, which this process alone waits for (a pool's
    thread would reap it first, and its end would be unknown): (its result,), or why it has
    none (its worker died). A task's own error is raised here."""
    receiving, sending = context.Pipe(duplex=False)
    with starting():
        worker = context.Process(
            target=_answer, args=(sending, os.getpid(), task, args), daemon=True
        )
        worker.start()
    sending.close()
    try:
        try:
            failed, value = receiving.recv()
        except EOFError:  # it died before it answered
            worker.join()
            return _death(worker.exitcode)
        worker.join()
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            worker.kill()
            worker.join(timeout=5)
        raise
    finally:
        receiving.close()
    if failed:
        raise value
    return (value,)


def _answer(
    sending: Connection, parent: int, task: Callable[..., T], args: tuple[object, ...]
) -> None:
    """In a worker of its own: the call's (failed, result or error), sent back."""
    worker_start(parent)
    try:
        answer: tuple[bool, object] = (False, task(*args))
    except Exception as exc:
        answer = (True, exc)
    sending.send(answer)
    sending.close()


def _death(code: int | None) -> str:
    """Why a call has no result: how its worker ended, the signal named."""
    if code is not None and code < 0:
        try:
            end = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            end = f"was killed by signal {-code}"
    else:
        end = f"exited with status {code}" if code is not None else "ended"
    hint = " (the out-of-memory killer sends it)" if code == -signal.SIGKILL else ""
    return f"not read: the worker process reading it {end}{hint}"


def hush_broken_pools() -> None:
    """Drop what a pool's own thread raises while it closes a pool that broke (Python 3.11's
    ProcessPoolExecutor can fail there when `stop` shuts the pool down as a killed worker
    breaks it: a traceback on stderr for a failure already handled, since the calls the
    pool left undone are run again one at a time). Any other thread's exception goes to the
    hook there was. Installed once."""
    previous = threading.excepthook
    if getattr(previous, "hushes_broken_pools", False):
        return

    def hook(args: threading.ExceptHookArgs) -> None:
        reference = getattr(args.thread, "executor_reference", None)  # the pool's thread
        if callable(reference):
            executor = reference()
            if executor is None or getattr(executor, "_broken", False):
                return
        previous(args)

    hook.hushes_broken_pools = True  # type: ignore[attr-defined]
    threading.excepthook = hook


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
