"""Which mentions name a class or function for :mod:`synclint.project.unnamed_classes`:
a comment names nothing, a file that defines a name itself means its own by the bare
name, and a file names its own definitions by the bare name, never as an attribute
(:func:`synclint.project.mentions.named_words`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.mentions import named_words
from synclint.runner import RunOptions, lint_paths

#: Two runners, each with a ``validate`` that loops over a loader; ``runner_finetune``
#: calls its own, ``runner_pretrain``'s is called only in a comment.
PRETRAIN = """
    import torch

    from tools.steps import train_step


    def run_net(model, loader):
        for x in loader:
            train_step(model, x.cuda(non_blocking=True)).backward()
        # metrics = validate(model, loader)


    def validate(model, loader):
        for x in loader:
            print(model(x.cuda(non_blocking=True)).sum().item())
    """
FINETUNE = """
    import torch

    from tools.steps import train_step


    def run_net(model, loader):
        for x in loader:
            train_step(model, x.cuda(non_blocking=True)).backward()
        validate(model, loader)


    def validate(model, loader):
        for x in loader:
            print(model(x.cuda(non_blocking=True)).sum().item())
    """
STEPS = """
    def train_step(model, x):
        return model(x).sum()
    """
MAIN = """
    import sys

    from tools.runner_pretrain import run_net as pretrain
    from tools.runner_finetune import run_net as finetune

    if __name__ == "__main__":
        (pretrain if sys.argv[1] == "pretrain" else finetune)(None, [])
    """
NEVER_NAMED = "not reached from any step of the project: nothing in the project names `validate`"


def _contexts(tmp_path: Path, files: dict[str, str]) -> dict[tuple[str, int], tuple[str, str]]:
    files = {"pyproject.toml": "[tool.synclint]\n", "tools/__init__.py": "", "tools/steps.py": STEPS, **files}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return {(Path(f.path).name, f.line): (f.code, f.context, f.why) for f in findings}


def test_a_loop_in_a_function_called_only_in_a_comment_is_never_run(tmp_path: Path):
    found = _contexts(tmp_path, {"main.py": MAIN, "tools/runner_pretrain.py": PRETRAIN,
                                 "tools/runner_finetune.py": FINETUNE})
    # The other runner's bare `validate(...)` is its own function's call, not this one's.
    assert found["runner_pretrain.py", 14] == ("SL201", "unknown", NEVER_NAMED)
    assert found["runner_finetune.py", 14][:2] == ("SL201", "hot")
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).name, f.line) for f in shown if f.code == "SL201"] == [("runner_finetune.py", 14)]


@pytest.mark.parametrize(
    "call",
    ["        validate(model, loader)\n", "        runner_pretrain.validate(model, loader)\n"],
    ids=["imported by name", "an attribute of the module"],
)
def test_a_file_that_reaches_the_other_runner_s_function_names_it(tmp_path: Path, call: str):
    imports = ("from tools.runner_pretrain import validate\n" if call.lstrip().startswith("validate")
               else "from tools import runner_pretrain\n")
    evaluate = f"{imports}\n\ndef evaluate(model, loader):\n    if model:\n{call}"
    found = _contexts(tmp_path, {"main.py": MAIN.replace("import sys\n", "import sys\n    from evaluate import evaluate\n"),
                                 "evaluate.py": evaluate, "tools/runner_pretrain.py": PRETRAIN,
                                 "tools/runner_finetune.py": FINETUNE})
    assert "nothing in the project names" not in found["runner_pretrain.py", 14][2]


#: Point-MAE: ``pointnet_util.py`` and a copy of it, each with the same module classes,
#: which no model builds.
COPY = """
    import torch


    class SetAbstraction(torch.nn.Module):
        def __init__(self):
            super(SetAbstraction, self).__init__()

        def forward(self, x):
            return x[x > 0]
    """
PROGRAM = """
    from model import Net


    def train(loader, device):
        net = Net().to(device)  # (a program that names no device trains on the host: all cold)
        for x in loader:
            net(x.to(device)).sum().backward()
    """
MODEL = """
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2
    """


def test_two_copies_of_a_class_do_not_name_each_other(tmp_path: Path):
    found = _contexts(tmp_path, {"train.py": PROGRAM, "model.py": MODEL, "util.py": COPY, "models/util2.py": COPY})
    never = "not reached from any step of the project: nothing in the project names `SetAbstraction`"
    assert found["util.py", 9] == ("SL103", "unknown", never)
    assert found["util2.py", 9] == ("SL103", "unknown", never)


def test_a_copy_that_subclasses_the_other_by_its_module_names_it(tmp_path: Path):
    subclass = COPY.replace("import torch\n", "import torch\n    import util\n").replace(
        "class SetAbstraction(torch.nn.Module):", "class SetAbstraction(util.SetAbstraction):")
    model = MODEL.replace("import torch\n", "import torch\n    from models.util2 import SetAbstraction\n").replace(
        "return x * 2", "return SetAbstraction()(x)")
    found = _contexts(tmp_path, {"train.py": PROGRAM, "model.py": model, "util.py": COPY, "models/util2.py": subclass})
    assert found["util.py", 9][:2] == ("SL103", "hot")


def test_a_file_s_own_function_is_not_named_by_a_method_of_the_same_name():
    source = textwrap.dedent("""
        def eval(model, loader):
            for x in loader:
                model(x)


        def train(model, loader):
            model.eval()
            trainer.eval
        """)
    spelled, outside = named_words(source, {"eval"}, {"eval": (2, 4)}, {"eval"})
    assert outside == frozenset()  # `model.eval()` is no call of this file's `eval`
    assert spelled == frozenset({"eval"})  # (another file's `eval` may be `trainer.eval`)
    spelled, outside = named_words(source + "eval(model, loader)\n", {"eval"}, {"eval": (2, 4)}, {"eval"})
    assert outside == frozenset({"eval"})


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("# loss = RankLoss()", False),
        ("x = 1  # RankLoss", False),
        ("name = 'RankLoss'", True),
        ('name = "pkg.losses.RankLoss"', True),
        ("s = '# RankLoss'", True),
        ("loss = RankLoss()", True),
        ("loss = losses.RankLoss()", True),
    ],
)
def test_a_comment_names_nothing_a_string_or_code_does(line: str, named: bool):
    assert (named_words(line + "\n", {"RankLoss"}, {}) [0] == {"RankLoss"}) is named


def test_a_file_that_defines_the_name_means_its_own_by_the_bare_name():
    source = "class RankLoss:\n    pass\n\n\nloss = RankLoss()\nother = losses.RankLoss\nkey = 'RankLoss'\n"
    assert named_words(source, {"RankLoss"}, {}, {"RankLoss"})[0] == {"RankLoss"}  # the attribute, the string
    assert named_words(source.replace("other = losses.RankLoss\nkey = 'RankLoss'\n", ""), {"RankLoss"}, {},
                       {"RankLoss"})[0] == frozenset()


#: pretrain-gnns' ``chem/``: each script has its own ``eval``; ``pretrain_supervised.py``
#: never calls its own, and every script calls ``model.eval()``.
SCRIPT = """
    import torch


    def train(model, loader):
        model.train()
        for x in loader:
            model(x.cuda(non_blocking=True)).sum().backward()


    def eval(model, loader):
        model.eval()
        for x in loader:
            print(model(x.cuda(non_blocking=True)).sum().item())


    if __name__ == "__main__":
        train(torch.nn.Linear(2, 2), [])
    {extra}
    """


def test_model_eval_names_no_script_s_own_eval(tmp_path: Path):
    found = _contexts(tmp_path, {"pretrain_supervised.py": SCRIPT.format(extra=""),
                                 "finetune.py": SCRIPT.format(extra="    eval(torch.nn.Linear(2, 2), [])"),
                                 "model.py": MODEL, "train.py": PROGRAM})
    assert found["pretrain_supervised.py", 13] == (
        "SL201", "unknown", "not reached from any step of the project: nothing in the project names `eval`")
    assert found["finetune.py", 13][:2] == ("SL201", "hot")


def test_an_attribute_names_another_file_s_definition_only_on_a_module():
    source = "import losses\nimport pkg.sub as sub\n\nmodel.eval()\nx = losses.APLoss()\ny = sub.heads.Focal\nz = load(m).Other\n"
    spelled, _ = named_words(source, {"eval", "APLoss", "Focal", "Other"}, {}, (), {"losses", "sub"})
    assert spelled == {"APLoss", "Focal", "Other"}
    # Without the file's imports every attribute counts (an unread file's text).
    assert named_words(source, {"eval"}, {})[0] == {"eval"}


@pytest.mark.parametrize(
    "source",
    [
        "import importlib\nmod = importlib.import_module('pkg.losses')\nloss = mod.APLoss()\n",
        "import importlib\nloss = importlib.import_module('pkg').losses.APLoss()\n",
        "loss = __import__('pkg.losses').losses.APLoss()\n",
        "import losses\nloss = (losses\n        .APLoss())\n",
        "import losses\nloss = losses. APLoss()\n",
        "import losses\n\n\nclass T:\n    def __init__(self):\n        self.m = losses\n\n    def f(self):\n"
        "        return self.m.APLoss()\n",
    ],
    ids=["a module bound by import_module", "an attribute of import_module's result", "of __import__'s result",
         "a chain that breaks its line", "a space after the dot", "a module held by an attribute"],
)
def test_an_attribute_of_a_module_the_file_reaches_names_it(source: str):
    imports = {"losses", "importlib"} & set(source.split())
    assert named_words(source, {"APLoss"}, {}, {"APLoss"}, imports)[0] == {"APLoss"}


def test_a_lone_cr_ends_a_comment_as_python_reads_it():
    assert named_words("x = 1  # a comment\rloss = APLoss()\r", {"APLoss"}, {})[0] == {"APLoss"}


def test_a_star_import_may_bind_the_module_an_attribute_starts_at(tmp_path: Path):
    model = MODEL.replace("import torch\n", "import torch\n    from pkg import *\n").replace(
        "return x * 2", "return util.SetAbstraction()(x)")
    found = _contexts(tmp_path, {"train.py": PROGRAM, "model.py": model, "pkg/__init__.py": "from . import util\n",
                                 "pkg/util.py": COPY})
    assert found["util.py", 9][:2] == ("SL103", "hot")


def test_a_copy_that_imports_the_other_under_another_name_names_it(tmp_path: Path):
    # ``models/util2.py`` keeps its own (unused) copy and hands the other one on as ``SA``.
    copy = COPY.replace("import torch\n", "import torch\n    from util import SetAbstraction as SA\n") + (
        "\n\n    BLOCKS = {'sa': SA}\n")
    model = MODEL.replace("import torch\n", "import torch\n    from models.util2 import BLOCKS\n").replace(
        "return x * 2", "return BLOCKS[self.kind]()(x)")
    found = _contexts(tmp_path, {"train.py": PROGRAM, "model.py": model, "util.py": COPY, "models/util2.py": copy})
    assert "nothing in the project names" not in found["util.py", 9][2]


def test_a_copy_a_third_file_imports_by_its_bare_name_is_named(tmp_path: Path):
    model = MODEL.replace("import torch\n", "import torch\n    from pkg.util import SetAbstraction\n").replace(
        "return x * 2", "return SetAbstraction()(x)")
    found = _contexts(tmp_path, {"train.py": PROGRAM, "model.py": model, "pkg/__init__.py": "", "pkg/util.py": COPY,
                                 "pkg/models/util2.py": COPY})
    assert found["util.py", 9][:2] == ("SL103", "hot")


#: A command-line tool whose functions each loop over a loader; nothing in the project
#: names ``evaluate`` but the way the tool dispatches (see the test below).
CLI = """
    import sys

    import fire
    import torch


    def train(model, loader):
        for x in loader:
            model(x.cuda(non_blocking=True)).sum().backward()


    def evaluate(model, loader):
        for x in loader:
            print(model(x.cuda(non_blocking=True)).sum().item())


    if __name__ == "__main__":
        {dispatch}
    """


@pytest.mark.parametrize(
    ("dispatch", "named"),
    [("fire.Fire()", True), ("fire.Fire(name='cli')", True), ("locals()[sys.argv[1]](None, [])", True),
     ("vars()[sys.argv[1]](None, [])", True), ("fire.Fire(train)", False), ("train(None, [])", False)],
)
def test_a_file_that_offers_its_namespace_to_a_command_line_names_its_functions(
        tmp_path: Path, dispatch: str, named: bool):
    found = _contexts(tmp_path, {"cli.py": CLI.format(dispatch=dispatch), "train.py": PROGRAM, "model.py": MODEL})
    assert ("nothing in the project names `evaluate`" not in found["cli.py", 14][2]) is named


class _CountedReads(str):
    """A source text that counts the characters read from it one at a time."""

    reads = 0

    def __getitem__(self, key):
        if isinstance(key, int):
            type(self).reads += 1
        return str.__getitem__(self, key)


def test_a_line_of_many_mentions_is_read_once(monkeypatch):
    # Counted, not timed: reading from the line's start for each of its 500 mentions reads
    # about 250 times the line (minutes at 20,000 mentions); once, about the line itself.
    line = "DATA = [" + ", ".join(["(Net, x.Net, 'a # b')"] * 500) + "]  # Net\n"
    source = _CountedReads(f"class Net:\n    pass\n\n\n{line}")
    monkeypatch.setattr(_CountedReads, "reads", 0)
    assert named_words(source, {"Net"}, {}, {"Net"}, set()) == (frozenset(), frozenset())
    assert 0 < _CountedReads.reads <= 2 * len(line)
    # A mention after a string with a ``#`` on the same line, and one in the comment after it.
    assert named_words("x = ('#', APLoss)  # Focal\n", {"APLoss", "Focal"}, {})[0] == {"APLoss"}


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ('report = f"""\n# Results: {evaluate(model, loader)}\n"""\n', True),
        ('HELP = """\nUsage: # evaluate\n"""\n', True),  # (a string names, wherever it stands)
        ('x = """a\n"b" # """ ; evaluate(model, loader)\n', True),
        ('x = 1\n# evaluate(model, loader)\n', False),
        ('x = """a\n"b" # """ ; evaluate(model, loader)\ny = (\n', False),  # (no tokens: the line is read)
    ],
    ids=["a markdown heading in an f-string", "a line of a docstring", "code after a string closed on the line",
         "a comment", "a file the tokenizer cannot read"],
)
def test_a_hash_inside_a_multi_line_string_starts_no_comment(source: str, named: bool):
    assert (named_words(source, {"evaluate"}, {})[0] == {"evaluate"}) is named
