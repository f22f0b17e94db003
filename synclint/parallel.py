"""Run a per-file check in worker processes; results come back in input order.

The biggest files are submitted first so that one large file does not finish
alone at the end. If a worker process dies (a crash in native code), the files
it left unfinished are retried one per fresh process, and a file that kills
its process again gets an SL000 entry instead of stopping the run.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from synclint.config import Settings
from synclint.finding import Finding, error_finding

Check = Callable[..., list[Finding]]


def map_in_processes(
    check: Check,
    work: list[tuple],
    jobs: int,
    one_done: Callable[[], None] | None = None,
    prepare: Callable[[], None] | None = None,
) -> list[list[Finding]]:
    """``check(*item)`` for each item of ``work`` (its first element the path), in its order;
    ``one_done()`` after each; ``prepare()`` (a module-level function: imports the check
    needs) once in every worker."""
    if prepare is not None:
        prepare()  # here first: forked workers then start with it done (one import, not one per worker)
    paths = [item[0] for item in work]
    results: list[list[Finding] | None] = [None] * len(paths)
    order = sorted(range(len(paths)), key=lambda i: _size(paths[i]), reverse=True)
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_prepare_worker, initargs=(prepare,)) as pool:
            futures: dict[int, Future] = {i: pool.submit(check, *work[i]) for i in order}
            for i, future in futures.items():
                try:
                    results[i] = future.result()
                except BrokenProcessPool:
                    break
                if one_done is not None:
                    one_done()
    except BrokenProcessPool:
        pass
    for i, result in enumerate(results):
        if result is None:
            results[i] = in_a_fresh_process(check, *work[i])
            if one_done is not None:
                one_done()
    return results  # type: ignore[return-value]


def _prepare_worker(prepare: Callable[[], None] | None) -> None:
    """Run ``prepare`` (already done in a forked worker), then move every import-time
    object out of the collector's sight: full collections no longer rescan them."""
    if prepare is not None:
        prepare()
    gc.freeze()


def in_a_fresh_process(check: Check, path: str, *rest) -> list[Finding]:
    """``check(path, *rest)`` in a process of its own; an SL000 entry if it crashes there too."""
    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            return pool.submit(check, path, *rest).result()
    except BrokenProcessPool:
        return [error_finding(path, "the checker's process crashed on this file")]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
