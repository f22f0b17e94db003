"""The `fix.edits` of JSON findings reproduce the fixed code when applied as text."""

from __future__ import annotations

import pytest

from synclint.engine import check_source
from synclint.finding import Edit
from synclint.rules import ALL_RULES
from synclint.sources import source_lines


def apply_edits(source: str, edits: tuple[Edit, ...]) -> str:
    """Apply 1-based, end-exclusive (line, column) edits the way an editor or bot would
    (lines end at ``\n``, ``\r\n`` or ``\r``, as in Python and LSP; not at form feeds)."""
    lines = source_lines(source, keepends=True)
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


# -- the import lines `fix` adds (issue 12) -----------------------------------------------------

NEEDS_IMPORT = [
    # `from torch import tensor` binds no `torch`: `fix` adds `import torch` at the top.
    "from torch import tensor\ndef forward(self, x):\n    return tensor(0.0, device=x.device)\n",
    # after the docstring and `from __future__`, before comments; torch only under TYPE_CHECKING
    '"""Doc."""\nfrom __future__ import annotations\n# c\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
    "    import torch\nfrom torch import Tensor\ndef f(x: Tensor):\n    return x[x > 1].sum()\n",
    # a form feed and a vertical tab above the import: no line end to Python
    '"""Doc \x0c page two.\x0b"""\r\n# \x0c\r\nfrom torch import tensor\r\ndef forward(self, x):\r\n    return tensor(0.0, device=x.device)\r\n',
    # CRLF line endings and a shebang header
    "#!/usr/bin/env python\r\n# header\r\nfrom torch import where, Tensor\r\ndef f(x: Tensor, y: Tensor):\r\n    m = x > 0\r\n    x[m] = y[m]\r\n    return x\r\n",
    # torch.nn.functional: one `import torch.nn.functional` line binds `torch` too
    "from torch import nn\nclass L(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ce = nn.CrossEntropyLoss()\n"
    "    def forward(self, p, t):\n        t = t.long()\n        m = t != 255\n        return self.ce(p[m], t[m])\n",
]


@pytest.mark.parametrize("source", NEEDS_IMPORT, ids=range(len(NEEDS_IMPORT)))
def test_json_and_sarif_edits_include_the_import_fix_adds(source):
    from synclint.fixers.apply import fix_text
    from synclint.reporters.sarif import sarif_document

    # (the masked cross-entropy is reported at both masked reads, with one proposal)
    finding = [f for f in check_source(source, "m.py") if f.fix is not None][0]
    expected = fix_text(source, "m.py", unsafe=True)[0]
    assert "import torch" in expected.split("def ")[0].replace("if TYPE_CHECKING:\n    import torch\n", "")
    assert apply_edits(source, finding.fix.edits) == expected
    (result,) = [r for r in sarif_document([finding])["runs"][0]["results"] if r.get("fixes")]
    replacements = result["fixes"][0]["artifactChanges"][0]["replacements"]
    as_edits = tuple(
        Edit(
            r["deletedRegion"]["startLine"],
            r["deletedRegion"].get("startColumn", 1),
            r["deletedRegion"].get("endLine", r["deletedRegion"]["startLine"]),
            r["deletedRegion"].get("endColumn", 1),
            r["insertedContent"]["text"],
        )
        for r in replacements
    )
    assert apply_edits(source, as_edits) == expected


@pytest.mark.parametrize(
    "source",
    [
        # one statement replaced by several (the loop, then the read-back): the comment
        # above the loop is outside the edit and must not be repeated
        "import torch\ndef train(model, loader):\n    total = 0.0\n    # the loop\n    for x in loader:\n"
        "        loss = model(x).mean()\n        total += loss.item()\n    return total\n",
        "import torch\ndef f(t: torch.Tensor, x: torch.Tensor):\n    # count\n    return x * len(torch.unique(t))\n",
    ],
)
def test_edits_of_multi_statement_replacements_keep_comments_once(source):
    from synclint.fixers.apply import fix_text

    finding = [f for f in check_source(source, "m.py") if f.fix is not None][0]
    assert apply_edits(source, finding.fix.edits) == fix_text(source, "m.py", unsafe=True)[0]
