"""Join runtime sync sites with the static checker's findings, by statement and code.

A site and a finding meet when they are in the same file, report the same
rule code (one code per hazard in both halves) and fall in the same statement
(a statement split over lines is one span; for ``if``/``for``/``with``... only
the header counts, not the body).

* **confirmed**: a static finding and a runtime event of the same code in the
  same statement;
* **static-only**: a finding no run reached (dead code, another input, or a
  hazard the runtime cannot see, such as an unpinned loader);
* **runtime-only**: a sync the static rules missed (indirection, a library).
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.runtime.events import SyncSite

Status = Literal["confirmed", "static-only", "runtime-only"]


@dataclass(frozen=True, order=True)
class JoinRow:
    path: str
    line: int
    code: str
    status: Status

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "code": self.code, "status": self.status}


def _key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def join(sites: Sequence[SyncSite], findings: Sequence[Finding]) -> list[JoinRow]:
    """One row per static finding (confirmed or static-only) and per uncovered runtime site."""
    spans = _Spans()
    runtime = {(_key(s.path), spans.of(s.path, s.line), s.code) for s in sites}
    static = set()
    rows: set[JoinRow] = set()
    for finding in findings:
        if finding.code == PARSE_ERROR_CODE:
            continue
        where = (_key(finding.path), spans.of(finding.path, finding.line), finding.code)
        static.add(where)
        status: Status = "confirmed" if where in runtime else "static-only"
        rows.add(JoinRow(os.path.abspath(finding.path), finding.line, finding.code, status))
    for site in sites:
        if (_key(site.path), spans.of(site.path, site.line), site.code) not in static:
            rows.add(JoinRow(site.path, site.line, site.code, "runtime-only"))
    return sorted(rows)


class _Spans:
    """``(path, line) -> (first, last)`` line of the statement holding it (cached per file)."""

    def __init__(self) -> None:
        self._files: dict[str, list[tuple[int, int]]] = {}

    def of(self, path: str, line: int) -> tuple[int, int]:
        spans = self._files.get(path)
        if spans is None:
            spans = self._files[path] = _statement_spans(path)
        best = (line, line)
        for first, last in spans:  # innermost: the shortest span holding the line
            if first <= line <= last and (best == (line, line) or last - first < best[1] - best[0]):
                best = (first, last)
        return best


def _statement_spans(path: str) -> list[tuple[int, int]]:
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        last = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(node.lineno, body[0].lineno - 1)  # the header of a compound statement
        spans.append((node.lineno, last))
    return spans


def static_findings(paths: Iterable[str]) -> list[Finding]:
    """Run the static rules on each file (lazily: the static engine is optional here)."""
    try:
        from synclint.engine import check_file
    except ImportError:
        print("synclint: static checker unavailable; join shows runtime-only rows", file=sys.stderr)
        return []
    findings: list[Finding] = []
    for path in paths:
        try:
            findings.extend(check_file(path))
        except (OSError, ValueError) as exc:
            print(f"synclint: could not check {path}: {exc}", file=sys.stderr)
    return findings


def files_involved(
    entry_file: str | None, sites: Sequence[SyncSite], new_modules: Iterable[Any], roots: Sequence[str]
) -> list[str]:
    """The program's entry file, every file with an event, and the user modules it
    imported from below ``roots`` (not installed packages)."""
    from synclint.runtime.frames import is_internal

    files = {_key(s.path): s.path for s in sites if os.path.isfile(s.path)}
    if entry_file:
        files.setdefault(_key(entry_file), os.path.abspath(entry_file))
    root_keys = tuple(os.path.join(_key(root), "") for root in roots)
    for module in new_modules:
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py") or is_internal(path):
            continue
        key = _key(path)
        if key.startswith(root_keys) and "site-packages" not in key:
            files.setdefault(key, os.path.abspath(path))
    return sorted(files.values())
