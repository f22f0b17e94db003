"""Baselines: accept today's findings, fail CI only on new ones.

A baseline entry records a finding by what survives unrelated edits: its rule
code, its path (relative to the baseline file, so the baseline works from any
working directory) and the text of its source line with whitespace normalised
(the *fingerprint*), plus hashes of the two non-blank lines above and below it
(the *context*) and, for information, its line number. Line and column numbers
do not decide anything on their own, so lines added or removed elsewhere, or
re-indentation, keep old findings matched.

When a file holds several findings with one fingerprint, they are paired with
the recorded ones by context: the finding whose neighbours are still those
recorded is the old one, so an identical hazard line added above a baselined
one is reported as the new one (an occurrence index counted from the top of
the file would call the *old* line new). Ties go to the finding that moved the
least, measured from the start or from the end of the file.

``SL000`` (a file that cannot be checked) is never baselined and always
reported: a baseline must not hide a file that stopped being checked.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from synclint import __version__
from synclint.finding import Finding

FORMAT_VERSION = 2
_CONTEXT_LINES = 2  # non-blank lines recorded on each side of a finding


class BaselineError(ValueError):
    """The baseline file cannot be read or written."""


def _directory_of(baseline: str | Path) -> Path:
    return Path(os.path.abspath(Path(baseline).parent))


def _normalised_path(path: str, anchor: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(anchor).as_posix()
    except ValueError:
        return absolute.as_posix()


def _normalised(line: str) -> str:
    return " ".join(line.split())


def _hash(*parts: str, size: int = 20) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:size]


def fingerprints(findings: Sequence[Finding], anchor: Path) -> list[str]:
    """One stable identifier per finding, in the order given (SARIF's partial fingerprint).

    A hash of the code, the path relative to ``anchor``, the normalised source
    line and the occurrence index among findings sharing those three.
    """
    seen: Counter[tuple[str, str, str]] = Counter()
    prints = [""] * len(findings)
    # Occurrence indices count in source order, whatever order the findings came in.
    for index in sorted(range(len(findings)), key=lambda i: findings[i].sort_key):
        finding = findings[index]
        key = (finding.code, _normalised_path(finding.path, anchor), _normalised(finding.source_line))
        occurrence = seen[key]
        seen[key] += 1
        prints[index] = _hash(*key, str(occurrence))
    return prints


def _identity(finding: Finding, anchor: Path) -> str:
    cell = "" if finding.cell is None else str(finding.cell)
    return _hash(finding.code, _normalised_path(finding.path, anchor), cell, _normalised(finding.source_line))


class _Lines:
    """Source lines of the files findings point into, read once each (for context)."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def of(self, path: str) -> list[str]:
        if path not in self._files:
            self._files[path] = _read_lines(path)
        return self._files[path]

    def context(self, finding: Finding) -> tuple[list[str], int]:
        """Hashes of the non-blank lines around the finding (nearest first: above, then below)
        and the file's line count; empty for notebook cells and unreadable files."""
        lines = self.of(finding.path) if finding.cell is None else []
        if not lines or not 0 < finding.line <= len(lines):
            return [], len(lines)
        above = [_normalised(s) for s in reversed(lines[: finding.line - 1]) if s.strip()][:_CONTEXT_LINES]
        below = [_normalised(s) for s in lines[finding.line :] if s.strip()][:_CONTEXT_LINES]
        above += [""] * (_CONTEXT_LINES - len(above))
        below += [""] * (_CONTEXT_LINES - len(below))
        return [_hash(s, size=8) for s in above + below], len(lines)


def _read_lines(path: str) -> list[str]:
    import codecs

    from synclint.file_writing import encoding_of
    from synclint.sources import SourceReadError, read_source, source_lines

    try:
        data = read_source(path, 0)
    except SourceReadError:  # unreadable: matched without context
        return []
    encoding, bom = encoding_of(data)
    try:
        return source_lines(data[len(codecs.BOM_UTF8) if bom else 0 :].decode(encoding, errors="replace"))
    except LookupError:
        return []


def write_baseline(path: str | Path, findings: Sequence[Finding]) -> int:
    """Record ``findings`` (all but SL000) in the file ``path``; returns how many were recorded."""
    anchor = _directory_of(path)
    lines = _Lines()
    entries = []
    for finding in findings:
        if finding.code == "SL000":
            continue
        context, length = lines.context(finding)
        entries.append(
            {
                "fingerprint": _identity(finding, anchor),
                "code": finding.code,
                "path": _normalised_path(finding.path, anchor),
                "line": finding.line,
                "lines": length,
                "context": context,
            }
        )
    entries.sort(key=lambda e: (e["path"], e["line"], e["code"], e["fingerprint"]))
    document = {"synclint": __version__, "version": FORMAT_VERSION, "findings": entries}
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"cannot write the baseline {path}: {error.strerror or error}") from error
    return len(entries)


def read_baseline(path: str | Path) -> tuple[int, list[dict]]:
    """The format version and the entries of a baseline file."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        version = document.get("version")
        entries = list(document["findings"])
        for entry in entries:
            if not isinstance(entry["fingerprint"], str):
                raise TypeError("a fingerprint is not a string")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise BaselineError(f"cannot read baseline {path}: {error}") from error
    if version not in (1, FORMAT_VERSION):
        raise BaselineError(f"{path}: unsupported baseline version {version!r}")
    return version, entries


def new_findings(findings: Sequence[Finding], baseline_path: str | Path) -> list[Finding]:
    """The findings not recorded in the baseline at ``baseline_path`` (and every SL000)."""
    version, entries = read_baseline(baseline_path)
    anchor = _directory_of(baseline_path)
    if version == 1:  # occurrence-index fingerprints, as version 1 wrote them
        known = {entry["fingerprint"] for entry in entries}
        prints = fingerprints(findings, anchor)
        return [f for f, fp in zip(findings, prints) if f.code == "SL000" or fp not in known]

    recorded: dict[str, list[dict]] = defaultdict(list)
    for entry in entries:
        recorded[entry["fingerprint"]].append(entry)
    current: dict[str, list[int]] = defaultdict(list)
    for index, finding in enumerate(findings):
        if finding.code != "SL000":
            current[_identity(finding, anchor)].append(index)

    matched: set[int] = set()
    lines = _Lines()
    for identity, indices in current.items():
        old = recorded.get(identity, [])
        if len(old) >= len(indices):
            matched.update(indices)  # nothing new here, however the lines moved
        elif old:
            matched.update(_pair(old, [(i, findings[i]) for i in indices], lines))
    return [finding for index, finding in enumerate(findings) if index not in matched]


def _pair(old: list[dict], candidates: list[tuple[int, Finding]], lines: _Lines) -> set[int]:
    """Indices of the candidates that are the recorded findings ``old`` (fewer than candidates)."""
    scored = []
    for index, finding in candidates:
        context, length = lines.context(finding)
        for number, entry in enumerate(old):
            similarity = _context_similarity(entry.get("context") or [], context)
            recorded_line, recorded_length = entry.get("line", 0), entry.get("lines", 0)
            moved = min(
                abs(finding.line - recorded_line),
                abs((length - finding.line) - (recorded_length - recorded_line)),
            )
            scored.append((-similarity, moved, finding.line, index, number))
    scored.sort()
    taken_old: set[int] = set()
    taken_new: set[int] = set()
    for _, _, _, index, number in scored:
        if index in taken_new or number in taken_old:
            continue
        taken_new.add(index)
        taken_old.add(number)
    return taken_new


def _context_similarity(recorded: list[str], current: list[str]) -> int:
    """How many neighbouring lines, counted outwards from the finding on each side, are unchanged."""
    if len(recorded) != 2 * _CONTEXT_LINES or len(current) != 2 * _CONTEXT_LINES:
        return 0
    score = 0
    for side in (slice(0, _CONTEXT_LINES), slice(_CONTEXT_LINES, 2 * _CONTEXT_LINES)):
        for a, b in zip(recorded[side], current[side]):
            if a != b:
                break
            score += 1
    return score
