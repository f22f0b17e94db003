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


# -- star imports of project modules ---------------------------------------------------------

_STAR_USER = """\
import torch
from {source} import *


class Head(torch.nn.Module):
    def forward(self, emb, labels, classes):
        if np.prod(emb.shape) == 0:
            return emb
        counts = np.bincount(classes, minlength=4)
        hot = F.one_hot(labels)
        return emb, counts, hot
"""


def _star_findings(tmp_path: Path, files: dict[str, str]) -> list[tuple[int, int, str]]:
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return sorted((f.line, f.column, f.code) for f in findings)


@pytest.mark.parametrize("layout", ["plain", "relative", "chained"])
def test_a_star_import_of_a_project_module_brings_in_its_imports(tmp_path: Path, layout: str):
    """``np`` after ``from utils import *`` of a module that imports numpy is numpy: neither
    ``np.prod(emb.shape)`` nor ``np.bincount(...)`` is a tensor's method (Towards-Realtime-MOT);
    ``F`` is torch's functional module, whose ``one_hot`` without ``num_classes`` syncs."""
    utils = "import numpy as np\nimport torch.nn.functional as F\n"
    files = {
        "plain": {"train.py": _STAR_USER.format(source="utils"), "utils.py": utils},
        "relative": {"pkg/__init__.py": "", "pkg/model.py": _STAR_USER.format(source=".utils"), "pkg/utils.py": utils},
        "chained": {"train.py": _STAR_USER.format(source="common"), "common.py": "from utils import *\nimport os\n",
                    "utils.py": utils},
    }[layout]
    assert _star_findings(tmp_path, files) == [(10, 15, "SL105")]


def test_without_the_star_import_s_module_the_names_stay_unknown(tmp_path: Path):
    """The same code when the imported module is not the project's: nothing says what ``np`` is."""
    found = _star_findings(tmp_path, {"train.py": _STAR_USER.format(source="somewhere_else")})
    assert (7, 12, "SL202") in found and (9, 18, "SL105") in found


def test_the_file_s_own_import_wins_over_a_star_import(tmp_path: Path):
    """``import torch as np`` in the file itself: ``np.bincount`` is torch's, whatever the star
    import has (and ``F`` still comes from the star import)."""
    user = _STAR_USER.format(source="utils").replace("import torch\n", "import torch\nimport torch as np\n", 1)
    found = _star_findings(tmp_path, {"train.py": user, "utils.py": "import numpy as np\nimport torch.nn.functional as F\n"})
    assert found == [(8, 12, "SL202"), (10, 18, "SL105"), (11, 15, "SL105")]


def test_star_imports_of_modules_that_star_import_each_other_are_walked_once_each(monkeypatch):
    """Eight modules each doing ``from mJ import *`` of every other one: each file's star
    imports visit each module once, not once per path through them (8! paths)."""
    from synclint.project import facts
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    n = 8
    summaries = {f"/p/m{i}.py": summarize("".join(f"from m{j} import *\n" for j in range(n) if j != i)
                                          + f"import numpy as np{i}\n") for i in range(n)}
    index = ProjectIndex(summaries, Path("/p"))
    calls = []
    real = facts._star_imported_names

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(facts, "_star_imported_names", counted)
    names = facts._star_imported_names(index, "/p/m0.py")
    assert sorted(names) == [f"np{i}" for i in range(1, n)]
    assert len(calls) <= n


def test_a_name_the_file_binds_itself_is_not_a_star_import_s(tmp_path: Path):
    """``from torch.utils import data`` in utils.py, ``for data in loader`` in train.py: the
    loop's ``data`` is a tensor (whose ``.nonzero()`` syncs), not torch's module, as it is
    when the star-imported module is no project module."""
    train = ("import torch\nfrom {source} import *\n\n\ndef train(model, loader, opt):\n    for data in loader:\n"
             "        data = data.cuda()\n        idx = data.nonzero()\n        loss = model(data, idx)\n"
             "        opt.step()\n")
    utils = "import numpy as np\nfrom torch.utils import data\n"
    without = _star_findings(tmp_path / "a", {"train.py": train.format(source="elsewhere"), "utils.py": utils})
    assert (8, 15, "SL101") in without
    assert _star_findings(tmp_path / "b", {"train.py": train.format(source="utils"), "utils.py": utils}) == without


def test_a_file_being_fixed_keeps_what_its_star_imports_bring_in(tmp_path: Path):
    """The fix loop analyses the text on its own with what its project says of it
    (``in_project``): the findings ``check`` shows are the ones it sees, so ``np`` of a
    star import is numpy there too."""
    from synclint.engine import analyse
    from synclint.project import facts_for_files, facts_for_source
    from synclint.project.facts import in_project

    source = _STAR_USER.format(source="utils")
    (tmp_path / "train.py").write_text(source)
    (tmp_path / "utils.py").write_text("import numpy as np\nimport torch.nn.functional as F\n")
    key = str(tmp_path / "train.py")
    project = facts_for_files([tmp_path / "train.py", tmp_path / "utils.py"], None)[key]
    seen = []
    for facts in (project, in_project(facts_for_source(source, key), project)):
        _, reports = analyse(parse(source), source, key, ALL_RULES, facts=facts, include_cold=True)
        seen.append(sorted(report.rule.code for report in reports))
    assert seen[0] == seen[1] and len(seen[0]) == 1


def test_a_later_star_import_wins_even_of_a_module_walked_before():
    """``from b import *`` (b star-imports a, then imports torch as np) and then ``from a
    import *`` (numpy as np): np is numpy, as when run, though a was walked through b."""
    from synclint.project.facts import _star_imported_names
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    summaries = {"/p/a.py": summarize("import numpy as np\n"),
                 "/p/b.py": summarize("from a import *\nimport torch as np\n"),
                 "/p/m.py": summarize("from b import *\nfrom a import *\n")}
    index = ProjectIndex(summaries, Path("/p"))
    assert _star_imported_names(index, "/p/m.py") == {"np": ("numpy", True)}
    assert _star_imported_names(index, "/p/b.py") == {}
