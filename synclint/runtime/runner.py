"""Run a script or module as ``__main__`` under a detector, then report.

The program's exit code and exception pass through; the report is written in
a ``finally`` so that a failing, interrupted (SIGINT) or terminated (SIGTERM)
run still leaves one. Threads the program starts are watched too.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib.util import find_spec
from types import TracebackType
from typing import Any

from synclint.runtime.ratchet import check_budget, improvements, render_budget_check, write_budget
from synclint.runtime.events import SiteTable, SyncEvent, SyncSite
from synclint.runtime.join import JoinRow, files_involved, join, static_findings
from synclint.runtime.report import (
    add_sync_markers,
    build_report,
    mark_graph_breaks,
    rank_from_env,
    ranked_path,
    render_table,
    write_report,
)

INTERRUPTED_EXIT_CODE = 130  # what a shell reports for SIGINT


@dataclass
class RunResult:
    exit_code: int
    device: str
    sites: list[SyncSite] = field(default_factory=list)
    join: list[JoinRow] = field(default_factory=list)
    report_path: str | None = None
    steps: int = 0
    budget_failures: list[str] = field(default_factory=list)


class _RunSink:
    """The run's sink: adds up events (from every thread) and applies ``--allow``."""

    def __init__(self, table: SiteTable, allow: Sequence[str]) -> None:
        self.table = table
        self.times: list[tuple[int, SyncEvent]] = []
        self._allow = _parse_allow(allow)

    def record(self, event: SyncEvent) -> None:
        if self._allow and not event.allowed and (_real(event.path), event.line) in self._allow:
            event = replace(event, allowed=True)
        self.table.record(event)
        self.times.append((time.time_ns(), event))


def _parse_allow(allow: Sequence[str]) -> set[tuple[str, int]]:
    entries = set()
    for item in allow:
        path, sep, line = item.rpartition(":")
        if not sep or not line.isdigit():
            raise ValueError(f"--allow expects FILE:LINE, not {item!r}")
        entries.add((_real(path), int(line)))
    return entries


def _real(path: str) -> str:
    return path if path.startswith("<") else os.path.normcase(os.path.realpath(path))


def run_program(
    target: str,
    args: Sequence[str] = (),
    *,
    module: bool = False,
    device: str = "auto",
    report_path: str | None = None,
    trace_path: str | None = None,
    static: bool = True,
    allow: Sequence[str] = (),
    budget_path: str | None = None,
    write_budget_path: str | None = None,
) -> RunResult:
    """``synclint run``: execute ``target``, print the table, write the report."""
    from synclint.runtime import simcuda
    from synclint.runtime.api import _Session, device_label, resolve_device
    from synclint.runtime.cuda import HostBlockProfiler

    resolved = resolve_device(device)
    label = device_label(resolved)
    rank = rank_from_env()
    entry_file = _entry_file(target, module)
    table = SiteTable()
    sink = _RunSink(table, allow)
    modules_before = set(sys.modules)
    result = RunResult(exit_code=1, device=label)
    steps = _StepCounter()
    profiler = None
    try:
        if resolved == "cpu":
            simcuda.install()  # the program sees a CUDA device; see simcuda
        if resolved == "cuda" or trace_path:
            ranked_trace = ranked_path(trace_path, rank) if trace_path else None
            profiler = HostBlockProfiler(cuda=resolved == "cuda", trace_path=ranked_trace)
        with _Session(sink, resolved), _sessions_in_new_threads(sink, resolved), steps, _terminate_as_exit():
            if profiler is None:
                result.exit_code = _execute(target, args, module)
            else:
                with profiler:
                    result.exit_code = _execute(target, args, module)
        if profiler is not None:
            table.add_blocked_time(profiler.blocked_ms_by_line_and_code())
    finally:
        if resolved == "cpu":
            simcuda.uninstall()
        result.sites = table.sites
        result.steps = steps.count
        mark_graph_breaks(result.sites)
        if static:
            new_modules = [sys.modules.get(name) for name in set(sys.modules) - modules_before]
            roots = [os.getcwd()] + ([os.path.dirname(os.path.abspath(entry_file))] if entry_file else [])
            paths = files_involved(entry_file, result.sites, new_modules, roots)
            hot = [site for site in result.sites if not site.setup]  # moving a model is cold code
            result.join = join(hot, static_findings(paths))
        if profiler is not None and profiler.trace_path and os.path.exists(profiler.trace_path):
            add_sync_markers(profiler.trace_path, sink.times)
        if report_path:
            result.report_path = ranked_path(report_path, rank)
            write_report(
                result.report_path, build_report(label, result.sites, result.join, rank, result.steps)
            )
        sys.stdout.flush()  # the program's output first, then the summary
        print(render_table(label, result.sites, result.join, rank, steps=result.steps), file=sys.stderr)
        if write_budget_path:
            write_budget(ranked_path(write_budget_path, rank), result.sites)
            print(f"synclint: wrote the sync budget to {write_budget_path}", file=sys.stderr)
        if budget_path:
            ranked_budget = ranked_path(budget_path, rank)
            result.budget_failures = check_budget(ranked_budget, result.sites)
            print(render_budget_check(budget_path, result.budget_failures), file=sys.stderr)
            tighter = improvements(ranked_budget, result.sites)
            if tighter:
                print("synclint: fewer syncs than budgeted (--write-budget locks it in):", file=sys.stderr)
                print("\n".join(f"  {line}" for line in tighter), file=sys.stderr)
            if result.budget_failures and result.exit_code == 0:
                result.exit_code = BUDGET_EXIT_CODE
    return result


BUDGET_EXIT_CODE = 1


class _StepCounter:
    """Counts optimizer steps (a global optimizer hook) so the table can say "per step"."""

    def __init__(self) -> None:
        self.count = 0
        self._handle: Any = None

    def __enter__(self) -> _StepCounter:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handle = register_optimizer_step_post_hook(self._hook)
        return self

    def _hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.count += 1

    def __exit__(self, *exc_info: object) -> None:
        self._handle.remove()


@contextmanager
def _sessions_in_new_threads(sink: _RunSink, device: str) -> Iterator[None]:
    """Every thread the program starts records into the run's table too.

    Torch's modes are thread-local, so each new thread opens its own session
    (``Thread._bootstrap_inner`` runs ``run()`` for every thread, subclasses too).
    """
    from synclint.runtime.api import _Session

    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_inner(thread: threading.Thread) -> None:
        try:
            session = _Session(sink, device)
            session.__enter__()
        except Exception:  # noqa: BLE001 - never break the program's thread
            original(thread)
            return
        try:
            original(thread)
        finally:
            session.__exit__(None, None, None)

    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]
    try:
        yield
    finally:
        threading.Thread._bootstrap_inner = original  # type: ignore[attr-defined]


TERMINATED_EXIT_CODE = 128 + signal.SIGTERM


@contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM ends the program like ``sys.exit(143)``, so the report is still written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        raise SystemExit(TERMINATED_EXIT_CODE)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _entry_file(target: str, module: bool) -> str | None:
    if not module:
        return os.path.abspath(target)
    sys.path.insert(0, os.getcwd())  # where `python -m` looks first
    try:
        spec = find_spec(target)
    except (ImportError, ValueError):
        return None
    finally:
        sys.path.remove(os.getcwd())
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    if spec.submodule_search_locations:  # a package runs its __main__
        main = os.path.join(os.path.dirname(spec.origin), "__main__.py")
        return main if os.path.isfile(main) else None
    return spec.origin


def _execute(target: str, args: Sequence[str], module: bool) -> int:
    """Run like ``python SCRIPT ARGS`` / ``python -m MODULE ARGS``; return its exit code."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [target, *args]
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(target)))
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
        return 0
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", file=sys.stderr)
        return INTERRUPTED_EXIT_CODE
    except BaseException as exc:  # noqa: BLE001 - the program's own failure, reported like Python does
        traceback.print_exception(type(exc), exc, _user_traceback(exc.__traceback__), file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """Drop synclint's and runpy's frames from the top of the program's traceback."""
    from synclint.runtime.frames import is_internal

    while tb is not None and tb.tb_next is not None and is_internal(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb
