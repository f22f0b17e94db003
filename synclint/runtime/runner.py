"""Run a script or module as ``__main__`` under a detector, then report.

The program's exit code and exception pass through; the report is written in
a ``finally`` so that a failing or interrupted run still leaves one.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from types import TracebackType

from synclint.runtime.events import SiteTable, SyncSite
from synclint.runtime.join import JoinRow, files_involved, join, static_findings
from synclint.runtime.report import (
    build_report,
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


def run_program(
    target: str,
    args: Sequence[str] = (),
    *,
    module: bool = False,
    device: str = "auto",
    report_path: str | None = None,
    trace_path: str | None = None,
    static: bool = True,
) -> RunResult:
    """``synclint run``: execute ``target``, print the table, write the report."""
    from synclint.runtime.api import _Session, device_label, resolve_device
    from synclint.runtime.cuda import HostBlockProfiler

    resolved = resolve_device(device)
    label = device_label(resolved)
    rank = rank_from_env()
    entry_file = _entry_file(target, module)
    table = SiteTable()
    modules_before = set(sys.modules)
    result = RunResult(exit_code=1, device=label)
    try:
        profiler = None
        if resolved == "cuda" or trace_path:
            ranked_trace = ranked_path(trace_path, rank) if trace_path else None
            profiler = HostBlockProfiler(cuda=resolved == "cuda", trace_path=ranked_trace)
        with _Session(table, resolved):  # a watch that adds up instead of keeping each event
            if profiler is None:
                result.exit_code = _execute(target, args, module)
            else:
                with profiler:
                    result.exit_code = _execute(target, args, module)
        if profiler is not None:
            table.add_blocked_time(profiler.blocked_ms_by_line())
    finally:
        result.sites = table.sites
        if static:
            new_modules = [sys.modules.get(name) for name in set(sys.modules) - modules_before]
            roots = [os.getcwd()] + ([os.path.dirname(os.path.abspath(entry_file))] if entry_file else [])
            paths = files_involved(entry_file, result.sites, new_modules, roots)
            result.join = join(result.sites, static_findings(paths))
        if report_path:
            result.report_path = ranked_path(report_path, rank)
            write_report(result.report_path, build_report(label, result.sites, result.join, rank))
        sys.stdout.flush()  # the program's output first, then the summary
        print(render_table(label, result.sites, result.join, rank), file=sys.stderr)
    return result


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
