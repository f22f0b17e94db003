"""Baselines: accept today's findings, fail CI only on new ones.

A finding's fingerprint is a hash of its rule code, its path (relative to the
baseline file, so the baseline works from any working directory), the text of
its source line with whitespace normalised, and its occurrence index among
findings sharing those three. Line and column numbers are left out, so edits
elsewhere in the file (lines added above, re-indentation) keep old findings
matched, while a second identical hazard on another line is still new.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from synclint import __version__
from synclint.finding import Finding

FORMAT_VERSION = 1


class BaselineError(ValueError):
    """The baseline file cannot be read."""


def _directory_of(baseline: str | Path) -> Path:
    return Path(os.path.abspath(Path(baseline).parent))


def _normalised_path(path: str, anchor: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(anchor).as_posix()
    except ValueError:
        return absolute.as_posix()


def fingerprints(findings: Sequence[Finding], anchor: Path) -> list[str]:
    """One fingerprint per finding, in the order given; paths are taken relative to ``anchor``."""
    seen: Counter[tuple[str, str, str]] = Counter()
    prints = [""] * len(findings)
    # Occurrence indices count in source order, whatever order the findings came in.
    for index in sorted(range(len(findings)), key=lambda i: findings[i].sort_key):
        finding = findings[index]
        key = (finding.code, _normalised_path(finding.path, anchor), " ".join(finding.source_line.split()))
        occurrence = seen[key]
        seen[key] += 1
        prints[index] = hashlib.sha256("\0".join((*key, str(occurrence))).encode()).hexdigest()[:20]
    return prints


def write_baseline(path: str | Path, findings: Sequence[Finding]) -> int:
    """Record ``findings`` in the file ``path``; returns how many were recorded."""
    anchor = _directory_of(path)
    entries = sorted(
        (
            {"fingerprint": fp, "code": f.code, "path": _normalised_path(f.path, anchor), "line": f.line}
            for f, fp in zip(findings, fingerprints(findings, anchor))
        ),
        key=lambda e: (e["path"], e["line"], e["code"], e["fingerprint"]),
    )
    document = {"synclint": __version__, "version": FORMAT_VERSION, "findings": entries}
    Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return len(entries)


def read_baseline(path: str | Path) -> frozenset[str]:
    """The fingerprints recorded in a baseline file."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        version = document.get("version")
        prints = frozenset(entry["fingerprint"] for entry in document["findings"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise BaselineError(f"cannot read baseline {path}: {error}") from error
    if version != FORMAT_VERSION:
        raise BaselineError(f"{path}: unsupported baseline version {version!r}")
    return prints


def new_findings(findings: Sequence[Finding], baseline_path: str | Path) -> list[Finding]:
    """The findings not recorded in the baseline at ``baseline_path``."""
    known = read_baseline(baseline_path)
    prints = fingerprints(findings, _directory_of(baseline_path))
    return [finding for finding, fp in zip(findings, prints) if fp not in known]
