"""JUnit XML (one test suite per file, one failing test case per finding), as ruff writes it.

CI systems that only understand test reports (Jenkins, GitLab's test reports,
Azure Pipelines) show each finding as a failed test named after its rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO
from xml.etree import ElementTree

from synclint.finding import Finding
from synclint.reporters.options import ReportOptions


def render_junit(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    root = ElementTree.Element("testsuites", name="synclint", tests=str(len(findings)), failures=str(len(findings)), errors="0")
    if not findings:
        suite = ElementTree.SubElement(root, "testsuite", name="synclint", tests="1", failures="0", errors="0")
        ElementTree.SubElement(suite, "testcase", name="No sync hazards found")
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path, group in by_path.items():
        suite = ElementTree.SubElement(
            root, "testsuite", name=path, tests=str(len(group)), failures=str(len(group)), errors="0"
        )
        for finding in group:
            cell = f"cell_{finding.cell}:" if finding.cell is not None else ""
            case = ElementTree.SubElement(
                suite,
                "testcase",
                name=f"synclint.{finding.code}",
                classname=path,
                file=path,
                line=str(finding.line),
            )
            failure = ElementTree.SubElement(case, "failure", message=finding.message, type=finding.code)
            failure.text = f"{cell}line {finding.line}, col {finding.column}, {finding.message}"
    ElementTree.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ElementTree.tostring(root, encoding="unicode"))
    out.write("\n")
