"""SARIF 2.1.0 for code-scanning services (GitHub, GitLab, Azure DevOps).

Every rule is described in ``tool.driver.rules`` (summary, full docs as help
text); each finding becomes a result with its region, its baseline fingerprint
(``partialFingerprints``) and, when it has one, its fix. Paths relative to the
working directory are emitted relative to ``%SRCROOT%``, which code scanning
resolves to the checkout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from synclint import __version__
from synclint.finding import PARSE_ERROR_CODE, PARSE_ERROR_NAME, Finding

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"


def _rule_descriptors() -> list[dict[str, Any]]:
    from synclint.rules import ALL_RULES

    descriptors = [
        {
            "id": PARSE_ERROR_CODE,
            "name": PARSE_ERROR_NAME,
            "shortDescription": {"text": "The file (or notebook cell) could not be parsed or read."},
            "help": {"text": "synclint could not analyse this file; fix the syntax error or exclude it."},
            "defaultConfiguration": {"level": "error"},
        }
    ]
    for rule in ALL_RULES:
        docs = rule.documentation()
        descriptors.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary()},
                "fullDescription": {"text": _section(docs, "What it does") or rule.summary()},
                "help": {"text": docs, "markdown": docs},
                "defaultConfiguration": {"level": "warning"},
                "properties": {"tags": ["performance", "pytorch"], "fix": rule.fix_applicability or "none"},
            }
        )
    return descriptors


def _section(docs: str, title: str) -> str:
    """The text of one ``## title`` section of a rule's docs."""
    lines = docs.splitlines()
    try:
        start = lines.index(f"## {title}") + 1
    except ValueError:
        return ""
    body = []
    for line in lines[start:]:
        if line.startswith("## "):
            break
        body.append(line)
    return " ".join(" ".join(body).split())


def _artifact(path: str) -> dict[str, str]:
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SRCROOT}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _result(finding: Finding, rule_index: int | None, fingerprint: str) -> dict[str, Any]:
    artifact = _artifact(finding.path)
    message = finding.message
    if finding.cell is None:
        region = _region(finding.line, finding.column, finding.end_line, finding.end_column)
    else:  # notebook: positions are cell-relative, not lines of the JSON file
        region = {"startLine": 1}
        message = f"cell_{finding.cell}:{finding.line}:{finding.column}: {message}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVELS.get(finding.severity, "warning"),
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": region}}],
        "partialFingerprints": {"synclint/v1": fingerprint},
    }
    if rule_index is not None:
        result["ruleIndex"] = rule_index
    if finding.context is not None:  # hot / unknown / cold, and why
        result["properties"] = {"context": finding.context, "why": finding.why}
    if finding.cell is not None:
        result.setdefault("properties", {}).update(cell=finding.cell, line=finding.line, column=finding.column)
    elif finding.fix is not None and finding.fix.edits:
        result["fixes"] = [
            {
                "description": {"text": f"{finding.fix.message} ({finding.fix.applicability} fix)"},
                "artifactChanges": [
                    {
                        "artifactLocation": artifact,
                        "replacements": [
                            {
                                "deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                                "insertedContent": {"text": e.content},
                            }
                            for e in finding.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def sarif_document(findings: Sequence[Finding]) -> dict[str, Any]:
    from synclint.baseline import fingerprints

    rules = _rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    prints = fingerprints(findings, Path.cwd())
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "synclint", "version": __version__, "rules": rules}},
                "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": [
                    _result(finding, index.get(finding.code), fp) for finding, fp in zip(findings, prints)
                ],
            }
        ],
    }


def render_sarif(findings: Sequence[Finding], out: TextIO, options: object = None) -> None:
    json.dump(sarif_document(findings), out, indent=2)
    out.write("\n")
