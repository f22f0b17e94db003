"""The text prefilter never drops a finding: with and without it, results are equal."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.catalogue import ops_for
from synclint.config import Settings
from synclint.engine import check_module, check_source, parse, select_rules
from synclint.prefilter import TENSOR_EVIDENCE, can_skip, mentions_any
from synclint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.py"))


def _sources() -> list[tuple[str, str]]:
    sources = [(f"{r.code}-valid-{i}", s) for r in ALL_RULES for i, s in enumerate(r.VALID)]
    sources += [(f"{r.code}-invalid-{i}", e.code) for r in ALL_RULES for i, e in enumerate(r.INVALID)]
    sources += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in EXAMPLE_FILES]
    # The same without their torch imports: findings must then rest on other evidence.
    sources += [
        (f"{name}-no-import", "\n".join(l for l in text.splitlines() if "import torch" not in l) + "\n")
        for name, text in list(sources)
    ]
    return sources


SOURCES = _sources()


def _unfiltered(source: str, rules) -> list:
    return check_module(parse(source), source, "example.py", rules)


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_prefilter_keeps_every_finding_of_all_rules(name, source):
    assert check_source(source, "example.py") == _unfiltered(source, select_rules(None))


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_prefilter_keeps_every_finding_of_each_rule_alone(rule):
    settings = Settings(select=(rule.code,))
    own = [(n, s) for n, s in SOURCES if n.startswith(rule.code) or n.startswith("examples")]
    for name, source in own:
        expected = _unfiltered(source, [rule])
        assert check_source(source, "example.py", settings) == expected, name


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_every_rule_declares_tokens(rule):
    assert rule.TOKENS is None or (isinstance(rule.TOKENS, frozenset) and rule.TOKENS)


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_catalogue_spellings_are_covered_by_tokens(rule):
    tokens = rule.TOKENS
    if tokens is None or tokens >= TENSOR_EVIDENCE or "torch" in tokens:
        return  # any tensor evidence, or gated on the torch import itself
    for op in ops_for(rule.code):
        for spelling in [f.rsplit(".", 1)[1] for f in op.functions] + list(op.methods):
            assert mentions_any(spelling, tokens) or mentions_any(f".{spelling}", tokens), spelling


def test_a_file_without_tokens_is_skipped_but_a_broken_one_is_not():
    rules = select_rules(None)
    assert can_skip("import os\nprint(os.getcwd())\n", rules)
    assert not can_skip("def f(:\n", rules)
    assert [f.code for f in check_source("def f(:\n")] == ["SL000"]


def test_a_dot_separated_from_its_method_still_counts():
    assert mentions_any("y = (x.\n    float())\n", {".float"})
    assert mentions_any("y = x . float()\n", {".float"})
