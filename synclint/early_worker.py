"""One process, forked at the start of a run, that loads the checker while this one builds
the project index.

A warm re-check after an edit checks one file, but first needs the whole project's facts
(a few tenths of a second) and the checker's imports (libcst alone: about a third of a
second). Neither needs the other, so on a machine with a second core they can overlap:
the worker imports the checker while this process builds the facts, then checks the
file(s) it is given. A run that finds nothing to check kills it; a run with many files
to check uses the process pool instead (:mod:`synclint.parallel`), whose workers are
forked after this process has loaded the checker.

Only where ``fork`` is safe and cheap: Linux (macOS's and Windows' spawned processes
start a new interpreter, which costs more than the import saves), a process with one
thread (forking a process with threads may copy a held lock) and without torch (whose
native thread pools Python does not count), and one that has not loaded the checker
already (a language server, a test session or ``--watch`` after its first run has it:
nothing to gain).
Plain ``os.fork`` and pipes, not ``multiprocessing``, whose import alone costs a tenth of
what the worker saves.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from synclint.finding import Finding


def can_start(loaded_module: str) -> bool:
    """Whether an early worker could help a run in this process: see the module docstring
    (``loaded_module``: a module the checker imports; loaded already, there is nothing to gain)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1
            and loaded_module not in sys.modules and "torch" not in sys.modules)


class EarlyWorker:
    """A forked process that runs ``prepare()`` at once and then ``check(*item)`` for each
    item it is sent, in order. :meth:`check_all` sends work; :meth:`close` (always call it)
    ends the process whether it was used or not."""

    def __init__(self, prepare: Callable[[], None]) -> None:
        """Raises OSError when no process can be forked (the pipes are closed again)."""
        to_child, self._to_worker = os.pipe()
        self._from_worker, to_parent = os.pipe()
        try:
            self._pid = os.fork()
        except OSError:
            for fd in (to_child, self._to_worker, self._from_worker, to_parent):
                os.close(fd)
            raise
        if self._pid == 0:  # the worker: never returns
            os.close(self._to_worker)
            os.close(self._from_worker)
            _serve(to_child, to_parent, prepare)
        os.close(to_child)
        os.close(to_parent)
        self._outbox = os.fdopen(self._to_worker, "wb")
        self._inbox = os.fdopen(self._from_worker, "rb")
        self.closed = False

    def check_all(self, check: Callable[..., list[Finding]], work: Sequence[tuple],
                  one_done: Callable[[], None] | None = None) -> list[list[Finding] | None]:
        """``check(*item)`` for each item of ``work``, in its order (``check`` a module-level
        function); ``one_done()`` after each. Items the worker could not finish (it died:
        a crash in native code) are None, and the worker is closed."""
        results: list[list[Finding] | None] = [None] * len(work)
        for i, item in enumerate(work):
            try:
                pickle.dump((check, item), self._outbox, protocol=pickle.HIGHEST_PROTOCOL)
                self._outbox.flush()
                results[i] = pickle.load(self._inbox)
            except (OSError, EOFError, pickle.UnpicklingError):
                self.close()
                break
            if one_done is not None:
                one_done()
        return results

    def close(self) -> None:
        """End the worker (killed: it may be in the middle of its imports) and reap it."""
        if self.closed:
            return
        self.closed = True
        for stream in (self._outbox, self._inbox):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.kill(self._pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self._pid, 0)
        except ChildProcessError:
            pass


def _serve(inbox_fd: int, outbox_fd: int, prepare: Callable[[], None]) -> None:
    """The worker's life: prepare, then answer each job until the pipe closes. It leaves
    through ``os._exit``: never through the parent's exit handlers or its buffered output."""
    code = 0
    try:
        prepare()
        gc.freeze()  # the imports' objects: full collections no longer rescan them
        with os.fdopen(inbox_fd, "rb") as inbox, os.fdopen(outbox_fd, "wb") as outbox:
            while True:
                try:
                    check, item = pickle.load(inbox)
                except EOFError:
                    break
                pickle.dump(check(*item), outbox, protocol=pickle.HIGHEST_PROTOCOL)
                outbox.flush()
    except BaseException:  # (the parent sees the closed pipe and checks the file elsewhere)
        code = 1
    finally:
        os._exit(code)
