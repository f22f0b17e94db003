"""A flag attribute only ever set to one constant closes the blocks its tests guard
(synclint.project.constant_attributes)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.facts import facts_for_project
from synclint.project.index import ProjectIndex
from synclint.project.summary import summarize
from synclint.runner import RunOptions, lint_paths
from tests.notebook_helpers import notebook_of

MODEL = textwrap.dedent("""\
    import torch


    def stratify(x):
        return x.sum().item()


    class RF(torch.nn.Module):
        def __init__(self, model, ln=True):
            super().__init__()
            self.model = model
            self.ln = ln
            self.stratified = False
            self.mode = "fast"

        def forward(self, x):
            b = x.size(0)
            if self.stratified:
                t = torch.linspace(0, 1, b).to(x.device)
                stratify(x)
            else:
                t = torch.rand((b,), device=x.device)
            if self.mode == "slow":
                print(x.sum().item())
            if not self.stratified:
                print(x.mean().item())
            if self.ln:
                print(x.max().item())
            return self.model(x, t)
    """)

STRATIFIED = "never runs: `self.stratified` is only ever False (what `__init__` stores; nothing sets it again)"


def _rows(tmp_path: Path, files: dict[str, str]) -> list[tuple]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = lint_paths([tmp_path / "rf.py"], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return [(f.code, f.line, f.column, f.context, f.why) for f in found]


def test_blocks_a_constant_flag_closes_are_cold_and_so_is_what_only_they_call(tmp_path: Path):
    assert _rows(tmp_path, {"rf.py": MODEL}) == [
        ("SL201", 5, 12, "cold", f"called only where it runs rarely: {STRATIFIED}"),
        ("SL403", 19, 17, "cold", STRATIFIED),
        ("SL201", 24, 19, "cold",
         "never runs: `self.mode` is only ever 'fast' (what `__init__` stores; nothing sets it again)"),
        ("SL201", 26, 19, "hot", "`RF.forward`"),  # `not self.stratified`: always taken
        ("SL201", 28, 19, "hot", "`RF.forward`"),  # a parameter's value: any
    ]


def _stratified_line_context(tmp_path: Path, files: dict[str, str]) -> str:
    return next(row[3] for row in _rows(tmp_path, files) if row[0] == "SL403")


#: Another file of the project, and how it may store ``stratified``: each keeps the block open.
_OTHER_STORES = {
    # a script or another class stores the name
    "script": ("train.py", "from rf import RF\nmodel = RF(None)\nmodel.stratified = True\n"),
    "another __init__'s constant": ("strat.py", "from rf import RF\nclass Strat(RF):\n    def __init__(self, model):\n"
                                                "        super().__init__(model)\n        self.stratified = True\n"),
    "class attribute": ("strat.py", "from rf import RF\nclass Strat(RF):\n    stratified = True\n"),
    "class attribute in a branch": ("strat.py", "import torch\nfrom rf import RF\nclass Strat(RF):\n"
                                                "    if hasattr(torch, 'compile'):\n        stratified = True\n"),
    "class attribute by unpacking": ("strat.py", "import torch\nfrom rf import RF\nclass Strat(RF):\n"
                                                 "    stratified, ln = True, False\n"),
    "class attribute as a loop target": ("strat.py", "import torch\nfrom rf import RF\nclass Strat(RF):\n"
                                                     "    for stratified in (True,):\n        pass\n"),
    "property": ("strat.py", "from rf import RF\nclass Strat(RF):\n    @property\n    def stratified(self):\n"
                             "        return self.ln\n"),
    # stores that spell the name otherwise
    "setattr": ("train.py", "from rf import RF\nmodel = RF(None)\nsetattr(model, 'stratified', True)\n"),
    "register_buffer": ("train.py", "from rf import RF\nmodel = RF(None)\nmodel.register_buffer('stratified', None)\n"),
    "setattr in a lambda": ("train.py", "from rf import RF\nmodel = RF(None)\n"
                                        "model.apply(lambda m: setattr(m, 'stratified', True))\n"),
    "setattr in a lambda in a function": ("train.py", "def enable(model):\n"
                                                      "    model.apply(lambda m: setattr(m, 'stratified', True))\n"),
    **{store: ("train.py", f"import torch\nfrom rf import RF\nmodel = RF(None)\n{store}\n") for store in (
        "object.__setattr__(model, 'stratified', True)",
        "torch.nn.Module.__setattr__(model, 'stratified', True)",
        "model.__setattr__('stratified', True)",
        "model.__dict__['stratified'] = True",
        "vars(model)['stratified'] = True",
        "model.__dict__.setdefault('stratified', True)",
    )},
    # program code that may store any name
    "setattr by a computed name": ("config.py", "def configure(model, options):\n    for key, value in options.items():\n"
                                                "        setattr(model, key, value)\n"),
    "__dict__.update": ("config.py", "def configure(model, options):\n    model.__dict__.update(options)\n"),
    "__dict__ by a computed key": ("config.py", "def configure(model, options):\n    for key, value in options.items():\n"
                                                "        model.__dict__[key] = value\n"),
    "setattr in a partial": ("train.py", "import functools\nfrom rf import RF\n"
                                         "enable = functools.partial(setattr, RF(None), 'stratified')\n"),
    "setattr as a value": ("train.py", "store = setattr\ndef configure(model, key, value):\n    store(model, key, value)\n"),
    "a file that does not parse": ("train.py", "from rf import RF\nmodel = RF(None)\nmodel.stratified = True\n"
                                               "print 'training'\n"),
}


@pytest.mark.parametrize("store", list(_OTHER_STORES), ids=list(_OTHER_STORES))
def test_any_other_store_of_the_name_keeps_the_block_open(tmp_path: Path, store: str):
    name, text = _OTHER_STORES[store]
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, name: text}) == "hot"


def test_a_test_s_setattr_by_a_computed_name_does_not(tmp_path: Path):
    test = "def test_flags(model, options):\n    for key, value in options.items():\n        setattr(model, key, value)\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "tests/test_rf.py": test}) == "cold"


def test_a_store_of_a_parameter_or_in_another_method_is_not_constant(tmp_path: Path):
    from_parameter = MODEL.replace("self.stratified = False", "self.stratified = ln is False")
    assert _stratified_line_context(tmp_path, {"rf.py": from_parameter}) == "hot"
    toggled = MODEL.replace("    def forward(self, x):", "    def enable(self):\n        self.stratified = True\n\n    def forward(self, x):")
    assert _stratified_line_context(tmp_path, {"rf.py": toggled}) == "hot"


def test_a_flag_that_frameworks_set_on_every_module_that_has_it_is_not_constant(tmp_path: Path):
    # transformers' ``model.gradient_checkpointing_enable()`` sets ``module.gradient_checkpointing
    # = True`` on each submodule that has the attribute: no store in the project shows it.
    model = MODEL.replace("stratified", "gradient_checkpointing")
    assert _stratified_line_context(tmp_path, {"rf.py": model}) == "hot"


def test_a_piece_of_a_split_project_knows_no_constant_attribute():
    """A huge tree is indexed piece by piece: ``model.stratified = True`` may be in another piece."""
    key = "/project/piece/rf.py"
    for split, hot in ((False, False), (True, True)):
        index = ProjectIndex({key: summarize(MODEL)}, Path("/project/piece"))
        assert facts_for_project(index, split=split)[key].context_at(19).is_hot is hot, split


def test_a_class_deriving_from_a_library_class_may_have_the_flag_stored_by_its_methods(tmp_path: Path):
    # ``model.set_grad_checkpointing(True)``, ``trainer.fit(model)``: a library base's methods,
    # which the index never reads, may store any attribute of the instance.
    for base, imports in (("VisionTransformer", "from timm.models import VisionTransformer"),
                          ("pl.LightningModule", "import lightning.pytorch as pl")):
        model = MODEL.replace("class RF(torch.nn.Module):", f"{imports}\n\n\nclass RF({base}):")
        assert _stratified_line_context(tmp_path, {"rf.py": model}) == "hot", base
    # torch's own classes set no flag but ``training``; nor do the standard library's
    for base, imports in (("nn.Module", "from torch import nn"), ("Module, ABC", "from torch.nn import Module\nfrom abc import ABC")):
        model = MODEL.replace("class RF(torch.nn.Module):", f"{imports}\n\n\nclass RF({base}):")
        assert _stratified_line_context(tmp_path, {"rf.py": model}) == "cold", base


def test_a_notebook_of_the_project_may_store_the_flag(tmp_path: Path):
    stores = notebook_of("from rf import RF\nmodel = RF(None)\n", "model.stratified = True\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": stores}) == "hot"
    by_name = notebook_of("from rf import RF\nmodel = RF(None)\nfor k, v in flags.items():\n    setattr(model, k, v)\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": by_name}) == "hot"
    unrelated = notebook_of("from rf import RF\nmodel = RF(None)\nmodel.mode = 'slow'\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": unrelated}) == "cold"
