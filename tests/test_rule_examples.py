"""Every rule's VALID / INVALID examples run as tests (the rule is its own test)."""

from __future__ import annotations

import pytest

from synclint.engine import check_source
from synclint.project import is_hidden
from synclint.project.run_once import RUN_ONCE_WHYS
from synclint.rules import ALL_RULES

VALID = [(rule, i, src) for rule in ALL_RULES for i, src in enumerate(rule.VALID)]
INVALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.INVALID)]


def _positions(source: str, code: str) -> list[tuple[int, int]]:
    """Where ``code`` is shown in ``source``, an example being a fragment of a step: its
    module-level lines stand for the step's, not for a script's code that runs once."""
    return [
        (f.line, f.column) for f in check_source(source, "example.py", include_cold=True)
        if f.code == code and (not is_hidden(f.context, f.why) or f.why in RUN_ONCE_WHYS)
    ]


@pytest.mark.parametrize(("rule", "index", "source"), VALID, ids=[f"{r.code}-valid-{i}" for r, i, _ in VALID])
def test_valid_example_is_not_flagged(rule, index, source):
    assert _positions(source, rule.code) == []


@pytest.mark.parametrize(("rule", "index", "example"), INVALID, ids=[f"{r.code}-invalid-{i}" for r, i, _ in INVALID])
def test_invalid_example_is_flagged_at_its_position(rule, index, example):
    assert (example.line, example.column) in _positions(example.code, rule.code)


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_every_rule_has_six_examples_each_way(rule):
    assert len(rule.VALID) >= 6 and len(rule.INVALID) >= 6


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_rule_docstring_has_every_section(rule):
    doc = rule.documentation()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc, f"{rule.code} docstring lacks {section!r}"
