"""Build the index for the files being checked, reusing cached summaries.

Per project root, the cache holds each file's size, mtime and content hash,
the summaries by content hash, and the facts of the project's last state. A
file whose size and mtime are unchanged is not read again; one whose content
hash is unchanged is not summarised again; when no file changed, the facts
are read back as they were. Entries are pickles written to a temporary name
and renamed into place; an unreadable entry is treated as empty (the index is
rebuilt, only slower).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterable
from pathlib import Path
from stat import S_ISREG

from synclint.collector import collector_paused
from synclint.project.async_copies import text_copies_asynchronously
from synclint.project.facts import FileFacts, facts_for_project, notebook_facts
from synclint.project.hotness import path_context
from synclint.project.index import ProjectIndex
from synclint.project.layout import is_shallow, naming_files, natural_root, parts_inside, project_files, project_root
from synclint.project.summary import SUMMARY_VERSION, FileSummary, summarize
from synclint.sources import DEFAULT_MAX_FILE_SIZE, python_text, read_source

INDEX_ENTRIES = "index-v2"  # (v2: each summary pickled on its own)
_EMPTY = FileSummary(SUMMARY_VERSION, {}, {}, {})
#: A file Python's parser rejects: nothing is known of it, and any attribute it stores may
#: hold anything (a file in a newer Python's syntax still runs with the project).
_UNPARSED = FileSummary(SUMMARY_VERSION, {}, {}, {}, stores_by_computed_name=True, stores_on_others_by_computed_name=True)
_UNPARSED_ASYNC = FileSummary(SUMMARY_VERSION, {}, {}, {}, stores_by_computed_name=True, copies_asynchronously=True,
                              stores_on_others_by_computed_name=True)



def resolved_key(path: str | Path, directories: dict[str, str] | None = None) -> str:
    """The one spelling of a file's path the index uses. ``directories``: the resolved form
    of each directory met so far, for a run over many files (one ``lstat`` a file, not one
    for every part of its path)."""
    try:
        if directories is None or os.pardir in os.fspath(path) or os.name == "nt":
            # (On Windows ``realpath`` also fixes the case of the name: no shortcut there.)
            # (``abspath`` would cut ``link/..`` before ``link`` is resolved: ``realpath``
            # resolves the link first, as ``Path.resolve`` does.)
            return os.path.realpath(path)  # (what ``Path.resolve`` returns, without building Paths)
        absolute = os.path.abspath(path)
        directory, name = os.path.split(absolute)
        if not name or os.path.islink(absolute):
            return os.path.realpath(absolute)
        real = directories.get(directory)
        if real is None:
            real = directories[directory] = os.path.realpath(directory)
        return os.path.join(real, name)
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(path)


def facts_for_files(
    files: Iterable[str | Path],
    cache_directory: Path | None = None,
    jobs: int = 1,
    meanwhile: Callable[[], None] | None = None,
) -> dict[str, FileFacts]:
    """Facts for each of ``files`` (keyed by :func:`resolved_key`), from their whole projects.
    A notebook is no part of its project's index: its facts hold what the project says of
    every file in it (:func:`synclint.project.facts.notebook_facts`).

    ``cache_directory``: where summaries and facts are cached (None: no cache);
    ``jobs``: processes for summarising the files the cache does not know;
    ``meanwhile``: called (once at most) while such processes work, with this process idle.

    The collector is paused throughout: the index's summaries and facts stay alive for
    the whole run, so collections in the middle of building them (several, a full one
    among them, for a package such as torch's ``nn``) would traverse them for nothing.
    """
    with collector_paused():
        return _facts_for_files(files, cache_directory, jobs, meanwhile)


def _facts_for_files(
    files: Iterable[str | Path], cache_directory: Path | None, jobs: int, meanwhile: Callable[[], None] | None
) -> dict[str, FileFacts]:
    by_root: dict[tuple[Path, bool], list[str]] = {}
    directories: dict[str, str] = {}
    for file in files:
        key = resolved_key(file, directories)
        if not key.endswith((".py", ".ipynb")):
            continue
        directory = Path(key).parent
        root = project_root(directory)
        by_root.setdefault((root, is_shallow(root, directory)), []).append(key)
    result: dict[str, FileFacts] = {}
    for (root, shallow), keys in sorted(by_root.items()):
        project = {str(path) for path in project_files(root, shallow)}
        wanted = sorted({key for key in keys if key in project})
        notebooks = [key for key in keys if key.endswith(".ipynb")]
        asked = (wanted or sorted(project)[:1]) if notebooks else wanted  # any file tells the project's verdict
        if asked:
            facts = _project_facts(root, sorted(project), asked, cache_directory, jobs, meanwhile)
            meanwhile = None
            result.update((key, facts[key]) for key in wanted)
            natural = natural_root(root)
            result.update((key, notebook_facts(facts[asked[0]], path_context(parts_inside(key, natural))))
                          for key in notebooks)
        for key in keys:
            if key not in project and not key.endswith(".ipynb"):  # outside the project's tree (a build dir)
                result.update(_project_facts(Path(key).parent, [key], [key], cache_directory, 1, alone=True))
    return result


def facts_for_source(source: str, path: str = "<string>", tree=None) -> FileFacts:
    """Facts for one source text on its own (the API's ``check_source`` without a project)."""
    summary = summarize(source, tree) or _EMPTY
    key = "/<source>/" + (Path(path).name or "module.py")
    index = ProjectIndex({key: summary}, Path("/<source>"))
    return facts_for_project(index, whole_project=False)[key]


def _project_facts(
    root: Path,
    keys: list[str],
    wanted: list[str],
    cache_directory: Path | None,
    jobs: int,
    meanwhile: Callable[[], None] | None = None,
    alone: bool = False,
) -> dict[str, FileFacts]:
    """Facts for ``wanted`` from the project of ``keys`` (``alone``: one file outside any
    project's tree, whose directory's other files are none of its project).

    Three cache files per project: the files' stat and content hashes (small,
    read every run), the facts of the last state of the project (read when no
    file changed: the common warm run), and the summaries by content hash (read
    only when something changed).
    """
    base = _entry_base(root, cache_directory)
    records = _load(base, "files")  # key -> (size, mtime_ns, content hash)
    fresh: dict[str, tuple[int, int, str]] = {}
    stale: list[str] = []
    for key in keys:
        try:
            stat = os.stat(key)
        except OSError:
            continue
        if not S_ISREG(stat.st_mode) or stat.st_size > DEFAULT_MAX_FILE_SIZE:
            continue  # a FIFO would block the read; a huge file is no one's helper (both get SL000 when checked)
        record = records.get(key)
        if record is not None and record[0] == stat.st_size and record[1] == stat.st_mtime_ns:
            fresh[key] = record
        else:
            stale.append(key)
    data: dict[str, bytes] = {}
    for key in stale:
        try:
            content = read_source(key, DEFAULT_MAX_FILE_SIZE)
            stat = os.stat(key)
        except OSError:  # SourceReadError included: replaced by something unreadable since the stat
            continue
        data[key] = content
        fresh[key] = (stat.st_size, stat.st_mtime_ns, hashlib.blake2b(content, digest_size=20).hexdigest())
    split = root != natural_root(root) or is_shallow(root, root)
    # Configuration files and documentation may name a class (see unnamed_classes): their
    # stats are part of the state. A piece of a split project never asks them.
    namers = () if split or alone else tuple(naming_files(root))
    namer_stats = _stats(namers)
    state = _state(fresh, namer_stats)
    if stale or len(fresh) != len(records):
        _save(base, "files", fresh)
    cached = _load(base, "facts")
    if cached.get("state") == state:
        packed = cached.get("facts", {})
        if all(key in packed for key in wanted):
            return {key: pickle.loads(packed[key]) for key in wanted}
    # Each summary pickled on its own. (No state's facts outlive an edit, even one that
    # leaves every summary as it was: the facts also read the files' text, where a string
    # or a comment may name a class: see unnamed_classes, reflection.)
    known = _Summaries(_load(base, "summaries"))  # content hash -> summary
    # (Every summary is needed below: asking for each here unpickles it once, and finds the
    # entries that no longer unpickle, summarised again with the new files.)
    missing = [key for key in fresh if known.get(fresh[key][2]) is None]
    for key, summary in zip(missing, _summarize_all(missing, data, jobs, meanwhile)):
        known[fresh[key][2]] = summary
    if missing and base is not None:
        _save(base, "summaries", known.packed({fresh[key][2] for key in fresh}))
    summaries = {key: known.get(fresh[key][2], _EMPTY) for key in fresh}
    for key in keys:
        summaries.setdefault(key, _EMPTY)
    facts = facts_for_project(ProjectIndex(summaries, root, namers), split=split)
    if base is not None:  # (without a cache, pickling every file's facts is wasted work)
        _save(base, "facts", {"state": state, "facts": {key: pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
                                                          for key, value in facts.items()}})
    return {key: facts[key] for key in wanted}


def _state(files: dict[str, tuple[int, int, str]], namer_stats: list[tuple[str, int, int]]) -> str:
    """The digest of a project's state: each file's content hash, and the naming files' stats."""
    return hashlib.blake2b(repr((sorted((k, v[2]) for k, v in files.items()), namer_stats)).encode(),
                           digest_size=16).hexdigest()


class _Summaries:
    """Summaries by content hash, from a cache entry of pickled ones (``packed``: content
    hash -> bytes), each unpickled when first asked for. An entry that no longer unpickles
    (a summary class changed without the tool's version) counts as absent."""

    def __init__(self, packed: dict[str, bytes]) -> None:
        self._packed = packed
        self._unpacked: dict[str, FileSummary] = {}

    def __setitem__(self, digest: str, summary: FileSummary) -> None:
        self._unpacked[digest] = summary
        self._packed.pop(digest, None)

    def get(self, digest: str, default: FileSummary | None = None) -> FileSummary | None:
        summary = self._unpacked.get(digest)
        if summary is None and digest in self._packed:
            try:
                summary = pickle.loads(self._packed[digest])
            except Exception:
                summary = None
            if isinstance(summary, FileSummary):
                self._unpacked[digest] = summary
            else:
                del self._packed[digest]
                summary = None
        return default if summary is None else summary

    def packed(self, digests: set[str]) -> dict[str, bytes]:
        """The entry to cache: the summaries of ``digests``, pickled."""
        return {digest: self._packed[digest] if digest in self._packed
                else pickle.dumps(self._unpacked[digest], protocol=pickle.HIGHEST_PROTOCOL)
                for digest in digests if digest in self._packed or digest in self._unpacked}


def _stats(paths: Iterable[str]) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of each of ``paths`` that can be read."""
    stats = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        stats.append((path, stat.st_size, stat.st_mtime_ns))
    return stats


def _summarize_all(
    keys: list[str], data: dict[str, bytes], jobs: int, meanwhile: Callable[[], None] | None = None
) -> list[FileSummary]:
    """Summaries of ``keys``, in processes when there are many (``meanwhile()`` runs here
    while they work)."""
    if jobs > 1 and len(keys) > 64:
        from concurrent.futures import ProcessPoolExecutor

        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                summaries = pool.map(_summarize_path, keys, chunksize=16)  # every chunk submitted
                if meanwhile is not None:
                    meanwhile()
                return list(summaries)
        except Exception:  # a broken pool: summarise here instead
            pass
    return [_summarize_bytes(data[key]) if key in data else _summarize_path(key) for key in keys]


def _summarize_path(key: str) -> FileSummary:
    try:
        return _summarize_bytes(Path(key).read_bytes())
    except OSError:
        return _EMPTY


def _summarize_bytes(data: bytes) -> FileSummary:
    text = python_text(data)
    if text is None:  # the check reports it; the index skips it
        return _EMPTY
    with collector_paused():  # the file's ``ast`` tree is freed by reference counting
        summary = summarize(text)
    if summary is not None:
        return summary
    # Nothing else is known of it, but its text still shows whether it asks for asynchronous
    # copies (one Python 2 script should not decide that for the whole project).
    return _UNPARSED_ASYNC if text_copies_asynchronously(text) else _UNPARSED


def _entry_base(root: Path, cache_directory: Path | None) -> Path | None:
    if cache_directory is None:
        return None
    from synclint.cache import tool_fingerprint

    name = hashlib.blake2b(f"{tool_fingerprint()}|{root}".encode(), digest_size=16).hexdigest()
    return cache_directory / INDEX_ENTRIES / name


def _load(base: Path | None, part: str) -> dict:
    if base is None:
        return {}
    try:
        with open(f"{base}.{part}.pickle", "rb") as handle:
            data = pickle.load(handle)
        return data if isinstance(data, dict) else {}
    except Exception:  # missing, truncated or foreign: rebuild
        return {}


def _save(base: Path | None, part: str, records: dict) -> None:
    if base is None:
        return
    from synclint.cache import write_entry

    write_entry(Path(f"{base}.{part}.pickle"), pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL))
