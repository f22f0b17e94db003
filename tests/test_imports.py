"""The import map read from CPython's tree equals the one walked from libcst's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from synclint.analysis.imports import collect_imports
from synclint.engine import parse
from synclint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent

TRICKY = """
import torch, numpy as np
import torch.nn.functional
import torch.nn.functional as F
from torch import nonzero as nz, where
from . import sibling
from .models import resnet
from torch.utils.data import *
try:
    import apex
except ImportError:
    from torch.cuda import amp as apex
else:
    import pandas as pd
finally:
    import os.path
def f():
    import torch as T
    class C:
        from numpy import where
    for _ in range(3):
        with open("x") as fh:
            from torch import where
    while True:
        import jax.numpy as jnp
match x:
    case [a]:
        import cupy as np
    case _:
        from torch import unique as np
F = 1
from torch import where as F
"""


def _sources() -> list[str]:
    sources = [TRICKY]
    sources += [s for r in ALL_RULES for s in r.VALID] + [e.code for r in ALL_RULES for e in r.INVALID]
    sources += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.py"))]
    sources += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "synclint").rglob("*.py"))]
    return sources


@pytest.mark.parametrize("source", _sources())
def test_stdlib_import_map_is_the_libcst_one_in_the_same_order(source):
    module = parse(source)
    walked = collect_imports(module).aliases
    read = collect_imports(module, ast.parse(source)).aliases
    assert list(read.items()) == list(walked.items())


def test_the_tricky_module_binds_what_python_would_last():
    aliases = collect_imports(parse(TRICKY), ast.parse(TRICKY)).aliases
    assert aliases["F"] == "torch.where"
    assert aliases["np"] == "torch.unique"
    assert aliases["*torch.utils.data"] == "torch.utils.data"
    assert "sibling" not in aliases and "resnet" not in aliases
