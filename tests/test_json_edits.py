"""The `fix.edits` of JSON findings reproduce the fixed code when applied as text."""

from __future__ import annotations

import pytest

from synclint.engine import check_source
from synclint.finding import Edit
from synclint.rules import ALL_RULES


def apply_edits(source: str, edits: tuple[Edit, ...]) -> str:
    """Apply 1-based, end-exclusive (line, column) edits the way an editor or bot would."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return len(source) if line > len(lines) else starts[line - 1] + column - 1

    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        source = source[: offset(edit.line, edit.column)] + edit.content + source[offset(edit.end_line, edit.end_column) :]
    return source


EXAMPLES = [
    (rule.code, example)
    for rule in ALL_RULES
    for example in rule.INVALID
    if example.fixed is not None
    and len([f for f in check_source(example.code) if f.fix is not None]) == 1
]


@pytest.mark.parametrize(("code", "example"), EXAMPLES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(EXAMPLES)])
def test_json_edits_produce_the_fixed_code(code, example):
    (finding,) = [f for f in check_source(example.code) if f.fix is not None]
    assert apply_edits(example.code, finding.fix.edits) == example.fixed


def test_statement_edits_cover_whole_lines_with_their_comments():
    source = (
        "import torch\n"
        "def f(target: torch.Tensor):\n"
        "    inds = torch.nonzero(target == 9, as_tuple=True)  # background\n"
        "    target[inds] = -1\n"
        "    return target\n"
    )
    (finding,) = [f for f in check_source(source) if f.fix is not None]
    fixed = apply_edits(source, finding.fix.edits)
    compile(fixed, "fixed.py", "exec")
    assert "# background" not in fixed and "masked_fill_" in fixed
