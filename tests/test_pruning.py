"""Pruning top-level statements before the parse never changes a finding.

Each case is checked both ways: the engine's pruned check against a plain
check of the whole module, and that pruning really happened (so the
comparison is not vacuous).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from synclint.engine import (
    _check_parsed,
    _check_text,
    check_module,
    parse,
    select_rules,
)
from synclint.pruning import prune, statement_tokens
from synclint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.py"))
TOKENS = statement_tokens(ALL_RULES)

# Top-level code no rule can report on, whose docstrings, strings and comments
# still mention tokens (torch, .item(), where): the code decides, not the text.
FILLER = '''

def _filler_factory(pretrained=False, **kwargs):
    """Builds a model: see torch.Tensor.item() and where() in the docs."""
    cfg = dict(url="https://download.pytorch.org/models/where.pth", depth=12)  # torch
    # a comment about x.item() and torch.nonzero
    return _filler_build("vit", pretrained, **dict(cfg, **kwargs))


def _filler_build(name, pretrained, **kwargs):
    return {"name": name, "pretrained": pretrained, **kwargs}


FILLER_CFGS = {
    "a": _filler_factory(),
    "b": _filler_factory(pretrained=True, url="https://github.com/pytorch/vision/unique.pth"),
}
'''


def _findings(source: str, pruned: bool) -> list[tuple]:
    rules = select_rules(None)
    if pruned:
        found = _check_text(source, "example.py", rules)
    else:
        found = check_module(parse(source), source, "example.py", rules, include_cold=True)
    return [(f.code, f.line, f.column, f.end_line, f.end_column, f.message, f.fix) for f in found]


def _pruned(source: str):
    return prune(source, ast.parse(source), TOKENS)


def _kept_lines(source: str) -> list[int]:
    pruned = _pruned(source)
    assert pruned is not None
    return [statement.lineno for statement in pruned.tree.body]


def _examples() -> list[tuple[str, str]]:
    sources = [(f"{r.code}-valid-{i}", s) for r in ALL_RULES for i, s in enumerate(r.VALID)]
    sources += [(f"{r.code}-invalid-{i}", e.code) for r in ALL_RULES for i, e in enumerate(r.INVALID)]
    sources += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in EXAMPLE_FILES]
    return sources


@pytest.mark.parametrize(("name", "source"), _examples(), ids=[name for name, _ in _examples()])
def test_findings_are_unchanged_with_droppable_code_around(name, source):
    padded = source + FILLER
    pruned = _pruned(padded)
    assert pruned is not None, "the filler must be dropped"
    assert "_filler_build" not in pruned.source and "FILLER_CFGS" not in pruned.source
    assert _findings(padded, pruned=True) == _findings(padded, pruned=False)


def test_blanked_statements_keep_every_line_and_column():
    source = "import torch\n" + FILLER + "\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
    pruned = _pruned(source)
    assert pruned.source.count("\n") == source.count("\n")
    assert pruned.source.splitlines()[-2:] == source.splitlines()[-2:]
    assert [f[:3] for f in _findings(source, pruned=True)] == [("SL101", source.count("\n"), 12)]


def test_crlf_sources_keep_their_positions():
    source = ("import torch\n" + FILLER + "\ndef f(x: torch.Tensor):\n    return x.nonzero()\n").replace("\n", "\r\n")
    assert _pruned(source) is not None
    assert _findings(source, pruned=True) == _findings(source, pruned=False) != []


def test_a_dropped_caller_of_a_tensor_returning_function_falls_back_to_the_whole_file():
    source = (
        "import torch\n\n\ndef make(n):\n    return torch.zeros(n, device='cuda')\n\n\n"
        "def use():\n    m = make(3)\n    if m:\n        return 1\n" + FILLER
    )
    pruned = _pruned(source)
    assert 8 not in [s.lineno for s in pruned.tree.body]  # ``use`` mentions no token by itself...
    assert "make" in pruned.called
    found = _findings(source, pruned=True)
    assert ("SL202", 10, 8) in [f[:3] for f in found]  # ...but its finding is still reported
    assert found == _findings(source, pruned=False)


def test_a_dropped_reader_of_a_module_level_tensor_falls_back_to_the_whole_file():
    source = (
        "import torch\nKEEP = torch.ones(3, device='cuda') > 0\n\n\n"
        "def use():\n    if KEEP:\n        return 1\n" + FILLER
    )
    assert "KEEP" in _pruned(source).watched
    found = _findings(source, pruned=True)
    assert ("SL202", 6, 8) in [f[:3] for f in found]
    assert found == _findings(source, pruned=False)


def test_a_function_passed_as_a_value_is_not_a_call():
    source = (
        "import torch\n\n\ndef filter_fn(state):\n    return {k: v.float() for k, v in state.items()}\n\n\n"
        "def create(name):\n    return build(name, filter_fn=filter_fn)\n" + FILLER
    )
    pruned = _pruned(source)
    assert "filter_fn" in pruned.watched and "filter_fn" not in pruned.called


def test_statements_binding_names_that_kept_code_reads_are_kept():
    source = (
        "import torch\nIGNORED = [255, 254]\n\n\ndef scale():\n    return 2\n\n\n"
        "def loss(x: torch.Tensor):\n    return x * scale() + torch.tensor(IGNORED, device=x.device)\n" + FILLER
    )
    assert _kept_lines(source)[:4] == [1, 2, 5, 9]
    assert _findings(source, pruned=True) == _findings(source, pruned=False)


@pytest.mark.parametrize(
    ("statement", "why"),
    [
        ("def f(c):\n    return w(c)\n", "a torch alias"),
        ("def f(x: 'torch.Tensor'):\n    if x:\n        return 1\n", "a string annotation"),
        ("def f(x):\n    return x . \\\n        item()\n", "a catalogue method across a line break"),
        ("def f():\n    import numpy as np\n    return np.zeros(3)\n", "an import"),
        ("def f():\n    global STATE\n    STATE = 1\n", "a global declaration"),
        ("def f(a, b):\n    return a.eq(b)\n", "comparison-method evidence"),
        ("def forward(x):\n    return x\n", "a forward"),
    ],
    ids=lambda value: value if " " in value else None,
)
def test_statements_that_mention_what_rules_read_are_kept(statement, why):
    source = "import torch\nfrom torch import where as w\n\n\n" + statement + FILLER
    assert 5 in _kept_lines(source), why


@pytest.mark.parametrize(
    "source",
    [
        "from torch import *\n" + FILLER,  # any bare name may be torch
        "import torch\nx = 1; y = 2\n" + FILLER.replace("\n\n\ndef _filler_build", "; z = 3\n\n\ndef _filler_build", 1),
        "import torch\n",  # nothing to drop
    ],
    ids=["star-import", "shared-line", "nothing-to-drop"],
)
def test_no_pruning(source):
    assert _pruned(source) is None


def test_a_module_level_finding_with_a_fix_is_checked_on_the_whole_file():
    source = "import torch\nloader = torch.utils.data.DataLoader(ds)\nd = 'cuda'\n" + FILLER
    pruned = _pruned(source)
    rules = select_rules(None)
    assert _check_parsed(parse(pruned.source), source, "example.py", rules, pruned.source, pruned.tree, pruned) is None
    found = _findings(source, pruned=True)
    assert any(f[0] == "SL402" and f[-1] is not None for f in found)
    assert found == _findings(source, pruned=False)


@pytest.mark.parametrize(
    "statement",
    [
        # Reductions and multi-dimensional indexing make an unknown a tensor in torch-only files.
        "def train_step(x):\n    if x.any():\n        pass\n",
        "def compute_loss(b):\n    s = b[:, 0]\n    if s:\n        return 1\n",
        # A dropped ``w.append(1)`` would cancel the module-wide evidence of ``w.float()``.
        "def train_step():\n    torch.manual_seed(0)\n    if w:\n        return 1\n\n\nw.float()\nw.append(1)\n",
    ],
    ids=["array-method", "array-subscript", "module-evidence"],
)
def test_what_turns_an_unknown_into_a_tensor_is_never_dropped(statement):
    source = "import torch\n\n\n" + statement + FILLER
    assert _pruned(source) is not None
    assert _findings(source, pruned=True) == _findings(source, pruned=False)
