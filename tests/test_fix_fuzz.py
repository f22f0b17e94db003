"""A shortened run of the differential fixer fuzzer (benchmarks/fuzz_fixes.py): every fix
form, generated programs around the pattern, original and fixed run on random inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the harness imports and runs torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from fuzz_fixes import FORMS, agree, fuzz_form  # noqa: E402


@pytest.mark.parametrize("form", sorted(FORMS))
def test_fixes_agree_with_the_original_or_decline(form):
    tally = fuzz_form(form, programs=16, inputs=3, seed=2)
    assert tally.differences == 0, tally.first_difference
    assert tally.cases == 48
    assert tally.fixed > 0, "no generated program was fixed: the run would prove nothing"


def test_the_comparison_is_not_vacuous():
    """A value, dtype or gradient change is a difference; both raising is agreement."""
    import torch

    x = torch.ones(2)
    assert not agree((x, None), (x.double(), None))
    assert not agree((x, None), (x + 1e-3, None))
    assert not agree((x, (torch.ones(2),)), (x, (torch.zeros(2),)))
    assert not agree((2, None), (torch.tensor(2), None))
    assert not agree((x, None), ValueError())
    assert agree(ValueError(), TypeError())
    assert agree((torch.tensor(float("nan")), None), (torch.tensor(float("nan")), None))
