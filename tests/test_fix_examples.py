"""Every rule's ``Invalid(..., fixed=...)`` example: the rule's own fix gives exactly that text."""

from __future__ import annotations

import pytest

from synclint.config import Settings
from synclint.fixers.apply import fix_text
from synclint.rules import ALL_RULES

EXAMPLES = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.INVALID) if ex.fixed is not None]


def _fix(code: str, rule) -> str:
    return fix_text(code, "example.py", Settings(select=(rule.code,)), unsafe=True)[0]


@pytest.mark.parametrize(("rule", "index", "example"), EXAMPLES, ids=[f"{r.code}-fixed-{i}" for r, i, _ in EXAMPLES])
def test_fixed_example(rule, index, example):
    assert _fix(example.code, rule) == example.fixed


@pytest.mark.parametrize(("rule", "index", "example"), EXAMPLES, ids=[f"{r.code}-idempotent-{i}" for r, i, _ in EXAMPLES])
def test_fixing_the_fixed_example_changes_nothing(rule, index, example):
    assert _fix(example.fixed, rule) == example.fixed


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.fix_applicability], ids=lambda r: r.code)
def test_every_fixable_rule_has_a_fixed_example(rule):
    assert any(ex.fixed is not None for ex in rule.INVALID)
