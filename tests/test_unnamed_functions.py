"""A loss function nothing in the project names never runs: like a class nothing names."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

LOSSES = """
    import torch


    def _slow_neg_loss(pred, gt):
        pos = gt.eq(1)
        return pred[pos].sum()


    def focal_loss(pred, gt):
        pos = gt.eq(1)
        return pred[pos].mean()


    def dice_loss(pred, gt):
        return (pred * gt).sum().item()
    """

TRAIN = """
    from pkg.losses import focal_loss


    def train(model, loader):
        for x, y in loader:
            loss = focal_loss(model(x.cuda()), y.cuda())
            loss.backward()
    """


def _found(tmp_path: Path, **extra: str) -> dict[int, tuple[str, str]]:
    files = {"pyproject.toml": "[project]\nname = 'pkg'\n", "pkg/__init__.py": "", "pkg/losses.py": LOSSES,
             "pkg/train.py": TRAIN, **{name.replace("__", "/"): text for name, text in extra.items()}}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return {f.line: (f.context, f.why) for f in findings if f.path.endswith("losses.py")}


def test_a_loss_function_nothing_names_is_unreached(tmp_path):
    found = _found(tmp_path)
    assert found[7] == ("unknown", "not reached from any step of the project: nothing in the project names `_slow_neg_loss`")
    assert found[12] == ("hot", "loss `focal_loss`")
    assert found[16] == ("unknown", "not reached from any step of the project: nothing in the project names `dice_loss`")
    # Neither is shown by default.
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).name, f.line) for f in shown if f.path.endswith("losses.py")] == [("losses.py", 12)]


@pytest.mark.parametrize(
    "extra",
    [
        {"pkg__registry.py": "from pkg.losses import dice_loss, _slow_neg_loss\n\nLOSSES = {'dice': dice_loss, 'neg': _slow_neg_loss}\n"},
        {"configs__train.yaml": "loss: [dice_loss, _slow_neg_loss]\n"},
        {"README.md": "Pick `dice_loss` or `_slow_neg_loss` with --loss.\n"},
        {"pkg__pick.py": "from pkg import losses\n\n\ndef pick(name):\n    return getattr(losses, name)\n"},
    ],
    ids=["a registry dict", "a configuration file", "documentation", "reflection"],
)
def test_a_loss_function_the_project_names_or_may_fetch_keeps_its_context(tmp_path, extra):
    found = _found(tmp_path, **extra)
    assert "nothing in the project names" not in found[7][1]
    assert "nothing in the project names" not in found[16][1]


def test_a_decorated_loss_function_may_be_registered(tmp_path):
    registered = "import torch\n\n\n@LOSSES.register('mask')\ndef mask_loss(pred, gt):\n    return (pred * gt).sum().item()\n"
    _found(tmp_path, **{"pkg__registered.py": registered})
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    whys = {f.line: f.why for f in findings if f.path.endswith("registered.py")}
    assert "nothing in the project names" not in whys[6]


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"pkg__old.py": 'def run(model, x, y):\n    """Call `dice_loss(pred, gt)` or `_slow_neg_loss`."""\n    return 0\n'}, False),
        ({"pkg__old.py": '"""\nloss = dice_loss(model(x), y) + _slow_neg_loss(model(x), y)\n"""\n'}, False),
        ({"pkg__old.py": "'dice_loss' '_slow_neg_loss'\n"}, False),
        ({"pkg__old.py": 'HELP = """\nloss = dice_loss(p, y) + _slow_neg_loss(p, y)\n"""\n'}, True),
        ({"pkg__old.py": 'LOSSES = ("dice_loss",\n          "_slow_neg_loss")\n'}, True),
        ({"pkg__old.py": 'x = 1; """a"""\nprint("dice_loss", """_slow_neg_loss""")\n'}, True),
        ({"pkg__old.py": 'def show(model, x, y):\n    f"""{dice_loss(model(x), y)} {_slow_neg_loss(model(x), y)}"""\n'}, True),
        ({"pkg__old.py": 'def show(model, x, y):\n    "loss: " rf"{dice_loss(model(x), y)} {_slow_neg_loss(model(x), y)}"\n'}, True),
    ],
    ids=["a docstring", "code put in triple quotes", "strings joined as a statement", "a string assigned",
         "strings in a tuple", "strings passed to a call", "an f-string statement", "a string joined to an f-string"],
)
def test_a_string_that_is_a_statement_of_its_own_names_nothing(tmp_path, extra, named):
    # GraphCL's only call of its pre-training ``eval_loss`` sits in code put in triple quotes.
    found = _found(tmp_path, **extra)
    assert ("nothing in the project names" not in found[7][1]) is named
    assert ("nothing in the project names" not in found[16][1]) is named


@pytest.mark.parametrize("end", ["\n", ""], ids=["a file ending a line", "a file ending without a newline"])
def test_a_line_of_an_f_string_that_looks_like_a_comment_names_what_it_calls(tmp_path, end):
    # The tokenizer says the ``#`` is in a string, also where the file's last line has no
    # newline (its end marker then sits past the last line).
    report = 'def report(model, x, y):\n    print(f"""\n# Results: {dice_loss(model(x), y)} {_slow_neg_loss(model(x), y)}\n""")'
    found = _found(tmp_path, **{"pkg__report.py": report + end})
    assert "nothing in the project names" not in found[7][1]
    assert "nothing in the project names" not in found[16][1]
