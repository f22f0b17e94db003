"""Build the index for the files being checked, reusing cached summaries.

One cache entry per project root holds, per file, its size, mtime, content
hash and summary. A file whose size and mtime are unchanged is not read
again; one whose content hash is unchanged is not summarised again. Entries
are pickles written to a temporary name and renamed into place; an unreadable
entry is treated as empty (the index is rebuilt, only slower).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable
from pathlib import Path

from synclint.project.facts import FileFacts, facts_for_project
from synclint.project.index import ProjectIndex
from synclint.project.layout import project_files, project_root
from synclint.project.summary import SUMMARY_VERSION, FileSummary, summarize

INDEX_ENTRIES = "index-v1"
_EMPTY = FileSummary(SUMMARY_VERSION, {}, {}, {})

Record = tuple[int, int, str, FileSummary]  # (size, mtime_ns, content hash, summary)


def resolved_key(path: str | Path) -> str:
    """The one spelling of a file's path the index uses."""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(path)


def facts_for_files(files: Iterable[str | Path], cache_directory: Path | None = None) -> dict[str, FileFacts]:
    """Facts for each of ``files`` (keyed by :func:`resolved_key`), from their whole projects."""
    by_root: dict[Path, list[str]] = {}
    for file in files:
        key = resolved_key(file)
        if not key.endswith(".py"):
            continue
        by_root.setdefault(project_root(Path(key).parent), []).append(key)
    result: dict[str, FileFacts] = {}
    for root, keys in sorted(by_root.items()):
        project = {str(path) for path in project_files(root)}
        wanted = [key for key in keys if key in project]
        if wanted:
            facts = _project_facts(root, sorted(project), cache_directory)
            for key in wanted:
                result[key] = facts[key]
        for key in keys:
            if key not in project:  # outside the project's tree (a build dir): on its own
                result[key] = _project_facts(Path(key).parent, [key], cache_directory)[key]
    return result


def facts_for_source(source: str, path: str = "<string>", tree=None) -> FileFacts:
    """Facts for one source text on its own (the API's ``check_source`` without a project)."""
    summary = summarize(source, path, tree) or _EMPTY
    key = "/<source>/" + (Path(path).name or "module.py")
    index = ProjectIndex({key: summary}, Path("/<source>"))
    return facts_for_project(index)[key]


def _project_facts(root: Path, keys: list[str], cache_directory: Path | None) -> dict[str, FileFacts]:
    entry = _entry_path(root, cache_directory)
    records = _load(entry)
    summaries: dict[str, FileSummary] = {}
    changed = False
    fresh: dict[str, Record] = {}
    for key in keys:
        try:
            stat = os.stat(key)
        except OSError:
            summaries[key] = _EMPTY
            continue
        record = records.get(key)
        if record is not None and record[0] == stat.st_size and record[1] == stat.st_mtime_ns:
            fresh[key] = record
            summaries[key] = record[3]
            continue
        try:
            data = Path(key).read_bytes()
        except OSError:
            summaries[key] = _EMPTY
            continue
        digest = hashlib.blake2b(data, digest_size=20).hexdigest()
        if record is not None and record[2] == digest:
            summary = record[3]
        else:
            summary = _summarize_bytes(data, key)
        fresh[key] = (stat.st_size, stat.st_mtime_ns, digest, summary)
        summaries[key] = summary
        changed = True
    if changed or len(fresh) != len(records):
        _save(entry, fresh)
    return facts_for_project(ProjectIndex(summaries, root))


def _summarize_bytes(data: bytes, key: str) -> FileSummary:
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):  # the check reports it; the index skips it
        return _EMPTY
    return summarize(text, key) or _EMPTY


def _entry_path(root: Path, cache_directory: Path | None) -> Path | None:
    if os.environ.get("SYNCLINT_NO_INDEX_CACHE"):
        return None
    from synclint.cache import cache_dir, tool_fingerprint

    name = hashlib.blake2b(f"{tool_fingerprint()}|{root}".encode(), digest_size=16).hexdigest()
    return (cache_directory or cache_dir()) / INDEX_ENTRIES / f"{name}.pickle"


def _load(entry: Path | None) -> dict[str, Record]:
    if entry is None:
        return {}
    try:
        with open(entry, "rb") as handle:
            data = pickle.load(handle)
        return data if isinstance(data, dict) else {}
    except Exception:  # missing, truncated or foreign: rebuild
        return {}


def _save(entry: Path | None, records: dict[str, Record]) -> None:
    if entry is None:
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(handle, "wb") as out:
                pickle.dump(records, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, entry)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
    except OSError:
        pass  # a read-only or full disk only costs speed
