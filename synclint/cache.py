"""Findings cached per file, keyed by everything that can change them.

An entry's key hashes the file's path and content, the effective settings
(``Settings.fingerprint()`` and the root that path patterns are anchored at),
and the tool itself: the synclint version, the Python and libcst versions and
the content of synclint's own source files (so editing a rule invalidates the
cache during development). Entries are small JSON files written to a temporary
name and renamed into place, so concurrent runs never see half an entry.

Entries verify themselves: each holds the key it was written for (tool,
settings, path and content hash) and a checksum of its findings. An entry that
cannot be read, decodes to something else, was written for another key, or
whose checksum does not match its findings (a truncated write, a flipped byte,
a file replaced by hand) is treated as missing: recomputed and rewritten.

Location: ``$SYNCLINT_CACHE_DIR``, else the platform's user cache directory as
``platformdirs`` finds it (``$XDG_CACHE_HOME/synclint`` or ``~/.cache/synclint``,
``~/Library/Caches/synclint``, ``%LOCALAPPDATA%\\synclint\\Cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from synclint import __version__
from synclint.config import Settings
from synclint.finding import Edit, Fix, Finding

ENTRIES = "results-v2"  # bump when the entry format changes
_TAG = "CACHEDIR.TAG"
_TAG_TEXT = "Signature: 8a477f597d28d172789f06886806bc55\n# synclint results cache; `synclint clean` removes it.\n"


def cache_dir() -> Path:
    override = os.environ.get("SYNCLINT_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("synclint", appauthor=False))


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """Identifies this synclint build: versions plus a hash of its source files."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__}|{sys.version}|{_libcst_version()}".encode())
    package = Path(__file__).resolve().parent
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode())
        try:
            digest.update(source.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()


def _libcst_version() -> str:
    """libcst's build, from its ``_version.py`` (version and commit), found without importing
    libcst (a third of a second) or ``importlib.metadata`` (its distribution search is a
    tenth of a warm run)."""
    from importlib.util import find_spec

    try:
        spec = find_spec("libcst")
        if spec is None or not spec.submodule_search_locations:
            return "?"
        for directory in spec.submodule_search_locations:
            version_file = Path(directory) / "_version.py"
            if version_file.is_file():
                return hashlib.blake2b(version_file.read_bytes(), digest_size=16).hexdigest()
    except (ImportError, ValueError, OSError):
        pass
    try:  # (a build without ``_version.py``: the distribution's version, the slower way)
        from importlib.metadata import version

        return version("libcst")
    except Exception:  # not installed as a distribution: the source hash still applies
        return "?"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()



def write_entry(entry: Path, data: bytes) -> None:
    """Replace the cache file ``entry`` with ``data`` atomically (readers see the old file or
    the new one), creating its directory. Best effort: a read-only or full disk only costs
    speed, so OSError is swallowed."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=entry.suffix)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, entry)
        except BaseException:
            with _ignoring_errors():
                os.unlink(temporary)
            raise
    except OSError:
        pass


class ResultCache:
    """Findings per (file, content) for one tool build and one configuration."""

    def __init__(self, settings: Settings, directory: Path | None = None) -> None:
        self.directory = (directory or cache_dir()) / ENTRIES
        self._prefix = f"{tool_fingerprint()}|{settings.fingerprint()}|{settings.root}|"
        self._ready = False

    def _key(self, path: str, digest: str) -> str:
        return hashlib.blake2b(f"{self._prefix}{path}|{digest}".encode(), digest_size=20).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.json"

    def get(self, path: str, digest: str) -> list[Finding] | None:
        """The cached findings, or None when there is no entry or it fails verification."""
        key = self._key(path, digest)
        try:
            data = json.loads(self._entry(key).read_bytes())
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            items = data["findings"]
            if not isinstance(items, list) or data.get("checksum") != _checksum(key, items):
                return None
            return [_decode(item) for item in items]
        except Exception:  # missing, unreadable, truncated or foreign: recompute
            return None

    def put(self, path: str, digest: str, findings: list[Finding]) -> None:
        key = self._key(path, digest)
        try:
            self._prepare()
        except OSError:
            return  # a read-only or full disk only costs speed
        items = [_encode(finding) for finding in findings]
        document = {"key": key, "checksum": _checksum(key, items), "findings": items}
        write_entry(self._entry(key), json.dumps(document, separators=(",", ":")).encode("utf-8"))

    def _prepare(self) -> None:
        if self._ready:
            return
        root = self.directory.parent
        root.mkdir(parents=True, exist_ok=True)
        tag = root / _TAG
        if not tag.exists():
            with _ignoring_errors():
                tag.write_text(_TAG_TEXT, encoding="utf-8")
        self._ready = True


def clear(directory: Path | None = None) -> Path | None:
    """Remove synclint's entries (only those: the directory may be shared). Returns it."""
    root = directory or cache_dir()
    removed = None
    if root.is_dir():
        for child in root.iterdir():
            if child.is_dir() and child.name.startswith("results-v"):
                shutil.rmtree(child, ignore_errors=True)
                removed = root
        tag = root / _TAG
        if tag.exists():
            with _ignoring_errors():
                tag.unlink()
        with _ignoring_errors():
            root.rmdir()  # only if now empty
    return removed


class _ignoring_errors:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, traceback) -> bool:
        return kind is not None and issubclass(kind, OSError)


def _checksum(key: str, items: list) -> str:
    """Hash of an entry's findings in canonical JSON, bound to the key they were cached under."""
    canonical = json.dumps(items, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(f"{key}|{canonical}".encode(), digest_size=20).hexdigest()


def _encode(finding: Finding) -> list:
    fix = None
    if finding.fix is not None:
        fix = [
            finding.fix.applicability,
            finding.fix.message,
            [[e.line, e.column, e.end_line, e.end_column, e.content] for e in finding.fix.edits],
        ]
    return [
        finding.path, finding.line, finding.column, finding.end_line, finding.end_column,
        finding.code, finding.name, finding.message, finding.severity, fix, finding.source_line,
        finding.cell, finding.context, finding.why,
    ]


def _decode(item: list) -> Finding:
    path, line, column, end_line, end_column, code, name, message, severity, fix, source_line, cell, context, why = item
    decoded_fix = None
    if fix is not None:
        applicability, fix_message, edits = fix
        decoded_fix = Fix(applicability, fix_message, tuple(Edit(*edit) for edit in edits))
    return Finding(
        path=path, line=line, column=column, end_line=end_line, end_column=end_column, code=code,
        name=name, message=message, severity=severity, fix=decoded_fix, source_line=source_line,
        cell=cell, context=context, why=why,
    )
