"""Forked worker processes that run one function over a stream of tasks, results in task order.

Why not ``multiprocessing.Pool``: on two cores the parent shares a core with the workers, and
the pool's three threads (feeding tasks, receiving results, watching the workers) contend with
the parent's writer for the interpreter lock, while a worker whose result the parent has not yet
drained from the pipe stands idle. Here the parent has no threads: each worker writes its
pickled result to a file in a private temporary directory and sends only the file's name, so it
goes straight on to its next task, which is already waiting in the task pipe. The parent reads
a result file when the caller wants that result. Between units a worker now spends 0.22-0.27 s
of a 2 GiB run instead of 0.32-0.40 s, and the parent 0.1-0.2 CPU-s less
(docs/performance.md).

A worker that dies (killed, out of memory) ends the run with WorkersFailed instead of the
pool's endless wait; an exception in the function is raised again in the parent.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable, Iterator, NoReturn

from ..core.exceptions import Terminated

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class WorkersFailed(RuntimeError):
    """The workers could not run: one died, or their temporary directory cannot be made or
    written (``environment``: the machine's doing, not the tool's)."""

    def __init__(self, message: str, environment: bool = False):
        super().__init__(message)
        self.environment = environment

    def __reduce__(self):
        return (WorkersFailed, (str(self), self.environment))


class WorkerError(RuntimeError):
    """An exception raised in a worker that could not be sent back as itself."""


class Workers:
    """``count`` forked processes running ``function``; use as a context manager.

    Tasks go through one pipe that every worker reads from (so whichever is free takes the next,
    and the last tasks spread evenly), results through another; ``2 * count`` tasks are out at a
    time, so each worker finds its next task waiting while the parent is busy elsewhere.
    """

    def __init__(self, count: int, function: Callable[[Any], Any]):
        try:
            self._directory = tempfile.mkdtemp(prefix="rebalance-doctor-")
        except OSError as exc:
            raise WorkersFailed(f"cannot make a temporary directory for the workers' results in "
                                f"{tempfile.gettempdir()} ({exc.strerror or exc}); set TMPDIR, "
                                f"or run with --jobs 1", environment=True) from None
        self._finished = False
        self._closed = False
        # Removed however the run ends: a signal or an error may leave the generator that
        # would close the workers suspended, and the CLI leaves without collecting it.
        atexit.register(self.close)
        self._processes: list[multiprocessing.process.BaseProcess] = []
        context = multiprocessing.get_context("fork")
        self._task_reader, self._task_writer = context.Pipe(duplex=False)
        self._result_reader, self._result_writer = context.Pipe(duplex=False)
        locks = context.Lock(), context.Lock()  # one worker at a time takes a task, sends a result
        try:
            for _ in range(count):
                process = context.Process(
                    target=_serve, daemon=True,
                    args=(self._task_reader, self._result_writer, (self._task_writer, self._result_reader),
                          locks, function, self._directory))
                process.start()
                self._processes.append(process)
        except BaseException:
            self.close()
            raise
        # Only the workers read tasks and write results: with the parent's copies of these ends
        # closed, a send to workers that are all gone fails instead of filling the pipe.
        self._task_reader.close()
        self._result_writer.close()
        self._out_at_once = 2 * count
        self._tasks: Iterator | None = None  # None once every task has been handed out
        self._started = False
        self._handed = self._received = 0
        self._done: dict[int, tuple[str | None, tuple[bytes, str | None] | None]] = {}

    def start(self, tasks: Iterable) -> None:
        """Hand out the first tasks (the caller may do other work while the workers start)."""
        self._tasks = iter(tasks)
        self._started = True
        try:
            self._feed()
        except BaseException:  # the tasks themselves failed (planning them reads the files)
            self.close()
            raise

    def results(self) -> Iterator:
        """The function's result for each task, in the order of the tasks."""
        if not self._started:
            raise RuntimeError("start() the workers first")
        wanted = 0
        sentinels = {process.sentinel: process for process in self._processes}
        while wanted < self._handed or self._tasks is not None:
            if wanted in self._done:
                yield self._load(*self._done.pop(wanted))
                wanted += 1
                continue
            for ready in wait([self._result_reader, *sentinels]):
                if ready is self._result_reader:
                    try:
                        index, path, error = self._result_reader.recv()
                    except EOFError:  # every worker is gone
                        self._dead(self._processes[0])
                    self._done[index] = (path, error)
                    self._received += 1
                    self._feed()
                elif not self._result_reader.poll():  # what it sent before it died comes first
                    self._dead(sentinels[ready])  # type: ignore[index]
        self._finished = True

    @staticmethod
    def _dead(process: multiprocessing.process.BaseProcess) -> NoReturn:
        process.join(5)  # its sentinel closes a moment before it can be reaped
        if process.exitcode is not None and -process.exitcode in _STOP_SIGNALS:
            raise Terminated(-process.exitcode)   # stopped with the run (a group signal), not a crash
        raise WorkersFailed(f"a worker process ended unexpectedly (exit code {process.exitcode}); "
                            f"was it killed, or out of memory?")

    def _feed(self) -> None:
        while self._tasks is not None and self._handed - self._received < self._out_at_once:
            try:
                task = next(self._tasks)
            except StopIteration:
                self._tasks = None
                return
            self._task_writer.send((self._handed, task))
            self._handed += 1

    def _load(self, path: str | None, error: tuple[bytes, str | None] | None) -> Any:
        if error is not None:
            data, remote = error
            if remote is None:
                raise pickle.loads(data)
            raise pickle.loads(data) from WorkerError(f"in the worker:\n{remote}")
        assert path is not None
        with open(path, "rb") as stream:
            data = stream.read()
        os.unlink(path)
        return pickle.loads(data)

    def close(self) -> None:
        """Stop the workers: once they have read the request to stop when every result was
        read, at once when some are still due (an error, or the caller stopped reading)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._finished:
            try:
                for _ in self._processes:
                    self._task_writer.send(None)
            except OSError:  # the workers are gone already
                pass
        else:
            for process in self._processes:
                process.terminate()
        for process in self._processes:
            process.join(1)
            if process.is_alive():
                process.kill()
                process.join()
        for pipe in (self._task_reader, self._task_writer, self._result_reader, self._result_writer):
            pipe.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _serve(tasks: Connection, results: Connection, parents_ends: tuple[Connection, ...], locks,
           function: Callable[[Any], Any], directory: str) -> None:
    # Ctrl-C reaches the whole process group; the parent stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stop in (signal.SIGTERM, signal.SIGHUP):   # not the parent's handlers: a worker just ends
        signal.signal(stop, signal.SIG_DFL)
    for end in parents_ends:  # so that a parent that dies leaves this worker an end of file
        end.close()
    take, send = locks
    while True:
        try:
            with take:
                message = tasks.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if message is None:
            return
        index, task = message
        try:
            data = pickle.dumps(function(task), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # raised again in the parent
            reply = (index, None, _picklable(exc))
        else:
            path = os.path.join(directory, str(index))
            try:
                with open(path, "wb") as stream:
                    stream.write(data)
                reply = (index, path, None)
            except OSError as exc:
                failed = WorkersFailed(f"cannot write a worker's results to {directory} "
                                       f"({exc.strerror or exc}); set TMPDIR, or run with --jobs 1", environment=True)
                reply = (index, None, (pickle.dumps(failed), None))
        try:
            with send:
                results.send(reply)
        except OSError:   # the parent is gone (stopped by a signal): nothing to say, no traceback
            return


def _picklable(exc: Exception) -> tuple[bytes, str]:
    """The exception pickled (or, when it cannot be, a WorkerError with its text), and its
    traceback in the worker, which pickling drops."""
    remote = "".join(traceback.format_exception(exc))
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
    except Exception:
        data = pickle.dumps(WorkerError(remote))
    return data, remote
