"""The real-code harness (benchmarks/real_code_fixes.py) can fail: a fix that changes a value
is reported as a difference, a run that never reaches the fixed lines is not counted as
proof, and functions reachable only through an entry point of another module are run there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the harness imports and runs torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import real_code_fixes  # noqa: E402

MODULE = '''import torch


def clipped(x: torch.Tensor) -> torch.Tensor:
    """Keep the positive part.

    Args:
        x: the scores, shape :math:`(B, 3)`.
    """
    if x.shape[-1] != 3:
        raise ValueError("expected (B, 3)")
    return torch.where(x > 0, x, torch.tensor(0.0))


def rare(x: torch.Tensor) -> torch.Tensor:
    if x.shape[-1] != 3:
        raise ValueError("expected (B, 3)")
    if x.abs().sum() > 1e9:
        return torch.tensor(1.0)
    return x.sum()


class Generator:
    def __init__(self, table: dict) -> None:
        if not isinstance(table, dict):
            raise TypeError("a table of parameters")
        self.table = table

    def forward(self, batch_shape: tuple) -> torch.Tensor:
        scale = self.table["scale"]
        return torch.where(torch.rand(batch_shape) > 0.5, torch.tensor(scale), torch.tensor(0.0))
'''

CALLER = '''import torch

from {package}.mod import Generator


class Augment(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator = Generator({{"scale": 2.0}})

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return image * self.generator.forward(image.shape)
'''


def _repos(tmp_path: Path, package: str, replacements: list[tuple[str, str]]) -> tuple[Path, Path]:
    for side in ("original", "fixed"):
        folder = tmp_path / side / "project" / package
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        source = MODULE
        if side == "fixed":
            for old, new in replacements:
                assert old in source
                source = source.replace(old, new)
        (folder / "mod.py").write_text(source)
        (folder / "caller.py").write_text(CALLER.format(package=package))
    return tmp_path / "original" / "project", tmp_path / "fixed"


def _outcomes(tmp_path: Path, package: str, replacements: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    repo, fixed_root = _repos(tmp_path, package, replacements)
    report = real_code_fixes.evaluate(repo, tries=16, seed=0, fixed_root=fixed_root)
    return {r["function"].split("::")[1]: (r["outcome"], r["detail"]) for r in report["records"]}


def test_an_equal_fix_is_equal_and_a_changed_value_is_a_difference(tmp_path):
    outcomes = _outcomes(tmp_path, "harness_a", [
        ("torch.where(x > 0, x, torch.tensor(0.0))", "torch.where(x > 0, x, torch.zeros(()))"),
        ("torch.tensor(scale), torch.tensor(0.0)", "torch.tensor(scale), torch.tensor(0.5)"),
    ])
    # the docstring's (B, 3) shape is what makes `clipped` run at all
    assert outcomes["clipped"][0] == "equal"
    # `Generator` needs a table nothing generated can give: reached through `Augment` in
    # another module, where the fixed copy is swapped in for the original class
    assert outcomes["Generator.forward"][0] == "different", outcomes["Generator.forward"]
    assert outcomes["Generator.forward"][1].startswith("through harness_a/caller.py::Augment")


def test_a_run_that_never_reaches_the_fixed_lines_proves_nothing(tmp_path):
    outcomes = _outcomes(tmp_path, "harness_b", [("return torch.tensor(1.0)", "return torch.full((), 1.0)")])
    assert outcomes == {"rare": ("equal, lines not reached", outcomes["rare"][1])}


def test_the_changed_lines_are_the_fixed_files_replaced_and_inserted_lines():
    assert real_code_fixes.changed_lines("a\nb\nc\n", "a\nB\nc\nd\n") == frozenset({2, 4})


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("Args:\n    x: the image :math:`(B, C, H, W)`.\n", {"x": [(2, 3, 8, 8)]}),
        ("Args:\n    x: boxes [B, D, 6], where B is the batch.\n", {"x": [(2, 4, 6)]}),
        ("Args:\n    x: points of shape :math:`(*, 2)`.\n", {"x": [(2, 2)]}),
        ("Args:\n    x: a tensor (see below).\n", {}),
    ],
)
def test_shapes_are_read_from_the_parameter_docs(doc, expected):
    def f(x):
        pass

    f.__doc__ = doc
    assert real_code_fixes.documented_shapes(f) == expected
