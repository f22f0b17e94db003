"""Check many files: discovery, project index, cache look-up, parallel analysis.

The project index (synclint.project) is built first, from each file's whole
project, so a file's findings do not depend on which other files are named.
Files whose content and project facts the cache has seen with the same tool
and settings are not analysed again. The rest are checked in a process pool (``jobs`` workers, all
cores by default): workers receive paths and send back ``Finding`` records,
never libcst trees. The result is sorted, so it does not depend on ``jobs`` or
on which worker finished first. A file whose check raises (a bug) yields one
SL000 entry and the run goes on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from synclint.collector import collector_paused
from synclint.config import Configuration, Settings
from synclint.discovery import discover
from synclint.finding import Finding, error_finding
from synclint.project.facts import FileFacts
from synclint.project.hotness import is_hidden
from synclint.project.store import resolved_key


def visible(findings: list[Finding], include_cold: bool = False) -> list[Finding]:
    """The findings to show: cold and unreached ones only when asked for (``--include-cold``)."""
    if include_cold:
        return findings
    return [finding for finding in findings if not is_hidden(finding.context, finding.why)]



if TYPE_CHECKING:
    from synclint.cache import ResultCache
    from synclint.early_worker import EarlyWorker


@dataclass(frozen=True)
class RunOptions:
    jobs: int | None = None  # None: all cores
    use_cache: bool = True
    cache_dir: Path | None = None  # None: the platform cache directory
    #: Called with (files done, files in all) as files finish (the CLI's progress line).
    progress: Callable[[int, int], None] | None = None
    include_cold: bool = False  # also report findings in code that does not run per step


def lint_paths(
    paths: Iterable[str | Path], settings: Settings | Configuration, options: RunOptions | None = None
) -> list[Finding]:
    """Findings for every file under ``paths``, sorted by path, line, column, code.

    ``settings``: one Settings for every file, or a Configuration that gives
    each file the settings of its closest configuration file.
    """
    files = discover(paths, settings)
    return lint_files(files, settings, options)


def lint_files(
    files: Sequence[Path], settings: Settings | Configuration, options: RunOptions | None = None
) -> list[Finding]:
    options = options or RunOptions()
    caches: dict[int, ResultCache] = {}  # one per distinct Settings (per configuration file)

    def cache_for(own: Settings) -> ResultCache | None:
        if not options.use_cache:
            return None
        if id(own) not in caches:
            from synclint.cache import ResultCache

            caches[id(own)] = ResultCache(own, options.cache_dir)
        return caches[id(own)]

    # On a second core, a process loads the checker while this one builds the index: the
    # re-check after an edit has one file to check, and would otherwise load it afterwards.
    early = _early_worker(options)
    try:
        facts = project_facts(files, options, early)
        return _lint_with_facts(files, settings, options, facts, cache_for, early)
    finally:
        if early is not None:
            early.close()


def _lint_with_facts(files: Sequence[Path], settings: Settings | Configuration, options: RunOptions,
                     facts: dict[str, FileFacts], cache_for: Callable[[Settings], ResultCache | None],
                     early: EarlyWorker | None) -> list[Finding]:
    findings: list[Finding] = []
    # Without --include-cold, functions whose findings would all be hidden are left out of
    # the analysis: such results lack hidden findings, so they are cached apart.
    skip_hidden = not options.include_cold
    # (path, its settings, cache key, project facts) of each file to analyse
    pending: list[tuple[str, Settings, str | None, FileFacts | None]] = []
    directories: dict[str, str] = {}  # (see resolved_key)
    for file in files:
        path = str(file)
        own = settings.settings_for(file)  # resolved here: a bad configuration file stops the run
        cache = cache_for(own)
        file_facts = facts.get(resolved_key(file, directories)) if facts else None
        digest = _digest(file, own) if cache is not None else None
        if digest is not None and file_facts is not None:
            digest = f"{digest}|{file_facts.digest}"  # what the rest of the project says counts too
        if digest is not None and skip_hidden:
            digest = f"{digest}|shown"
        cached = cache.get(path, digest) if cache is not None and digest is not None else None
        if cached is not None:
            findings.extend(cached)
        else:
            pending.append((path, own, digest, file_facts))
    done = len(files) - len(pending)

    def one_done() -> None:
        nonlocal done
        done += 1
        if options.progress is not None:
            options.progress(done, len(files))

    work = [(path, own, file_facts, skip_hidden) for path, own, _, file_facts in pending]
    results = _check_all(work, options.jobs, one_done, early)
    for (path, own, digest, _facts), result in zip(pending, results):
        findings.extend(result)
        cache = cache_for(own)
        if cache is not None and digest is not None and not _transient(result):
            cache.put(path, digest, result)
    findings = visible(findings, options.include_cold)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def _early_worker(options: RunOptions) -> EarlyWorker | None:
    """A process loading the checker from now on (:mod:`synclint.early_worker`), where one can
    help: results cached (without, every file is checked, by the pool) and a second core."""
    from synclint.early_worker import EarlyWorker, can_start

    if not options.use_cache or (options.jobs or default_jobs()) < 2 or not can_start("synclint.engine"):
        return None
    try:
        return EarlyWorker(load_checker)
    except OSError:  # (no process to spare: the run checks in this one, as without a second core)
        return None


def project_facts(files: Sequence[Path], options: RunOptions, early: EarlyWorker | None = None) -> dict[str, FileFacts]:
    """What each of ``files``' project says of it (Python files and notebooks), by
    :func:`synclint.project.resolved_key`; cached as ``options`` say (``early``: a worker
    loading the checker, ended if processes are needed to summarise the project)."""
    from synclint.project import facts_for_files

    sources = [file for file in files if str(file).endswith((".py", ".ipynb"))]
    if not sources:
        return {}
    directory = None
    if options.use_cache:
        from synclint.cache import cache_dir

        directory = options.cache_dir or cache_dir()
    jobs = min(options.jobs or default_jobs(), len(sources))
    # While processes summarise the project, this one loads the checker: the check's
    # processes, forked from it afterwards, start with it loaded.

    def meanwhile() -> None:
        if early is not None:
            early.close()  # (the summarising processes want every core; a cold run checks many files)
        load_checker()

    return facts_for_files(sources, directory, jobs, meanwhile=meanwhile if jobs > 1 else None)


def _transient(result: list[Finding]) -> bool:
    """Internal errors and crashed workers may not happen again: never cache them."""
    return any(
        f.code == "SL000" and (f.message.startswith("internal error") or "process crashed" in f.message)
        for f in result
    )


def _digest(file: Path, settings: Settings) -> str | None:
    from synclint.cache import content_hash
    from synclint.sources import SourceReadError, read_source

    try:
        return content_hash(read_source(file, settings.max_file_size))
    except SourceReadError:
        return None  # unreadable, not a regular file or too large: checked (and reported) every time


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _check_all(
    work: list[tuple[str, Settings, FileFacts | None, bool]],
    jobs: int | None,
    one_done: Callable[[], None] | None = None,
    early: EarlyWorker | None = None,
) -> list[list[Finding]]:
    """Findings per (path, settings, facts, skip_hidden) (cold ones included, hidden
    functions' unless ``skip_hidden``), in the order of ``work``; ``one_done()`` after each
    file. One file goes to ``early`` (a worker that has loaded the checker meanwhile), if open."""
    if early is not None and not early.closed and len(work) == 1:
        [result] = early.check_all(check_one, work, one_done)
        early.close()
        if result is None:  # the worker died on it (a crash in native code)
            from synclint.parallel import in_a_fresh_process

            result = in_a_fresh_process(check_one, *work[0])
            if one_done is not None:
                one_done()
        return [result]
    if early is not None:
        early.close()  # (idle now: its core is the pool's)
    jobs = min(jobs or default_jobs(), len(work))
    if jobs <= 1:
        results = []
        for item in work:
            results.append(check_one(*item))
            if one_done is not None:
                one_done()
        return results
    from synclint.parallel import map_in_processes

    return map_in_processes(check_one, work, jobs, one_done, prepare=load_checker)


def load_checker() -> None:
    """Import what checking a file imports: the engine, libcst's native parser and the
    fixers (otherwise loaded with a file's first fix)."""
    import libcst.native  # noqa: F401

    import synclint.engine  # noqa: F401
    import synclint.fixers.registry  # noqa: F401


def check_one(
    path: str, settings: Settings, facts: FileFacts | None = None, skip_hidden: bool = False
) -> list[Finding]:
    """One file's findings, cold ones included (but for the functions whose findings would
    all be hidden, with ``skip_hidden``); an unexpected exception becomes an SL000 entry."""
    try:
        with collector_paused():  # what a check allocates is freed by reference counting
            if path.endswith(".ipynb"):
                from synclint.notebook import check_notebook_source

                data = Path(path).read_bytes()
                return check_notebook_source(data, path, settings, include_cold=True, project=facts)
            from synclint.engine import check_file

            return check_file(path, settings, facts, include_cold=True, skip_hidden=skip_hidden)
    except OSError as error:
        return [error_finding(path, f"cannot read: {error.strerror or error}")]
    except Exception as error:  # a bug in synclint must not stop the run
        return [error_finding(path, f"internal error while checking: {type(error).__name__}: {error}")]


def check_source(
    source: str | bytes, path: str = "<string>", settings: Settings | None = None, *, include_cold: bool = False
) -> list[Finding]:
    """Findings for one source (the public ``synclint.check_source``): a module, or a
    notebook's JSON when ``path`` ends in ``.ipynb``. The source is its own project."""
    if path.endswith(".ipynb"):
        from synclint.notebook import check_notebook_source

        return check_notebook_source(source, path, settings, include_cold=include_cold)
    from synclint.engine import check_source as check_module_source

    return check_module_source(source, path, settings, include_cold=include_cold)
