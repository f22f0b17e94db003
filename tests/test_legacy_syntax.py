"""SL000 of files written for a Python no current PyTorch runs (synclint.legacy_syntax)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.engine import check_source
from synclint.legacy_syntax import PYTHON_2, PYTHON_36
from synclint.runner import RunOptions, lint_paths

OLD = [
    ("print 'hello'\n", PYTHON_2, 2, 1),
    ("exec 'x = 1'\n", PYTHON_2, 2, 1),
    ("x = 0777\n", PYTHON_2, 2, 5),
    ("x = `1`\n", PYTHON_2, 2, 5),
    ("x = 1 <> 2\n", PYTHON_2, 2, 7),
    ("x = ur'abc'\n", PYTHON_2, 2, 7),
    ("raise ValueError, 'x'\n", PYTHON_2, 2, 17),
    ("x = 10L\n", PYTHON_2, 2, 6),
    ("f = lambda (a, b): a\n", PYTHON_2, 2, 12),
    ("def f(a, (b, c)):\n    pass\n", PYTHON_2, 2, 10),
    ("y = x.cuda(async=True)\n", PYTHON_36, 2, 12),
    ("def f(x, async=False):\n    pass\n", PYTHON_36, 2, 10),
]


@pytest.mark.parametrize("body,why,line,column", OLD)
def test_syntax_of_an_old_python_makes_the_notice_cold(body, why, line, column):
    found = check_source("import torch\n" + body, "m.py", include_cold=True)
    assert [(f.code, f.line, f.column, f.context, f.why) for f in found] == [("SL000", line, column, "cold", why)]
    assert check_source("import torch\n" + body, "m.py") == []


@pytest.mark.parametrize("body", [
    "def f(:\n    pass\n",
    "class nn.BatchNorm2d(x):\n    pass\n",
    "x = (1,\n",
    "x = 'async' +\n",
    "x = 08.5e\n",
    # Python 3 typos whose line merely mentions an old form elsewhere (a comment, a string)
    "x = 1 2  # was x.cuda(async=True)\n",
    "x = 1 2  # ur'raw'\n",
    "x = 1 2  # 10L\n",
    "```python\nx = 1\n```\n",  # a Markdown fence pasted into a module is no backquote repr
    "print f'loss {x}'\n",  # an f-string: Python 3.6+ code that lost its parentheses
    "lr = 1e-3L\n",  # no Python ever had long floats
])
def test_other_syntax_errors_stay_shown(body):
    found = check_source("import torch\n" + body, "m.py")
    assert [(f.code, f.context) for f in found] == [("SL000", None)]


def test_a_python_2_training_script_is_not_shown_by_default(tmp_path):
    # two-stream-action-recognition: every script uses `print x`; no current PyTorch runs them.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (tmp_path / "spatial_cnn.py").write_text("import torch\nprint 'start'\nfor x in loader:\n    x.cuda(async=True)\n")
    (tmp_path / "model.py").write_text("import torch\ndef f(x):\n    return x.nonzero()\n")
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).name, f.code) for f in shown] == [("model.py", "SL101")]
    every = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).name, f.code, f.why) for f in every if f.code == "SL000"] == [("spatial_cnn.py", "SL000", PYTHON_2)]
