"""``self.flag = flag`` in ``__init__``: the attribute holds what every construction of
the class passes (:mod:`synclint.project.constructor_arguments`), so ``if self.flag:``
never runs when every construction leaves the default (GRAN's ``has_graph_output``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

GNN = """
    import torch
    from torch import nn


    class GNN(nn.Module):
        def __init__(self, dim, has_graph_output=False, scale=1.0):
            super(GNN, self).__init__()
            self.dim = dim
            self.has_graph_output = has_graph_output
            self.scale = scale

        def forward(self, x):
            if self.has_graph_output:
                return x.sum().item()
            return x * self.scale
"""
SYNC_LINE = 14

TRAIN = """
    import torch
    from torch import nn
    from model import GNN


    class Net(nn.Module):
        def __init__(self, {init_params}):
            super().__init__()
            self.gnn = {construction}

        def forward(self, x):
            return self.gnn(x)


    def train(loader):
        net = Net({net_args})
        for x in loader:
            net(x.cuda()).sum().backward()
"""
NEVER = ("never runs: `self.has_graph_output` is only ever False (what every construction of its class passes to "
         "`__init__`; nothing sets it again)")


def _context(tmp_path: Path, construction: str = "GNN(4)", init_params: str = "dim=4", net_args: str = "",
             extra: dict[str, str] | None = None, model: str = GNN) -> tuple[str, str]:
    files = {"model.py": model, "train.py": TRAIN.format(construction=construction, init_params=init_params,
                                                       net_args=net_args), **(extra or {})}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    found = {(Path(f.path).name, f.line): (f.context, f.why) for f in findings if f.code == "SL201"}
    return found["model.py", SYNC_LINE]


@pytest.mark.parametrize(
    ("construction", "init_params", "net_args"),
    [
        ("GNN(4)", "dim=4", ""),  # the default, left in place (and ``super(GNN, self)`` builds nothing)
        ("GNN(dim, False)", "dim=4", ""),  # a constant by position
        ("GNN(dim, has_graph_output=False, scale=2.0)", "dim=4", ""),  # by keyword
        ("GNN(dim, has_graph_output=graph)", "dim=4, graph=False", ""),  # passed on: Net's default
        ("GNN(dim, has_graph_output=graph)", "dim=4, graph=True", "graph=False"),  # passed on: Net's construction
    ],
    ids=["default", "position", "keyword", "passed on, default", "passed on, constant"],
)
def test_every_construction_leaving_the_flag_off_closes_its_block(tmp_path: Path, construction: str, init_params: str,
                                                                  net_args: str):
    assert _context(tmp_path, construction, init_params, net_args) == ("cold", NEVER)


@pytest.mark.parametrize(
    ("construction", "init_params", "net_args", "extra"),
    [
        ("GNN(dim, has_graph_output=True)", "dim=4", "", None),
        ("GNN(dim, True)", "dim=4", "", None),
        ("GNN(dim, has_graph_output=graph)", "dim=4, graph=False", "graph=True", None),  # Net's construction turns it on
        ("GNN(dim, has_graph_output=graph)", "dim=4, graph=False", "", {"run.py": "from train import Net\nNet(graph=cfg.graph)\n"}),
        ("GNN(dim, has_graph_output=cfg.graph)", "dim=4, cfg=None", "", None),  # a value the index cannot tell
        ("GNN(dim, **options)", "dim=4, options=None", "", None),  # ``**kwargs`` may pass it
        # A configuration file may build it with any keys (Hydra's ``_target_: model.GNN``).
        ("GNN(4)", "dim=4", "", {"conf/model.yaml": "gnn:\n  _target_: model.GNN\n  has_graph_output: true\n"}),
        # A computed name may build it with any arguments.
        ("GNN(4)", "dim=4", "", {"build.py": "import model\ndef build(name, **kw):\n    return getattr(model, name)(**kw)\n"}),
        # A subclass's ``super().__init__(...)`` passes its own arguments.
        ("GNN(4)", "dim=4", "", {"sub.py": "from model import GNN\nclass Big(GNN):\n    def __init__(self):\n"
                                           "        super().__init__(8, True)\n"}),
        # Users of an installed package build its classes with any arguments.
        ("GNN(4)", "dim=4", "", {"pyproject.toml": "[project]\nname = 'gnn'\n"}),
        # Passed as a value: built where no call spells it.
        ("GNN(4)", "dim=4", "", {"registry.py": "from model import GNN\nMODELS = {'gnn': GNN}\n"}),
    ],
    ids=["keyword", "position", "passed on, turned on", "passed on, unknown", "unknown value", "kwargs",
         "config", "reflection", "subclass", "installable", "passed as a value"],
)
def test_a_construction_that_may_turn_the_flag_on_keeps_its_block(tmp_path: Path, construction: str, init_params: str,
                                                                   net_args: str, extra: dict[str, str] | None):
    assert _context(tmp_path, construction, init_params, net_args, extra)[0] == "hot"


def test_constructions_in_tests_do_not_count(tmp_path: Path):
    extra = {"tests/test_gnn.py": "from model import GNN\ndef test_graph_output():\n    GNN(4, has_graph_output=True)\n"}
    assert _context(tmp_path, extra=extra) == ("cold", NEVER)


@pytest.mark.parametrize(
    "method",
    [
        "@classmethod\ndef from_config(cls, cfg):\n    return cls(cfg.dim, has_graph_output=cfg.graph)",
        "def with_graph(self):\n    return type(self)(self.dim, True)",
        "def with_graph(self):\n    return self.__class__(self.dim, True)",
    ],
    ids=["cls", "type(self)", "self.__class__"],
)
def test_a_construction_by_the_class_itself_keeps_its_block(tmp_path: Path, method: str):
    # (``GNN.from_config(cfg)`` and ``gnn.with_graph()`` build it where no call spells its name.)
    model = GNN + textwrap.indent("\n" + method + "\n", " " * 8)
    run = "from model import GNN\ndef main(cfg, loader):\n    m = GNN.from_config(cfg) if cfg else GNN(4).with_graph()\n"
    assert _context(tmp_path, model=model, extra={"run.py": run})[0] == "hot"


@pytest.mark.parametrize(
    "run",
    [
        "import importlib\ndef main():\n    return importlib.import_module('model').GNN(4, True)\n",
        "import importlib\ndef main():\n    module = importlib.import_module('model')\n    return module.GNN(4, True)\n",
        "from model import GNN\nclass Holder:\n    gnn = GNN(4, True)\n",
        "from model import GNN\ndef main(gnn=GNN(4, True)):\n    return gnn\n",
        # A string naming it: a lookup by that name builds it with any arguments.
        "import model\ndef main():\n    return getattr(model, 'GNN')(4, True)\n",
        "from hydra.utils import instantiate\ndef main():\n"
        "    return instantiate({'_target_': 'model.GNN', 'dim': 4, 'has_graph_output': True})\n",
        "import pydoc\ndef main():\n    return pydoc.locate('model.GNN')(4, True)\n",
        # A subclass the index does not resolve (``from model import *``) passes its own arguments.
        "from model import *\nclass Big(GNN):\n    def __init__(self):\n        super().__init__(8, True)\n",
        # So does an explicit ``GNN.__init__(self, ...)``.
        "from model import GNN\nclass Mix:\n    def __init__(self):\n        GNN.__init__(self, 8, True)\n",
    ],
    ids=["import_module", "import_module, bound", "class body", "default", "getattr", "instantiate", "locate",
         "star-imported base", "explicit __init__"],
)
def test_a_construction_the_index_does_not_resolve_keeps_its_block(tmp_path: Path, run: str):
    assert _context(tmp_path, extra={"run.py": run})[0] == "hot"


def test_a_name_only_in_all_does_not_count(tmp_path: Path):
    # ``__all__ = ["GNN"]`` passes the name on: nothing is built by it.
    assert _context(tmp_path, extra={"api/__init__.py": "from model import GNN\n__all__ = ['GNN']\n"}) == ("cold", NEVER)


@pytest.mark.parametrize(
    "rebinding",
    [
        "match dim:\n    case {'graph': has_graph_output}:\n        pass",
        "try:\n    dim = int(dim)\nexcept ValueError as has_graph_output:\n    pass",
        "import os as has_graph_output",
        "def has_graph_output():\n    return True",
    ],
    ids=["match capture", "except as", "import as", "def"],
)
def test_a_parameter_rebound_before_the_store_keeps_its_block(tmp_path: Path, rebinding: str):
    # ``self.has_graph_output = has_graph_output`` no longer stores what the construction passed.
    model = GNN.replace("            self.has_graph_output = has_graph_output\n",
                        textwrap.indent(rebinding + "\nself.has_graph_output = has_graph_output\n", " " * 12))
    files = {"model.py": model, "train.py": TRAIN.format(construction="GNN(4)", init_params="dim=4", net_args="")}
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    line = next(number for number, text in enumerate((tmp_path / "model.py").read_text().splitlines(), 1)
                if "x.sum().item()" in text)
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    found = {(Path(f.path).name, f.line): f.why for f in findings if f.code == "SL201"}
    assert found[("model.py", line)] != NEVER


def test_a_script_named_like_a_test_that_holds_no_test_counts(tmp_path: Path):
    # ``test_net.py``: research code's evaluation entry point, not a test module.
    extra = {"test_net.py": "from model import GNN\ndef main(loader):\n    gnn = GNN(4, has_graph_output=True)\n"
                            "    for x in loader:\n        gnn(x.cuda())\n\nif __name__ == '__main__':\n    main([])\n"}
    assert _context(tmp_path, extra=extra)[0] == "hot"


def test_an_evaluation_script_with_a_test_function_counts(tmp_path: Path):
    # ``def test(model, loader)`` run from a ``__main__`` block: an evaluation, not a pytest test.
    extra = {"test_net.py": "from model import GNN\ndef test(gnn, loader):\n    for x in loader:\n        gnn(x.cuda())\n\n"
                            "if __name__ == '__main__':\n    test(GNN(4, has_graph_output=True), [])\n"}
    assert _context(tmp_path, extra=extra)[0] == "hot"
