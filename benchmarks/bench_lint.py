"""Wall time of synclint (cold and warm cache), TorchFix, Fixit and ruff on one tree.

    python benchmarks/bench_lint.py DIR [--jobs N] [--repeat N] [--torchfix CMD] [--fixit CMD] [--ruff CMD]
                                        [--skip-others] [--project-files N]

Every synclint run includes the project index (built from the whole project of
DIR: for torch's ``nn``, all of the installed ``torch`` package). ``--project-files
N`` (default 300) also times the incremental cases on a project of N files copied
from DIR: the warm re-check after editing one file (a comment appended, which
changes no summary of the index but may change what the project's text names, so
the facts are built again; then a statement added on a new first line, which
moves every line and changes the file's summary), and ``synclint check
one_file.py`` with a warm index.

Every tool runs as a subprocess on the same directory in the same session, so
the ratios compare like with like. Each timing is the median of ``--repeat``
runs (cold synclint, TorchFix, Fixit, ruff, and each incremental case), after
one untimed run that writes Python's bytecode caches; the load average is
printed before and after, since a shared machine moves every figure. TorchFix and Fixit are found on PATH (or in
/tmp/bench-venv/bin) unless given; install them in a separate virtual
environment (``python -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip
install torchfix fixit``) so they do not change this environment's libcst.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = Path("/tmp/bench-venv/bin")


def count(directory: Path) -> tuple[int, int]:
    files = [p for p in directory.rglob("*.py") if p.is_file()]
    lines = 0
    for file in files:
        with open(file, "rb") as handle:
            lines += sum(1 for _ in handle)
    return len(files), lines


def tool_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a timed tool, with ``extra`` set and bytecode caches
    allowed: with ``PYTHONDONTWRITEBYTECODE`` set (as some shells and CI images do), every run of a
    tool installed from source would compile its modules again (0.4 s of a 0.5 s warm run
    seen here), which an installed tool (its bytecode written by pip) never does."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """Wall seconds, exit status and CPU seconds of the children."""
    before = os.times()
    started = time.perf_counter()
    # (From ROOT: ``python -m synclint`` puts the working directory first on sys.path, so
    # run from another checkout it would time that checkout's synclint, not ROOT's.)
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if result.returncode not in (0, 1):
        sys.stderr.write(f"warning: {command[0]} exited {result.returncode}: {result.stderr[-400:].decode(errors='replace')}\n")
    return wall, result.returncode, cpu


def median_run(command: list[str], env: dict[str, str], repeat: int, before=None) -> tuple[float, float, list[float]]:
    """(wall, CPU) of the run with the median wall time among ``repeat`` runs, and every
    run's wall time; ``before()`` runs (untimed) ahead of each run."""
    runs = []
    for _ in range(max(1, repeat)):
        if before is not None:
            before()
        wall, _, cpu = timed(command, env)
        runs.append((wall, cpu))
    ordered = sorted(runs)
    wall, cpu = ordered[len(ordered) // 2]
    return wall, cpu, [run[0] for run in runs]


def load() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            return " ".join(handle.read().split()[:3])
    except OSError:
        return "unknown"


def find_tool(name: str, given: str | None) -> list[str] | None:
    if given:
        return given.split()
    found = shutil.which(name) or (str(BENCH_VENV / name) if (BENCH_VENV / name).exists() else None)
    return [found] if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--jobs", type=int, default=None, help="synclint --jobs (default: all cores)")
    parser.add_argument("--torchfix", help="TorchFix command (default: `torchfix` on PATH or in /tmp/bench-venv)")
    parser.add_argument("--fixit", help="Fixit command (default: `fixit` on PATH or in /tmp/bench-venv)")
    parser.add_argument("--ruff", help="ruff command (default: `ruff` on PATH or in /tmp/bench-venv)")
    parser.add_argument("--skip-others", action="store_true", help="time synclint only")
    parser.add_argument("--project-files", type=int, default=300, help="files in the incremental project (0: skip)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each timed case (but the warm ones); the median is reported (default 3)"
    )
    args = parser.parse_args()
    directory = args.directory.resolve()
    files, lines = count(directory)

    print(f"load average before: {load()}", file=sys.stderr)
    cache = Path(tempfile.mkdtemp(prefix="synclint-bench-cache-"))
    env = tool_environment(SYNCLINT_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    synclint = [sys.executable, "-m", "synclint", "check", str(directory), "--exit-zero"]
    if args.jobs:
        synclint += ["--jobs", str(args.jobs)]
    _write_bytecode(env)
    rows: list[tuple[str, float, float]] = []
    try:
        # Cold: the cache emptied before each run.
        wall, cpu, walls = median_run(synclint, env, args.repeat, before=lambda: shutil.rmtree(cache, ignore_errors=True))
        _report_runs("synclint cold", walls)
        rows.append(("synclint (cold cache)", wall, cpu))
        wall, _, cpu = timed(synclint, env)
        rows.append(("synclint (warm cache)", wall, cpu))
        wall, _, cpu = timed(synclint + ["--no-cache", "--jobs", "1"], env)
        rows.append(("synclint (no cache, 1 job)", wall, cpu))
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    if not args.skip_others:
        others = {
            "TorchFix": (find_tool("torchfix", args.torchfix), [str(directory)]),
            "Fixit": (find_tool("fixit", args.fixit), ["lint", str(directory)]),
            "ruff --select ALL": (
                find_tool("ruff", args.ruff), ["check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(directory)]
            ),
        }
        for name, (command, arguments) in others.items():
            if command is None:
                print(f"{name}: not installed, skipped", file=sys.stderr)
                continue
            timed(command + ["--help"], tool_environment())  # untimed: loads the tool once
            wall, cpu, walls = median_run(command + arguments, tool_environment(), args.repeat)
            _report_runs(name, walls)
            rows.append((name, wall, cpu))

    print(f"{directory}: {files} files, {lines} lines, {os.cpu_count()} cores")
    print(f"{'tool':<28} {'wall s':>8} {'cpu s':>8} {'lines/s':>9}")
    for name, wall, cpu in rows:
        print(f"{name:<28} {wall:8.2f} {cpu:8.2f} {lines / wall:9.0f}")
    cold = rows[0][1]
    warm = rows[1][1]
    for name, wall, _ in rows[3:]:
        if name.startswith("ruff"):
            print(f"synclint cold / {name}: {cold / wall:.1f}x (the bar: within 5x)")
            continue
        print(f"{name} / synclint cold: {wall / cold:.1f}x    {name} / synclint warm: {wall / warm:.0f}x")
    if args.project_files:
        incremental(directory, args.project_files, args.jobs, args.repeat)
    print(f"load average after: {load()}", file=sys.stderr)
    return 0


def _write_bytecode(env: dict[str, str]) -> None:
    """One untimed check, so that no timed run compiles synclint's modules to bytecode."""
    with tempfile.TemporaryDirectory(prefix="synclint-bench-warmup-") as work:
        sample = Path(work) / "sample.py"
        sample.write_text("import torch\n\ndef f(x):\n    return x.nonzero()\n")
        timed([sys.executable, "-m", "synclint", "check", "--no-cache", "--exit-zero", str(sample)], env)


def _report_runs(name: str, walls: list[float]) -> None:
    if len(walls) > 1:
        print(f"{name} runs (wall s): {', '.join(f'{wall:.2f}' for wall in walls)}", file=sys.stderr)


def incremental(source: Path, size: int, jobs: int | None, repeat: int = 1) -> None:
    """Warm re-check after editing one file of a ``size``-file project, and one file alone
    (each the median of ``repeat`` runs)."""
    files = sorted(p for p in source.rglob("*.py") if p.is_file())
    if not files:
        return
    work = Path(tempfile.mkdtemp(prefix="synclint-bench-project-"))
    cache = work / "cache"
    project = work / "project"
    try:
        package = project / "pkg"
        package.mkdir(parents=True)
        (project / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
        (package / "__init__.py").write_text("")
        for i in range(size - 1):
            original = files[i % len(files)]
            (package / f"m{i:04d}_{original.stem}.py").write_bytes(original.read_bytes())
        env = tool_environment(SYNCLINT_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
        base = [sys.executable, "-m", "synclint", "check", "--exit-zero"] + (["--jobs", str(jobs)] if jobs else [])
        cold, _, _ = timed(base + [str(project)], env)
        warm, _, _ = timed(base + [str(project)], env)
        edited = sorted(package.glob("m0001_*.py"))[0]
        edits = iter(range(2 * max(1, repeat)))

        def comment() -> None:  # changes the file's text, not its summary
            with open(edited, "a", encoding="utf-8") as out:
                out.write(f"\n# edited {next(edits)}\n")

        def code() -> None:  # a statement on a new first line: every line of the file moves
            edited.write_text(f"_EDITED = {next(edits)}\n" + edited.read_text(encoding="utf-8"), encoding="utf-8")

        after_comment, _, walls = median_run(base + [str(project)], env, repeat, before=comment)
        _report_runs("re-check after a comment edit", walls)
        after_code, _, walls = median_run(base + [str(project)], env, repeat, before=code)
        _report_runs("re-check after a code edit", walls)
        one_file, _, walls = median_run(base + [str(edited)], env, repeat)
        _report_runs("check one_file.py", walls)
        print(f"{size}-file project: cold {cold:.2f} s, warm {warm:.2f} s, warm re-check after editing one "
              f"file {after_code:.2f} s (a statement added; bar: <= 1 s) and {after_comment:.2f} s (a comment "
              f"added), `check one_file.py` with a warm index {one_file:.2f} s (bar: <= 0.5 s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
