"""A class nothing in the project names cannot run: its methods are no roots
(:mod:`synclint.project.unnamed_classes`), and its findings are unreached."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.mentions import spelled_names
from synclint.project.reflection import builds_its_own_classes, find_reflection
from synclint.runner import RunOptions, lint_paths

#: The program: a loop over batches that runs ``Net``; it imports ``losses`` (a module no
#: file imports never runs: :mod:`synclint.project.unimported_modules`), naming no class of it.
_TRAIN = """\
import losses
from model import Net


def train(loader):
    net = Net()
    for batch in loader:
        net(batch)
{extra}"""
_MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x
"""
#: A loss class (a root by its name) that syncs in ``forward``.
_LOSSES = """\
import torch


{decorator}class RankLoss(torch.nn.Module):
    def forward(self, logits):
        return logits.nonzero()
"""
UNNAMED = "not reached from any step of the project: nothing in the project names `RankLoss`"
HOT = "`RankLoss.forward`"


def _findings(root: Path, files: dict[str, str], include_cold: bool = True, cache: Path | None = None,
              installable: bool = True) -> list:
    """(file, line, column, code, context, why) of a project of ``files`` under ``root``
    (one users may install: a ``[project]`` table; else a ``pyproject.toml`` of tools only)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n" if installable else "[tool.synclint]\n")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    options = RunOptions(jobs=1, use_cache=cache is not None, cache_dir=cache, include_cold=include_cold)
    found = lint_paths([root], Settings(root=root), options)
    return sorted((Path(f.path).name, f.line, f.column, f.code, f.context, f.why) for f in found)


def _loss_row(why: str) -> tuple:
    """The loss class's finding, hot (``why`` is :data:`HOT`) or unreached with ``why``."""
    return ("losses.py", 6, 16, "SL101", "hot" if why == HOT else "unknown", why)


def _program(extra: str = "", losses: str = _LOSSES.format(decorator=""), **more: str) -> dict[str, str]:
    return {"train.py": _TRAIN.format(extra=extra), "model.py": _MODEL, "losses.py": losses, **more}


def test_an_unnamed_loss_class_is_unreached_and_hidden_by_default(tmp_path: Path):
    # yolov7's utils/loss.py: `APLoss`, `aLRPLoss`, `RankSort`, named nowhere else.
    assert _findings(tmp_path, _program()) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]
    assert _findings(tmp_path, _program(), include_cold=False) == []


@pytest.mark.parametrize(("installable", "where", "expected"), [
    (False, "tests/test_losses.py", ("cold", "test code only: only the project's tests name `RankLoss`")),
    (False, "train_tools.py", ("hot", HOT)),
    (True, "tests/test_losses.py", ("hot", HOT)),
])
def test_a_class_only_the_tests_name_runs_only_in_them(tmp_path: Path, installable: bool, where: str, expected):
    # TraDeS vendors nuscenes-devkit, whose `MTPLoss` only the devkit's tests build: in a
    # program nobody installs, the program never runs it. Named by the program too, it is a
    # root as before; in a package users install, they may build it as the tests do.
    test = "from losses import RankLoss\n\n\ndef test_rank():\n    RankLoss()(None)\n"
    files = _program(**{where: test})
    found = [row for row in _findings(tmp_path, files, installable=installable) if row[0] == "losses.py"]
    assert found == [("losses.py", 6, 16, "SL101", *expected)]


@pytest.mark.parametrize(("where", "text", "extra"), [
    ("test_online.py", "from losses import RankLoss\n\n\ndef main():\n    RankLoss()(None)\n", ""),
    ("test_asr.py", "from losses import RankLoss\n\n\ndef test_rank():\n    RankLoss()(None)\n",
     "\n\ndef solve():\n    from test_asr import test_rank\n"),
])
def test_a_file_named_like_a_test_that_the_program_runs_names_its_classes(tmp_path: Path, where, text, extra):
    # Trajectron++'s `test_online.py` is the online inference script its README runs (no
    # test in it); End-to-end-ASR's `bin/test_asr.py` is the solver `main.py --test` imports.
    found = [row for row in _findings(tmp_path, _program(extra, **{where: text}), installable=False)
             if row[0] == "losses.py"]
    assert found == [("losses.py", 6, 16, "SL101", "hot", HOT)]

def test_a_class_named_in_another_python_file_stays_a_root(tmp_path: Path):
    extra = "\n\ndef criterion():\n    from losses import RankLoss\n    return RankLoss()\n"
    assert _findings(tmp_path, _program(extra)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_a_class_named_only_in_a_string_stays_a_root_but_a_comment_builds_nothing(tmp_path: Path):
    # A registry of names, `__all__`, a lookup by a string the config spells.
    assert _findings(tmp_path, _program('\nLOSSES = ["RankLoss"]\n')) == [("losses.py", 6, 16, "SL101", "hot", HOT)]
    # A call commented out, a note: neither runs.
    assert _findings(tmp_path, _program("\n# loss = RankLoss()\n")) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]


def test_an_error_message_names_nothing(tmp_path: Path):
    # s4's `JITLamb` raises `RuntimeError('Lamb does not support sparse gradients.')`: the
    # message builds no `Lamb`. A string elsewhere still may (a registry key).
    message = '\n\ndef check(x):\n    if x:\n        raise ValueError(\n            "RankLoss needs targets"\n        )\n'
    assert _findings(tmp_path / "raise", _program(message)) == [_loss_row(UNNAMED)]
    inline = '\n\ndef check(x):\n    if x: raise ValueError("RankLoss needs targets")\n'
    assert _findings(tmp_path / "inline", _program(inline)) == [_loss_row(HOT)]
    returned = '\n\ndef check(x):\n    if x:\n        return ValueError("RankLoss")\n'
    assert _findings(tmp_path / "return", _program(returned)) == [_loss_row(HOT)]


#: A dataset base whose subclasses register themselves by name (s4's ``SequenceDataset``).
_REGISTRY = """\
class Registered{header}:
    registry = {{}}
{body}

class Speech(Registered):
    pass
"""


@pytest.mark.parametrize(
    ("header", "body", "why"),
    [
        ("", "\n    def __init_subclass__(cls, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
             "        cls.registry[cls.__name__] = cls\n", UNNAMED),
        ("(metaclass=RegistryMeta)", "", UNNAMED),
        ("(metaclass=abc.ABCMeta)", "", UNNAMED),
        # The marker outside a class that holds it: it may reach any class.
        ("", "\n\n# classes register in __init_subclass__\n", HOT),
        ("", "\n\ndef make():\n    class Local:\n        def __init_subclass__(cls):\n            pass\n", HOT),
    ],
    ids=["__init_subclass__", "a metaclass", "ABCMeta", "in a comment", "in a nested class"],
)
def test_a_registry_by_subclassing_builds_only_its_subclasses(tmp_path: Path, header, body, why):
    # A registry filled by `__init_subclass__` or a metaclass may build the subclasses of
    # the class that holds it by a computed name, and nothing else: an unrelated loss class
    # that no text names stays unnamed.
    more = {"datasets.py": _REGISTRY.format(header=header, body=body)}
    assert _findings(tmp_path, _program(**more)) == [_loss_row(why)]


@pytest.mark.parametrize("base", ["Registered", "datasets.Registered", "Speech", "Base", "Registered[int]"])
def test_a_subclass_of_a_registry_stays_a_root(tmp_path: Path, base):
    # The loss derives from the registering class (directly, by a module's attribute,
    # through another subclass, under the name an import gives it, or by a base that is no
    # dotted name): the registry may build it by name.
    body = "\n    def __init_subclass__(cls, **kwargs):\n        cls.registry[cls.__name__] = cls\n"
    losses = _LOSSES.format(decorator="").replace(
        "import torch\n",
        "import torch\nimport datasets\nfrom datasets import Registered, Speech\nfrom datasets import Registered as Base\n",
    ).replace("(torch.nn.Module)", f"({base}, torch.nn.Module)")
    more = {"datasets.py": _REGISTRY.format(header="", body=body)}
    assert _findings(tmp_path, _program(losses=losses, **more)) == [("losses.py", 9, 16, "SL101", "hot", HOT)]


def test_a_subclass_of_a_nested_registry_stays_a_root(tmp_path: Path):
    # A class nested in a registering class declares a metaclass of its own: its
    # subclasses (`Registered.Options`) may be built by name too.
    datasets = "class Registered(metaclass=RegistryMeta):\n    class Options(metaclass=OptionsMeta):\n        pass\n"
    losses = _LOSSES.format(decorator="").replace(
        "import torch\n", "import torch\nfrom datasets import Registered\n"
    ).replace("(torch.nn.Module)", "(Registered.Options, torch.nn.Module)")
    assert _findings(tmp_path, _program(losses=losses, **{"datasets.py": datasets})) == [
        ("losses.py", 7, 16, "SL101", "hot", HOT)
    ]


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ("\n\ndef criterion():\n    from detectron2.losses import RankLoss\n    return RankLoss()\n", UNNAMED),
        ("\n\ndef criterion():\n    from losses import RankLoss\n    return RankLoss()\n", HOT),
        ("\n\ndef criterion():\n    from model import RankLoss\n    return RankLoss()\n", HOT),
        ("\n\ndef criterion():\n    import detectron2.losses\n    return detectron2.losses.RankLoss()\n", HOT),
    ],
    ids=["a package outside the project", "the class's module", "another project module", "a module's attribute"],
)
def test_a_name_imported_from_outside_the_project_is_not_the_project_s_class(tmp_path: Path, extra, why):
    # OneFormer's `train_net.py` runs detectron2's `inference_on_dataset`, not the copy in
    # `oneformer/evaluation/evaluator.py`. (An attribute of an imported module may be anything.)
    assert _findings(tmp_path, _program(extra)) == [_loss_row(why)]


_LIVE_LOSS = "import torch\n\n\nclass RankLoss(torch.nn.Module):\n    def forward(self, logits):\n        return logits.sum()\n"


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ("\n\ndef criterion():\n    from live import RankLoss\n    return RankLoss()\n", UNNAMED),
        ("\n\ndef criterion():\n    from live import RankLoss\n    return [RankLoss(), 'RankLoss']\n", HOT),
        ("\n\ndef criterion():\n    from live import RankLoss\n    return RankLoss(), losses.RankLoss()\n", HOT),
        ("\n\ndef criterion():\n    from live import RankLoss as Live\n    return Live(), RankLoss()\n", HOT),
    ],
    ids=["imported from the other copy", "also in a string", "also as a module's attribute", "imported under another name"],
)
def test_a_name_imported_from_another_copy_names_that_copy_only(tmp_path: Path, extra, why):
    # so-vits-svc's train.py imports `discriminator_loss` from `modules.losses`; the copy in
    # `vdecoder/nsf_hifigan/models.py` is named by nothing. A string or a module's attribute
    # may be either copy; a bare name not bound by the import is not the import's.
    found = _findings(tmp_path, {**_program(extra), "live.py": _LIVE_LOSS})
    assert [row for row in found if row[0] == "losses.py"] == [_loss_row(why)]



@pytest.mark.parametrize(
    "extra",
    [
        "\ntry:\n    from losses import RankLoss\nexcept ImportError:\n    from apex.losses import RankLoss\n"
        "\n\ndef criterion():\n    return RankLoss()\n",
        "\ntry:\n    from live import RankLoss\nexcept ImportError:\n    from losses import RankLoss\n"
        "\n\ndef criterion():\n    return RankLoss()\n",
        "\nfrom losses import RankLoss\n\n\ndef criterion():\n    return RankLoss()\n"
        "\n\ndef finetune():\n    from live import RankLoss\n    return RankLoss()\n",
        "\nfrom losses import *\n\n\ndef criterion():\n    return RankLoss()\n"
        "\n\ndef finetune():\n    from apex.losses import RankLoss\n    return RankLoss()\n",
    ],
    ids=["an import from outside as the fallback", "another copy tried first", "another copy in a function",
         "a star import beside an import from outside"],
)
def test_a_name_imported_from_two_places_names_both(tmp_path: Path, extra):
    # `try: from apex.normalization import FusedLayerNorm as LayerNorm` / `except ImportError:
    # from .layers import LayerNorm`: the bare name is whichever import ran, so it names
    # the project's definition as well as the other.
    found = _findings(tmp_path, {**_program(extra), "live.py": _LIVE_LOSS})
    assert [row for row in found if row[0] == "losses.py"] == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_a_star_import_of_a_module_without_the_name_leaves_the_import_from_outside(tmp_path: Path):
    # OneFormer's train_net.py star-imports `oneformer.data.build` (no `inference_on_dataset`
    # there) beside `from detectron2.evaluation import inference_on_dataset`.
    extra = "\nfrom model import *\nfrom detectron2.losses import RankLoss\n\n\ndef criterion():\n    return RankLoss()\n"
    assert _findings(tmp_path, _program(extra)) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]


@pytest.mark.parametrize(
    "live",
    [
        "import torch\n\ntry:\n    from losses import RankLoss\nexcept ImportError:\n"
        "    class RankLoss(torch.nn.Module):\n        def forward(self, logits):\n            return logits.sum()\n",
        _LIVE_LOSS + "\n\ntry:\n    from losses import RankLoss\nexcept ImportError:\n    pass\n",
    ],
    ids=["a fallback definition", "an override after the definition"],
)
def test_a_name_its_module_both_defines_and_imports_may_be_either(tmp_path: Path, live):
    # `try: from ._ext import DeformConv` / `except ImportError: class DeformConv(...)`:
    # importing the name from that module may give the compiled one as well as its own.
    extra = "\n\ndef criterion():\n    from live import RankLoss\n    return RankLoss()\n"
    found = _findings(tmp_path, {**_program(extra), "live.py": live})
    assert [row for row in found if row[0] == "losses.py"] == [("losses.py", 6, 16, "SL101", "hot", HOT)]

def test_a_class_named_only_in_a_yaml_config_stays_a_root(tmp_path: Path):
    # Hydra's `_target_` builds a class by its path, with no decorator and no import.
    config = {"conf/loss.yaml": "loss:\n  _target_: losses.RankLoss\n  margin: 0.5\n"}
    assert _findings(tmp_path, _program(**config)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_a_config_that_comes_to_name_the_class_is_read_on_a_cached_run(tmp_path: Path):
    cache = tmp_path / "cache"
    root = tmp_path / "project"
    root.mkdir()
    assert _findings(root, _program(), cache=cache) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]
    (root / "loss.json").write_text('{"loss": "RankLoss"}\n')
    assert _findings(root, _program(), cache=cache) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_a_decorated_class_stays_a_root(tmp_path: Path):
    # `@LOSSES.register_module()` files the class under a name no one spells.
    losses = "REGISTRY = {}\n\n\ndef register(cls):\n    REGISTRY[cls.__name__.lower()] = cls\n    return cls\n\n\n"
    losses += _LOSSES.format(decorator="@register\n")
    assert _findings(tmp_path, _program(losses=losses)) == [("losses.py", 15, 16, "SL101", "hot", HOT)]


def test_a_library_with_no_steps_but_the_unnamed_class_s_keeps_it_a_root(tmp_path: Path):
    # Users outside the project build the classes of a library.
    assert _findings(tmp_path, {"losses.py": _LOSSES.format(decorator="")}) == [
        ("losses.py", 6, 16, "SL101", "hot", HOT),
    ]


def test_an_unnamed_base_whose_named_subclass_runs_its_forward_stays_a_root(tmp_path: Path):
    losses = _LOSSES.format(decorator="").replace("RankLoss", "RankLossBase")
    losses += "\n\nclass RankLoss(RankLossBase):\n    pass\n"
    extra = "\n\ndef criterion():\n    from losses import RankLoss\n    return RankLoss()\n"
    assert _findings(tmp_path, _program(extra, losses)) == [
        ("losses.py", 6, 16, "SL101", "hot", "`RankLossBase.forward`"),
    ]


def test_a_class_named_only_inside_itself_is_unnamed(tmp_path: Path):
    # Its own code runs only once it does: `super(RankLoss, self)` names it for no one else.
    losses = _LOSSES.format(decorator="") + "\n    def __init__(self):\n        super(RankLoss, self).__init__()\n"
    assert _findings(tmp_path, _program(losses=losses)) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]


def test_a_class_its_own_module_builds_stays_a_root(tmp_path: Path):
    losses = _LOSSES.format(decorator="") + "\n\ncriterion = RankLoss()\n"
    assert _findings(tmp_path, _program(losses=losses)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_reflection_over_classes_keeps_every_class_a_root(tmp_path: Path):
    # A factory that finds the loss among a base's subclasses by a name the command line gives.
    extra = "\n\ndef losses_by_name(base):\n    return {cls.__name__: cls for cls in base.__subclasses__()}\n"
    assert _findings(tmp_path, _program(extra)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]
    extra = "\nimport losses\n\n\ndef loss_named(name):\n    return getattr(losses, name)()\n"
    assert _findings(tmp_path, _program(extra)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


@pytest.mark.parametrize(
    ("backbones", "why"),
    [
        ("import torch\n\n\nclass ResNet(torch.nn.Module):\n    pass\n", UNNAMED),
        ("import torch\nfrom losses import RankLoss\n", HOT),
        ("import torch\nfrom losses import *\n", HOT),
    ],
    ids=["holds other classes", "imports the loss", "star-imports"],
)
def test_a_lookup_in_one_module_builds_only_what_that_module_holds(tmp_path: Path, backbones, why):
    # XMem's `s2m_resnet.__dict__[backbone_name]` (and `models.__dict__[args.arch]` in
    # ImageNet scripts) builds a class of that module, or one it imports; a loss class of
    # another module stays unnamed.
    extra = "\nimport backbones\n\n\ndef backbone(name):\n    return backbones.__dict__[name]()\n"
    found = _findings(tmp_path, _program(extra, **{"backbones.py": backbones}))
    assert found == [_loss_row(why)]


@pytest.mark.parametrize(
    ("extra", "more"),
    [
        # `from . import resnet` in the package: a lookup in the submodule builds what it imports.
        ("\nimport models\n\n\ndef backbone(family, name):\n    return getattr(getattr(models, family), name)()\n",
         {"models/__init__.py": "from . import resnet\n", "models/resnet.py": "import torch\nfrom losses import RankLoss\n"}),
        # The module imports the loss's module under another name.
        ("\nimport backbones\n\n\ndef backbone(module, name):\n    return getattr(backbones.__dict__[module], name)()\n",
         {"backbones.py": "import torch\nimport losses as L\n"}),
    ],
    ids=["a package's submodule imports it", "the module imports its module as another name"],
)
def test_a_lookup_in_one_module_builds_what_it_holds_a_level_down(tmp_path: Path, extra, more):
    found = _findings(tmp_path, _program(extra, **more), installable=False)
    assert found == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_globals_builds_only_the_classes_of_its_own_file(tmp_path: Path):
    # CenterNet's `globals()[base_name](pretrained=...)` picks a backbone its file defines:
    # a loss class of another file stays unnamed, one of the same file a root.
    builder = "def backbone(name):\n    return globals()[name]()\n"
    assert _findings(tmp_path, _program(**{"backbones.py": builder})) == [
        ("losses.py", 6, 16, "SL101", "unknown", UNNAMED),
    ]
    losses = _LOSSES.format(decorator="") + "\n\n" + builder
    assert _findings(tmp_path, _program(losses=losses)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_globals_with_a_star_import_reaches_classes_it_never_spells(tmp_path: Path):
    builder = "from losses import *\n\n\ndef loss_named(name):\n    return globals()[name]()\n"
    assert _findings(tmp_path, _program(**{"factory.py": builder})) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_globals_filled_by_computed_names_reaches_classes_it_never_spells(tmp_path: Path):
    # ``globals().update(module.__dict__)`` over a loop of modules puts another file's
    # classes in the namespace ``globals()[name]`` then builds from.
    builder = ("import losses\n\nfor module in (losses,):\n    globals().update(module.__dict__)\n\n\n"
               "def loss_named(name):\n    return globals()[name]()\n")
    assert _findings(tmp_path / "update", _program(**{"factory.py": builder})) == [("losses.py", 6, 16, "SL101", "hot", HOT)]
    stored = builder.replace("globals().update(module.__dict__)", "for key in dir(module):\n        globals()[key] = getattr(module, key)")
    assert _findings(tmp_path / "store", _program(**{"factory.py": stored})) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


PASSED_ON = f"{UNNAMED} but imports that pass it on"


def test_a_class_only_passed_on_by_imports_is_unreached_where_nobody_installs_the_project(tmp_path: Path):
    # KAIR's retinaface/layers/modules/__init__.py: `from .multibox_loss import MultiBoxLoss`
    # and `__all__ = ['MultiBoxLoss']`, and nothing builds it.
    heads = {"heads/__init__.py": "from losses import RankLoss\n\n__all__ = [\n    'RankLoss',\n]\n"}
    assert _findings(tmp_path, _program(**heads), installable=False) == [("losses.py", 6, 16, "SL101", "unknown", PASSED_ON)]
    assert _findings(tmp_path, _program(**heads), include_cold=False, installable=False) == []
    # A package users install re-exports it for them.
    assert _findings(tmp_path, _program(**heads)) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


@pytest.mark.parametrize("other", [
    "from losses import RankLoss\n\ncriterion = RankLoss()\n",  # built where it is imported
    "from losses import RankLoss as Loss\n",  # built under another name, wherever `Loss` is called
    "import losses\n\ncriterion = losses.RankLoss()\n",
    "from losses import RankLoss\n\nLOSSES = {'rank': RankLoss}\n",  # handed on as a value
    # `globals()` picks from the file's namespace, which holds what it imports: a registry
    # built from `__all__`, a name computed from a setting.
    "from losses import RankLoss\n\n__all__ = ['RankLoss']\nREGISTRY = {name: globals()[name] for name in __all__}\n",
    "from losses import RankLoss\n\n\ndef build_loss(kind):\n    return globals()[kind.capitalize() + 'Loss']()\n",
])
def test_a_class_a_project_nobody_installs_uses_beyond_imports_stays_a_root(tmp_path: Path, other: str):
    assert _findings(tmp_path, _program(**{"criteria.py": other}), installable=False) == [
        ("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_a_class_hubconf_imports_is_an_entry_point_where_nobody_installs_the_project(tmp_path: Path):
    # torch.hub offers every public callable of `hubconf.py`'s namespace, imported or not:
    # `torch.hub.load(repo, "RankLoss")` builds it.
    hub = {"hubconf.py": "dependencies = ['torch']\n\nfrom losses import RankLoss\n"}
    assert _findings(tmp_path, _program(**hub), installable=False) == [("losses.py", 6, 16, "SL101", "hot", HOT)]


def test_reflection_in_a_test_file_rules_nothing_out(tmp_path: Path):
    # What a test builds by a computed name runs in the test, not in the program's steps.
    test = "import sys\n\n\ndef test_import():\n    assert 'losses' in sys.modules\n"
    assert _findings(tmp_path, _program(**{"tests/test_losses.py": test})) == [
        ("losses.py", 6, 16, "SL101", "unknown", UNNAMED),
    ]


_GET_OBJ_FROM_STR = (
    "\nimport importlib\n\n\ndef get_obj_from_str(string):\n    module, cls = string.rsplit('.', 1)\n"
    "    return getattr(importlib.import_module(module, package=None), cls)\n"
)


@pytest.mark.parametrize(
    ("extra", "more", "why"),
    [
        # votenet: `MODEL = importlib.import_module(FLAGS.model)`, then `MODEL.VoteNet(...)`:
        # what the module builds, the file spells.
        ("\nimport importlib\n\n\ndef build(name):\n    return importlib.import_module(name).Net()\n", {}, UNNAMED),
        # A member looked up by a computed name in a module fetched by one: any class.
        ("\nimport importlib\n\n\ndef build(path, name):\n    return getattr(importlib.import_module(path), name)()\n",
         {}, HOT),
        # ... of a package spelled as a literal: only what its modules hold.
        ("\nimport importlib\n\n\ndef build(arch, name):\n"
         "    return getattr(importlib.import_module('nets.' + arch), name)()\n",
         {"nets/__init__.py": "", "nets/small.py": "class Small:\n    pass\n"}, UNNAMED),
        ("\nimport importlib\n\n\ndef build(arch, name):\n"
         "    return getattr(importlib.import_module(f'nets.{arch}'), name)()\n",
         {"nets/__init__.py": "", "nets/small.py": "from losses import *\n"}, HOT),
        # A package of that name the index does not hold: it may be laid out otherwise.
        ("\nimport importlib\n\n\ndef build(arch, name):\n"
         "    return getattr(importlib.import_module('losses.' + arch), name)()\n", {}, HOT),
        # Asked whether it holds a name, `sys.modules` builds nothing; iterated, anything.
        ("\nimport sys\n\nUSE_WANDB = 'wandb' in sys.modules\n", {}, UNNAMED),
        ("\nimport sys\n\nLOADED = [name for name in sys.modules]\n", {}, HOT),
        # ReChorus builds its model by eval of a name the command line gives.
        ("\n\ndef build(name):\n    return eval('{0}.{0}'.format(name))()\n", {}, HOT),
        ("\n\ndef build(name):\n    return eval('nets.' + name)()\n",
         {"nets/__init__.py": "", "nets/small.py": "class Small:\n    pass\n"}, UNNAMED),
        # (what eval reads first is a name the file binds: a module imported under another)
        ("\nimport losses as criteria\n\n\ndef build(name):\n    return eval('criteria.' + name)()\n", {}, HOT),
        # VIBE's `eval(f'get_{src}_joint_names')()`: a name of the file's own namespace
        ("\n\ndef build(kind):\n    return eval(f'get_{kind}_names')()\n", {}, UNNAMED),
        # ... but not a template that begins with what the value gives (`"losses.RankLoss"`)
        ("\n\ndef build(kind):\n    return eval(f'{kind}_loss')()\n", {}, HOT),
        # latent-diffusion's `get_obj_from_str(config["target"])`: a path split in two, the
        # member's name spelled where the path is (a config's `target: losses.RankLoss`).
        (_GET_OBJ_FROM_STR, {}, UNNAMED),
        (_GET_OBJ_FROM_STR, {"configs/loss.yaml": "target: losses.RankLoss\n"}, HOT),
        (_GET_OBJ_FROM_STR + "\n\ndef pick(name):\n    return get_obj_from_str('losses.' + name)\n", {}, HOT),
        # ... but a lookup by another computed name may fetch anything
        (_GET_OBJ_FROM_STR + "\n\ndef other(module, name):\n    return getattr(module, name)\n", {}, HOT),
        # ... even one by a name like the split's member part, in another function
        (_GET_OBJ_FROM_STR + "\n\ndef other(module, cls):\n    return getattr(module, cls)\n", {}, HOT),
    ],
    ids=["import_module with a spelled member", "import_module with a lookup by name", "of another package",
         "of a package whose module star-imports the loss", "of a package laid out otherwise",
         "membership in sys.modules", "sys.modules iterated", "eval of a computed name",
         "eval of a name in another package", "eval of a name in a module imported under another",
         "eval of a name of the file's namespace", "eval of a template that begins with a value",
         "a split path", "a split path a config spells", "a split path a template builds",
         "a split path beside another lookup by name", "a split path beside a lookup by a name like its member's"],
)
def test_a_module_fetched_by_a_computed_name_builds_only_what_a_lookup_by_name_reaches(tmp_path: Path, extra, more,
                                                                                      why):
    assert _findings(tmp_path, _program(extra, **more)) == [_loss_row(why)]


@pytest.mark.parametrize("extra", [
    # (black breaks a long call: the receiver on a line of its own)
    "\nimport importlib\n\n\ndef build(path, name):\n    return getattr(\n        importlib.import_module(path), name\n    )()\n",
    # (a receiver that holds calls two deep)
    "\nimport importlib\n\n\ndef build(cfg, name):\n    return getattr(importlib.import_module(cfg.get('m')), name)()\n",
], ids=["over lines", "calls two deep"])
def test_a_lookup_by_a_computed_name_is_seen_however_its_receiver_is_spelled(tmp_path: Path, extra):
    assert _findings(tmp_path, _program(extra)) == [_loss_row(HOT)]


@pytest.mark.parametrize("load", [
    "def load(name):\n    return importlib.import_module(name)\n",
    "def load(name):\n    module = importlib.import_module(name)\n    return module\n",
], ids=["returned", "bound and returned"])
def test_a_module_fetched_by_a_computed_name_and_returned_may_be_looked_up_by_its_caller(tmp_path: Path, load):
    # The helper's file looks nothing up; the file that calls it does.
    extra = "\nfrom loader import load\n\n\ndef build(path, name):\n    return getattr(load(path), name)()\n"
    found = _findings(tmp_path, _program(extra, **{"loader.py": "import importlib\n\n\n" + load}))
    assert found == [_loss_row(HOT)]


@pytest.mark.parametrize(("extra", "why"), [
    ("\nfrom config import MODELS\n\n\ndef build(name):\n    return getattr(MODELS, name)()\n", HOT),
    # (votenet's `MODEL = importlib.import_module(FLAGS.model)`, which no other file imports)
    ("\nfrom config import MODELS\n\n\ndef build():\n    return MODELS.Net()\n", UNNAMED),
], ids=["imported and looked up", "imported, its member spelled"])
def test_a_module_fetched_by_a_computed_name_into_a_global_another_file_imports(tmp_path: Path, extra, why):
    config = "import importlib\nimport sys\n\nMODELS = importlib.import_module(sys.argv[1])\n"
    assert _findings(tmp_path, _program(extra, **{"config.py": config})) == [_loss_row(why)]


#: A loss function (a root by its name) that only the loss class calls.
_CHAINED_LOSSES = """\
import torch


def rank_loss(logits):
    probs = logits.softmax(-1)
    return probs.nonzero()


class RankLoss(torch.nn.Module):
    def forward(self, logits):
        return rank_loss(logits)
"""


@pytest.mark.parametrize(("extra", "why"), [
    ("", "not reached from any step of the project: nothing in the project names `rank_loss` but code that never "
         "runs (`RankLoss`)"),
    ("\nfrom losses import RankLoss\n\ncriterion = RankLoss()\n", "loss `rank_loss`"),
    # (named also outside the class that never runs: a root by its name again)
    ("\nfrom losses import rank_loss\n", "loss `rank_loss`"),
], ids=["the class is never built", "the class is built", "named outside the class too"])
def test_what_only_code_that_never_runs_names_never_runs(tmp_path: Path, extra, why):
    # FairMOT's `compute_rot_loss`, called only by `BinRotLoss`, which nothing names.
    found = _findings(tmp_path, _program(extra, losses=_CHAINED_LOSSES))
    assert found == [("losses.py", 6, 12, "SL101", "unknown" if why.startswith("not") else "hot", why)]


def test_the_code_of_classes_that_never_run_is_read_once_however_many_names_it_is_asked(tmp_path: Path, monkeypatch):
    # Many files, each with a class nothing names and a loss only that class calls: the
    # classes' code is read once each, not once for each name found in the next round.
    import synclint.project.unnamed_classes as unnamed_classes

    count = 30
    files = {f"losses{number}.py": _CHAINED_LOSSES.replace("rank_loss", f"rank_loss{number}")
             .replace("RankLoss", f"RankLoss{number}") for number in range(count)}
    extra = "".join(f"import losses{number}\n" for number in range(count))
    reads = []
    read = unnamed_classes.python_text_of
    monkeypatch.setattr(unnamed_classes, "python_text_of", lambda path: reads.append(path) or read(path))
    found = _findings(tmp_path, _program(extra, **files))
    assert sum(1 for row in found if "but code that never runs" in row[5]) == count
    assert len(reads) < 4 * (count + 3)  # (each file once a round, two rounds, and each class once)


def test_getattr_on_a_module_outside_the_project_rules_nothing_out(tmp_path: Path):
    extra = "\nimport torch.nn as nn\n\n\ndef activation(name):\n    return getattr(nn, name)()\n"
    assert _findings(tmp_path, _program(extra)) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]


def test_the_file_s_words_and_its_classes_named_outside_themselves():
    source = (
        "class A(Base):\n    def f(self):\n        return A()\n\n\n"
        "class B:\n    pass\n\n\nB_list = 'AB, B'\n"
    )
    spelled = {"A", "B", "Base", "B_list", "AB", "self", "f"}
    assert spelled_names(source, spelled, {})[0] == spelled
    assert spelled_names(source, {"A", "B"}, {"A": (1, 3), "B": (6, 7)})[1] == {"B"}


def _reflection(source: str) -> tuple:
    found = find_reflection(source)
    return found.marker, found.modules


def test_which_reflection_rules_unnamed_classes_out():
    assert _reflection("x = Base.__subclasses__()\n") == ("`__subclasses__`", frozenset())
    assert _reflection("cls = globals()[name]\n") == (None, frozenset())  # (its own file's: see below)
    assert _reflection("from .losses import *\ncls = globals()[name]\n") == ("`globals()` with `import *`", frozenset())
    assert builds_its_own_classes("cls = globals( )[name]\n") and not builds_its_own_classes("g = my_globals\n")
    filled = "`globals()` filled by computed names"
    assert _reflection("globals()[key] = value\n") == (filled, frozenset())
    assert _reflection("globals().update(table)\n") == (filled, frozenset())
    assert _reflection("if globals()[key] == 1:\n    pass\n") == (None, frozenset())
    assert _reflection("import importlib\nm = importlib.import_module('pkg.losses')\n") == (None, frozenset())
    assert _reflection("class Meta(type):\n    pass\n") == ("`class Meta(type)`", frozenset())
    assert _reflection("class A(metaclass=abc.ABCMeta):\n    pass\n") == (None, frozenset())
    # Members fetched by a computed name: the index asks whether these name project modules.
    assert _reflection("cls = getattr(models.losses, name)\n") == (None, frozenset({"models.losses"}))
    assert _reflection("cls = getattr(\n    models,\n    f'{arch}Net',\n)\n") == (None, frozenset({"models"}))
    assert _reflection("cls = getattr(models, 'Net')\n") == (None, frozenset())
    assert _reflection("table = vars(losses)\nother = heads.__dict__\n") == (None, frozenset({"losses", "heads"}))


@pytest.mark.parametrize(("source", "marker", "packages"), [
    # A module fetched by a computed name builds what the file spells of it...
    ("m = importlib.import_module(path)\nnet = m.Net()\n", None, set()),
    ("m = __import__(name)\n", None, set()),
    ("m = sys.modules[name]\nx = getattr(self, key)\n", None, set()),
    # ... unless the file also looks a member up by a computed name: any module's, or
    # those of the package the name starts with.
    ("m = importlib.import_module(path)\ncls = getattr(m, name)\n", "`import_module`", set()),
    ("cls = getattr(importlib.import_module(path), name)\n", "`import_module`", set()),
    ("m = sys.modules[name]\ntable = vars(m)\n", "`sys.modules`", set()),
    ("m = __import__(name)\nkeys = dir(m)\n", "`__import__`", set()),
    ("m = import_module('models.' + arch)\ncls = getattr(m, name)\n", None, {"models"}),
    ("m = import_module(f'lib.models.{arch}')\ntable = m.__dict__\n", None, {"lib.models"}),
    ("m = import_module('lib.config.%s.config' % name)\ncls = getattr(m, key)\n", None, {"lib.config"}),
    ("m = import_module('lib.test.{}'.format(name))\ncls = getattr(m, key)\n", None, {"lib.test"}),
    ("m = import_module('.' + name, 'pkg.models')\ncls = getattr(m, key)\n", None, {"pkg.models"}),
    ("m = import_module('.' + name, package='pkg.models')\ncls = getattr(m, key)\n", None, {"pkg.models"}),
    ("m = import_module('..' + name, 'pkg.models')\ncls = getattr(m, key)\n", None, {"pkg"}),  # (a level up)
    ("m = import_module(f'..{name}', package='pkg')\ncls = getattr(m, key)\n", "`import_module`", set()),
    ("m = __import__('pkg.models.' + name)\ncls = getattr(m, key)\n", None, {"pkg"}),  # (the top package)
    ("m = sys.modules['ltr.admin']\ncls = getattr(m, key)\n", None, {"ltr.admin"}),
    # A module a function returns: its caller may look a member up by a computed name.
    ("def load(name):\n    return importlib.import_module(name)\n", "`import_module`", set()),
    ("def load(name):\n    m = import_module('models.' + name)\n    return m\n", None, {"models"}),
    ("def build(name):\n    return importlib.import_module(name).Net()\n", None, set()),
    ("def build(name):\n    m = import_module(name)\n    return m.Net()\n", None, set()),
    # (a global another file may import: see below)
    ("MODELS = importlib.import_module(sys.argv[1])\n", None, set()),
    ("load = lambda name: importlib.import_module(name)\n", "`import_module`", set()),
    # Lookups by a computed name other than getattr's call: getattr passed on, attrgetter.
    ("m = import_module(path)\ncls = functools.reduce(getattr, name.split('.'), m)\n", "`import_module`", set()),
    ("m = import_module(path)\ncls = operator.attrgetter(name)(m)\n", "`import_module`", set()),
    ("m = import_module(path)\ncls = operator.attrgetter('Net')(m)\n", None, set()),
    # A name relative to a package not spelled, or one that starts computed: any module.
    ("m = import_module('.' + name, __package__)\ncls = getattr(m, key)\n", "`import_module`", set()),
    ("m = import_module(f'{root}.models.{arch}')\ncls = getattr(m, key)\n", "`import_module`", set()),
    ("m = import_module('models.' + name if '.' not in name else name)\ncls = getattr(m, key)\n", "`import_module`",
     set()),
    ("m = import_module(args.model or 'models.' + name)\ncls = getattr(m, key)\n", "`import_module`", set()),
    ("a = import_module('models.' + x)\nb = import_module(y)\ncls = getattr(b, key)\n", "`import_module`", set()),
    # sys.modules: asked whether it holds a name, nothing; listed or iterated, anything.
    ("if 'wandb' in sys.modules:\n    pass\n", None, set()),
    ("if name not in sys.modules.keys():\n    pass\n", None, set()),
    ("for name in sys.modules:\n    pass\n", "`sys.modules`", set()),
    ("found = [m for m in list(sys.modules.values())]\n", "`sys.modules`", set()),
    # The file's own module is its namespace, as globals().
    ("setattr(sys.modules[__name__], name, value)\n", "`globals()` filled by computed names", set()),
    ("setattr(sys.modules[__name__], 'Net', value)\n", None, set()),
    # eval of a dotted name built from a template looks it up: in the package it starts
    # with, or anywhere (ReChorus's `eval('{0}.{0}'.format(args.model_name))`).
    ("net = eval('models.' + cfg.NAME + '.get_pose_net')(cfg)\n", None, {"models"}),
    ("arch = eval('genotypes.%s' % args.arch)\n", None, {"genotypes"}),
    ("net = eval(f'models.resnet{depth}')()\n", None, {"models"}),
    ("model = eval('{0}.{0}'.format(args.model_name))\n", "`eval` of a computed name", set()),
    ("model = eval(name + '.Net')\n", "`eval` of a computed name", set()),
    ("exec(f'{name} = Net()')\n", "`exec` of a computed name", set()),
    # (however the computed part is spelled: a key, a call, a join of parts)
    ("model = eval(cfg['model'] + '(cfg)')\n", "`eval` of a computed name", set()),
    ("model = eval(args.model.upper() + 'Net')\n", "`eval` of a computed name", set()),
    ("net = eval('.'.join([package, name]))\n", "`eval` of a computed name", set()),
    # (or a line up, in a name the eval reads)
    ("expr = '{0}.{0}'.format(name)\nmodel = eval(expr)\n", "`eval` of a computed name", set()),
    ("path = 'models.' + name\nnet = eval(path, namespace)()\n", None, {"models"}),
    # (not where the name was last bound to something else: yolov5's camera number)
    ("s = f'{i}: {s}'\nfor s in sources:\n    s = clean(s)\n    s = eval(s) if s.isnumeric() else s\n", None, set()),
    ("d = eval('\\n'.join(lines))\n", None, set()),  # (VAR's text of a dict)
    # (a string the project spells: yolov7's module names from its yamls)
    ("m = eval(m) if isinstance(m, str) else m\n", None, set()),
])
def test_a_module_fetched_by_a_computed_name_rules_out_only_what_a_lookup_by_name_reaches(source, marker, packages):
    found = find_reflection(source)
    assert (found.marker, set(found.packages)) == (marker, packages)


def test_sys_modules_of_its_own_name_is_the_file_s_namespace():
    assert builds_its_own_classes("net = getattr(sys.modules[__name__], name)\n")


def test_a_text_file_spells_a_name_only_as_a_whole_word_across_the_pieces_it_is_read_in(tmp_path: Path, monkeypatch):
    from synclint.project import mentions

    monkeypatch.setattr(mentions, "_CHUNK", 8)  # "loss: RankLoss" straddles two pieces
    page = tmp_path / "README.md"
    page.write_text("see RankLossV2 and XAPLoss; loss: RankLoss\n")
    assert mentions._spelled_in_file(str(page), {"RankLoss", "APLoss", "Other"}) == {"RankLoss"}
    page.write_text("see RankLossV2 and XAPLoss\n")
    assert mentions._spelled_in_file(str(page), {"RankLoss", "APLoss"}) == set()
    assert mentions._spelled_in_file(str(tmp_path / "gone.md"), {"RankLoss"}) == {"RankLoss"}  # unreadable


def test_a_python_file_that_comes_to_name_the_class_is_read_on_a_cached_run(tmp_path: Path):
    # Names are searched when the index asks, not kept in summaries: the facts' cache state
    # must still change with the Python file that names the class.
    cache = tmp_path / "cache"
    root = tmp_path / "project"
    root.mkdir()
    assert _findings(root, _program(), cache=cache) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]
    assert _findings(root, _program('\nLOSSES = ["RankLoss"]\n'), cache=cache) == [("losses.py", 6, 16, "SL101", "hot", HOT)]



def test_a_string_edited_to_name_the_class_is_read_on_a_cached_run(tmp_path: Path):
    # The same edit within a string: the file's summary stays as it was, but what it names
    # changes (the store may keep the last facts only when nothing but summaries decide them).
    cache = tmp_path / "cache"
    root = tmp_path / "project"
    root.mkdir()
    assert _findings(root, _program('\nLOSSES = ["Other"]\n'), cache=cache) == [("losses.py", 6, 16, "SL101", "unknown", UNNAMED)]
    (root / "train.py").write_text(_TRAIN.format(extra='\nLOSSES = ["RankLoss"]\n'))  # (this file alone)
    found = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=True, cache_dir=cache, include_cold=True))
    assert [(Path(f.path).name, f.context, f.why) for f in found] == [("losses.py", "hot", HOT)]

def _words(source: str) -> set[str]:
    """Every word of ``source``, as Python reads a name (the oracle ``spelled_names`` must agree with)."""
    return set(re.findall(r"[^\W\d]\w*", source))


def test_the_names_a_file_spells_are_its_words():
    source = "class Loss:\n    x = Loss\n\n\nv = (2Loss, aLossV2, LossV2, éAP, _AP)\n"
    names = {"Loss", "LossV2", "AP", "Net"}
    assert spelled_names(source, names, {})[0] == names & _words(source) == {"Loss", "LossV2"}
    # Inside its own definition, and after a digit, a name is not named outside itself.
    assert spelled_names(source, names, {"Loss": (1, 2)}) == ({"Loss", "LossV2"}, frozenset())
    assert spelled_names(source + "y = Loss\n", names, {"Loss": (1, 2)})[1] == {"Loss"}


#: A base module whose ``forward`` calls ``self.prepare``, which a subclass replaces with a
#: sync (conditional-flow-matching's ``CFMLitModule.step`` and ``SplineCFMLitModule``).
_VARIANTS = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return self.prepare(x)

    def prepare(self, x):
        return x


class Sparse(Model):
    def prepare(self, x):
        return x.nonzero()
{more}"""
_BUILDS_MODEL = """\
from model import Model


def train(loader):
    net = {built}()
    for batch in loader:
        net(batch)
"""
VIA_BASE = "`Model.forward` -> `Sparse.prepare`"


def _variants(tmp_path: Path, more: str = "", built: str = "Model", **files: str) -> list:
    program = {"model.py": _VARIANTS.format(more=more),
               "train.py": _BUILDS_MODEL.format(built=built).replace("import Model", f"import {built}"), **files}
    return [row[1:] for row in _findings(tmp_path, program, installable=False)]


def test_an_override_in_a_subclass_nothing_builds_is_not_reached_from_its_base(tmp_path: Path):
    # The base's `self.prepare(x)` runs `Sparse.prepare` only on a `Sparse`, which nothing names.
    unreached = "not reached from any step of the project: nothing in the project names `Sparse`"
    assert _variants(tmp_path) == [(14, 16, "SL101", "unknown", unreached)]


def test_an_override_in_a_subclass_the_project_builds_is_reached_from_its_base(tmp_path: Path):
    assert _variants(tmp_path, built="Sparse") == [(14, 16, "SL101", "hot", "`Model.forward` -> `Sparse.prepare`")]
    # Named in a configuration file (Hydra's `_target_`): it may be built.
    config = {"conf.yaml": "model:\n  _target_: model.Sparse\n"}
    assert _variants(tmp_path / "config", **config) == [(14, 16, "SL101", "hot", VIA_BASE)]


def test_an_override_a_built_subclass_inherits_is_reached(tmp_path: Path):
    # `Sparse` itself is named only as the base of `Sparser`, which keeps its `prepare`.
    more = "\n\nclass Sparser(Sparse):\n    def extra(self, x):\n        return x\n"
    assert _variants(tmp_path, more, built="Sparser") == [(14, 16, "SL101", "hot", VIA_BASE)]


def test_an_override_of_a_class_named_as_a_base_stays_reached(tmp_path: Path):
    # `Sparser` replaces `prepare`, so a `Sparser` never runs `Sparse.prepare`; but a base is
    # named by its subclasses, so `Sparse` may be built too (a conservative answer).
    more = "\n\nclass Sparser(Sparse):\n    def prepare(self, x):\n        return x.unique()\n"
    assert _variants(tmp_path, more, built="Sparser") == [
        (14, 16, "SL101", "hot", VIA_BASE),
        (19, 16, "SL102", "hot", "`Model.forward` -> `Sparser.prepare`"),
    ]


_LOGGED = """\
import torch


def summary(x):
    return x.nonzero()


class Model(torch.nn.Module):
    def forward(self, x):
        return self.prepare(x)

    def prepare(self, x):
        return x


class Sparse(Model):
    def prepare(self, x):
        return summary(x)


class Logged(Model):
    def on_train_epoch_end(self):
        summary(self.weight)
"""


def test_a_helper_that_only_cold_code_and_unbuilt_classes_call_is_cold(tmp_path: Path):
    # `Sparse.prepare` never runs (nothing builds a `Sparse`): its call of `summary` decides
    # nothing, and the epoch hook that also calls it leaves it cold, not unreached.
    program = {"model.py": _LOGGED, "train.py": _BUILDS_MODEL.format(built="Logged").replace("import Model", "import Logged")}
    rows = _findings(tmp_path, program, installable=False)
    assert [row[1:] for row in rows] == [(5, 12, "SL101", "cold", "called only from epoch or phase hook code")]


@pytest.mark.parametrize(
    ("page", "why"),
    [
        ("# Losses\n\nWe adapted RankLoss from the [RankLoss](https://example.org) paper.\n", UNNAMED),
        ("Train with `--loss RankLoss`.\n", HOT),
        ("Train with:\n\n```python\ncriterion = losses.RankLoss()\n```\n", HOT),
        ("Train with:\n\n    criterion = losses.RankLoss()\n", HOT),
        # (an unclosed fence runs to the end of the page)
        ("Train with:\n\n~~~\ncriterion = RankLoss()\n", HOT),
    ],
    ids=["prose", "a code span", "a fenced block", "an indented block", "an unclosed fence"],
)
def test_a_program_s_markdown_page_names_a_class_in_its_code_not_in_its_prose(tmp_path: Path, page, why):
    # A README that credits "the [AlphaFold](...)" model whose vendored copy nothing
    # builds: prose names where code came from; a page that tells users to build a class
    # shows the code. In a library, prose documents the API (DeepRobust's README lists its
    # `Fast` defence in a table): it names the class.
    assert _findings(tmp_path / "program", _program(**{"README.md": page}), installable=False) == [_loss_row(why)]
    assert _findings(tmp_path / "library", _program(**{"README.md": page})) == [_loss_row(HOT)]
