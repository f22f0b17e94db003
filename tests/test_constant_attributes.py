"""A flag attribute only ever set to one constant closes the blocks its tests guard
(synclint.project.constant_attributes)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from synclint.config import Settings
from synclint.project.facts import facts_for_project
from synclint.project.index import ProjectIndex
from synclint.project.summary import summarize
from synclint.runner import RunOptions, lint_paths

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


def test_a_store_anywhere_else_opens_the_block(tmp_path: Path):
    script = "from rf import RF\nmodel = RF(None)\nmodel.stratified = True\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot"


def test_a_second_constant_stored_by_another_init_opens_it(tmp_path: Path):
    sub = "from rf import RF\nclass Strat(RF):\n    def __init__(self, model):\n        super().__init__(model)\n        self.stratified = True\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "strat.py": sub}) == "hot"


def test_a_class_attribute_of_the_name_opens_it(tmp_path: Path):
    sub = "from rf import RF\nclass Strat(RF):\n    stratified = True\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "strat.py": sub}) == "hot"


def test_a_store_by_a_computed_name_in_program_code_opens_every_block(tmp_path: Path):
    loader = "def configure(model, options):\n    for key, value in options.items():\n        setattr(model, key, value)\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "config.py": loader}) == "hot"
    dict_update = "def configure(model, options):\n    model.__dict__.update(options)\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "config.py": dict_update}) == "hot"


def test_a_test_s_setattr_by_a_computed_name_does_not(tmp_path: Path):
    test = "def test_flags(model, options):\n    for key, value in options.items():\n        setattr(model, key, value)\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "tests/test_rf.py": test}) == "cold"


def test_setattr_or_a_register_call_of_the_name_opens_it(tmp_path: Path):
    for call in ("setattr(model, 'stratified', True)", "model.register_buffer('stratified', None)"):
        script = f"from rf import RF\nmodel = RF(None)\n{call}\n"
        assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot", call


def test_a_property_of_the_name_may_hold_anything(tmp_path: Path):
    sub = "from rf import RF\nclass Strat(RF):\n    @property\n    def stratified(self):\n        return self.ln\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "strat.py": sub}) == "hot"


def test_a_store_of_a_parameter_or_in_another_method_is_not_constant(tmp_path: Path):
    from_parameter = MODEL.replace("self.stratified = False", "self.stratified = ln is False")
    assert _stratified_line_context(tmp_path, {"rf.py": from_parameter}) == "hot"
    toggled = MODEL.replace("    def forward(self, x):", "    def enable(self):\n        self.stratified = True\n\n    def forward(self, x):")
    rows = _rows(tmp_path, {"rf.py": toggled})
    assert next(row[3] for row in rows if row[0] == "SL403") == "hot"


def test_a_setattr_in_a_lambda_opens_it(tmp_path: Path):
    for script in ("from rf import RF\nmodel = RF(None)\nmodel.apply(lambda m: setattr(m, 'stratified', True))\n",
                   "def enable(model):\n    model.apply(lambda m: setattr(m, 'stratified', True))\n"):
        assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot", script


def test_stores_through_setattr_methods_and_the_instance_dict_open_it(tmp_path: Path):
    for store in ("object.__setattr__(model, 'stratified', True)",
                  "torch.nn.Module.__setattr__(model, 'stratified', True)",
                  "model.__setattr__('stratified', True)",
                  "model.__dict__['stratified'] = True",
                  "vars(model)['stratified'] = True",
                  "model.__dict__.setdefault('stratified', True)"):
        script = f"import torch\nfrom rf import RF\nmodel = RF(None)\n{store}\n"
        assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot", store


def test_setattr_handed_on_as_a_value_may_store_any_name(tmp_path: Path):
    for script in ("import functools\nfrom rf import RF\nenable = functools.partial(setattr, RF(None), 'stratified')\n",
                   "store = setattr\ndef configure(model, key, value):\n    store(model, key, value)\n"):
        assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot", script


def test_an_instance_dict_store_by_a_computed_name_opens_every_block(tmp_path: Path):
    script = "def configure(model, options):\n    for key, value in options.items():\n        model.__dict__[key] = value\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "config.py": script}) == "hot"


def test_a_program_file_that_does_not_parse_may_store_anything(tmp_path: Path):
    script = "from rf import RF\nmodel = RF(None)\nmodel.stratified = True\nprint 'training'\n"
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "train.py": script}) == "hot"


def test_a_flag_that_frameworks_set_on_every_module_that_has_it_is_not_constant(tmp_path: Path):
    # transformers' ``model.gradient_checkpointing_enable()`` sets ``module.gradient_checkpointing
    # = True`` on each submodule that has the attribute: no store in the project shows it.
    model = MODEL.replace("stratified", "gradient_checkpointing")
    rows = _rows(tmp_path, {"rf.py": model})
    assert next(row[3] for row in rows if row[0] == "SL403") == "hot"


def test_a_piece_of_a_split_project_knows_no_constant_attribute():
    """A huge tree is indexed piece by piece: ``model.stratified = True`` may be in another piece."""
    key = "/project/piece/rf.py"
    for split, hot in ((False, False), (True, True)):
        index = ProjectIndex({key: summarize(MODEL)}, Path("/project/piece"))
        assert facts_for_project(index, split=split)[key].context_at(19).is_hot is hot, split


def test_a_class_attribute_bound_in_a_branch_or_by_unpacking_opens_it(tmp_path: Path):
    for body in ("    if hasattr(torch, 'compile'):\n        stratified = True\n",
                 "    stratified, ln = True, False\n",
                 "    for stratified in (True,):\n        pass\n"):
        sub = f"import torch\nfrom rf import RF\nclass Strat(RF):\n{body}"
        assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "strat.py": sub}) == "hot", body


def test_a_class_deriving_from_a_library_class_may_have_the_flag_stored_by_its_methods(tmp_path: Path):
    # ``model.set_grad_checkpointing(True)``, ``trainer.fit(model)``: a library base's methods,
    # which the index never reads, may store any attribute of the instance.
    for base, imports in (("VisionTransformer", "from timm.models import VisionTransformer"),
                          ("pl.LightningModule", "import lightning.pytorch as pl")):
        model = MODEL.replace("class RF(torch.nn.Module):", f"{imports}\n\n\nclass RF({base}):")
        assert next(row[3] for row in _rows(tmp_path, {"rf.py": model}) if row[0] == "SL403") == "hot", base
    # torch's own classes set no flag but ``training``; nor do the standard library's
    for base, imports in (("nn.Module", "from torch import nn"), ("Module, ABC", "from torch.nn import Module\nfrom abc import ABC")):
        model = MODEL.replace("class RF(torch.nn.Module):", f"{imports}\n\n\nclass RF({base}):")
        assert next(row[3] for row in _rows(tmp_path, {"rf.py": model}) if row[0] == "SL403") == "cold", base


def test_a_notebook_of_the_project_may_store_the_flag(tmp_path: Path):
    def notebook(*cells: str) -> str:
        return json.dumps({"cells": [{"cell_type": "code", "source": [cell]} for cell in cells], "nbformat": 4})

    stores = notebook("from rf import RF\nmodel = RF(None)\n", "model.stratified = True\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": stores}) == "hot"
    by_name = notebook("from rf import RF\nmodel = RF(None)\nfor k, v in flags.items():\n    setattr(model, k, v)\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": by_name}) == "hot"
    unrelated = notebook("from rf import RF\nmodel = RF(None)\nmodel.mode = 'slow'\n")
    assert _stratified_line_context(tmp_path, {"rf.py": MODEL, "demo.ipynb": unrelated}) == "cold"
