"""A module no file of the project imports, and that is no script, never runs: its code is
cold (:mod:`synclint.project.unimported_modules`)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.layout import is_installable
from synclint.project.reflection import find_module_loading_in_packages
from synclint.project.scripts import is_script
from synclint.project.summary import summarize
from synclint.runner import RunOptions, lint_paths

#: The program: a script whose loop over batches runs ``Net`` and the live ``RankLoss``
#: (as an attribute of its module, which names every class of the name: a name imported
#: by itself would name the live one only, see :mod:`synclint.project.unnamed_classes`).
_TRAIN = """\
import torch

import model
from model import Net
{imports}

def train(loader):
    net, criterion = Net(), model.RankLoss()
    for batch in loader:
        criterion(net(batch))
{extra}

if __name__ == "__main__":
    train([torch.ones(3)])
"""
_MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x


class RankLoss(torch.nn.Module):
    def forward(self, logits):
        return logits.sum()
"""
#: An older copy of the loss (yolov9's ``utils/segment/loss.py``), named like the live one.
_OLD_LOSS = """\
import torch


class RankLoss(torch.nn.Module):
    def forward(self, logits):
        return logits.nonzero()
{extra}"""
HOT = "`RankLoss.forward`"
#: A tool-only ``pyproject.toml``: the project is not installable, its packages no library.
_TOOLS_ONLY = "[tool.ruff]\nline-length = 120\n"


def _never_imported(path: str) -> str:
    return f"never runs: `{path}` is imported by no file of the project and is no script"


def _findings(root: Path, files: dict[str, str], include_cold: bool = True, pyproject: str = _TOOLS_ONLY) -> list:
    """(path, line, column, code, context, why) of a project of ``files`` under ``root``."""
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    options = RunOptions(jobs=1, use_cache=False, include_cold=include_cold)
    found = lint_paths([root], Settings(root=root), options)
    return sorted((Path(f.path).relative_to(root).as_posix(), f.line, f.column, f.code, f.context, f.why)
                  for f in found)


def _program(imports: str = "", extra: str = "", loss: str = _OLD_LOSS.format(extra=""),
             loss_path: str = "pkg/losses.py", **more: str) -> dict[str, str]:
    files = {"train.py": _TRAIN.format(imports=imports, extra=extra), "model.py": _MODEL, loss_path: loss, **more}
    if loss_path.startswith("pkg/"):
        files["pkg/__init__.py"] = ""
    return files


def _cold(path: str = "pkg/losses.py", why: str | None = None) -> list:
    return [(path, 6, 16, "SL101", "cold", why or _never_imported(path))]


def _hot(path: str = "pkg/losses.py") -> list:
    return [(path, 6, 16, "SL101", "hot", HOT)]


# -- a module nothing imports -------------------------------------------------------------

def test_a_module_no_file_imports_is_cold_and_hidden_by_default(tmp_path: Path):
    # yolov9's utils/segment/loss.py: its `ComputeLoss` is named (other modules define one),
    # so only its module says it never runs.
    assert _findings(tmp_path, _program()) == _cold()
    assert _findings(tmp_path, _program(), include_cold=False) == []


@pytest.mark.parametrize("imports", [
    "import pkg.losses",
    "from pkg import losses",
    "from pkg.losses import RankLoss as OldRankLoss",
    "from pkg import *",
    "\n\ndef criterion():\n    import pkg.losses\n    return pkg.losses",  # in a function: it runs when called
])
def test_a_module_the_program_imports_runs(tmp_path: Path, imports: str):
    assert _findings(tmp_path, _program(imports)) == _hot()


def test_a_module_imported_beside_the_script_by_its_bare_name_runs(tmp_path: Path):
    # `python tools/train.py` puts `tools/` on the path: `import losses` finds `tools/losses.py`.
    files = _program(loss_path="tools/losses.py")
    files["tools/run.py"] = "import losses\n\nif __name__ == '__main__':\n    print(losses)\n"
    assert _findings(tmp_path, files) == _hot("tools/losses.py")


@pytest.mark.parametrize(("path", "heads"), [
    ("pkg/heads.py", "from .losses import RankLoss\n"),
    ("pkg/heads.py", "from . import losses\n"),
    ("pkg/sub/heads.py", "from ..losses import RankLoss\n"),
])
def test_a_module_a_package_module_imports_relatively_runs(tmp_path: Path, path: str, heads: str):
    dotted = path.removesuffix(".py").replace("/", ".")
    files = _program(f"import {dotted}", **{path: heads, "pkg/sub/__init__.py": ""})
    assert _findings(tmp_path, files) == _hot()


def test_an_import_through_a_longer_package_path_runs_the_module(tmp_path: Path):
    # SlowFast's `from vision.fair.slowfast.tools.train_net import train`: vendored deeper.
    assert _findings(tmp_path, _program("from vision.fair.app.pkg.losses import RankLoss as Old")) == _hot()
    # A shorter tail is no such path: `utils.losses` is not `pkg.losses`.
    assert _findings(tmp_path, _program("from utils.losses import RankLoss as Old")) == _cold()


def test_a_package_init_that_imports_the_module_runs_it(tmp_path: Path):
    files = _program("import pkg")
    files["pkg/__init__.py"] = "from .losses import RankLoss\n"
    assert _findings(tmp_path, files) == _hot()


def test_what_only_modules_that_never_run_import_never_runs(tmp_path: Path):
    # yolov9's utils/loss.py: imported only by the two copies nothing imports.
    files = _program(**{"pkg/old_heads.py": "from .losses import RankLoss\n\n\nHEADS = [RankLoss]\n"})
    why = ("never runs: `pkg/losses.py` is imported only by modules that never run, such as `pkg/old_heads.py`, "
           "and is no script")
    assert _findings(tmp_path, files) == _cold(why=why)
    # Once the program imports the importer, both run.
    files["train.py"] = _TRAIN.format(imports="import pkg.old_heads", extra="")
    assert _findings(tmp_path, files) == _hot()


def test_two_modules_that_import_each_other_and_nothing_else_never_run(tmp_path: Path):
    loss = _OLD_LOSS.format(extra="\n\ndef heads():\n    from . import old_heads\n    return old_heads\n")
    files = _program(loss=loss, **{"pkg/old_heads.py": "from .losses import RankLoss\n"})
    assert _findings(tmp_path, files) == [
        ("pkg/losses.py", 6, 16, "SL101", "cold",
         "never runs: `pkg/losses.py` is imported only by modules that never run, such as `pkg/old_heads.py`, "
         "and is no script"),
    ]


# -- scripts ------------------------------------------------------------------------------

def test_a_module_with_a_main_guard_is_a_script(tmp_path: Path):
    loss = _OLD_LOSS.format(extra='\n\nif __name__ == "__main__":\n    print(RankLoss()(torch.ones(3)))\n')
    assert _findings(tmp_path, _program(loss=loss)) == _hot()


def test_a_module_whose_top_level_runs_code_is_a_script(tmp_path: Path):
    # Written straight down, run with `python pkg/losses.py`.
    loss = _OLD_LOSS.format(extra="\n\nprint(RankLoss()(torch.ones(3)))\n")
    assert _findings(tmp_path, _program(loss=loss)) == _hot()


@pytest.mark.parametrize(("source", "script"), [
    ('"""Losses."""\nimport os\n\nRANK = int(os.getenv("RANK", -1))\n\n\ndef f():\n    pass\n', False),
    ("try:\n    import apex\nexcept ImportError:\n    apex = None\n", False),
    ("import typing\n\nif typing.TYPE_CHECKING:\n    import torch\n", False),
    ('if "__main__" == __name__:\n    pass\n', True),
    ("import sys\n\nif sys.argv and __name__ == '__main__':\n    pass\n", True),
    ("import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--lr')\n", True),
    ("for epoch in range(3):\n    pass\n", True),
    ("with open('log') as handle:\n    pass\n", True),
    ("try:\n    main()\nexcept KeyboardInterrupt:\n    pass\n", True),
    # A module of definitions reporting an optional dependency while it is imported (mt-dnn's S4).
    ("import logging\nlogger = logging.getLogger(__name__)\ntry:\n    import pykeops\n"
     "    logger.info('Pykeops installation found.')\nexcept ImportError:\n    logger.warning('no pykeops')\n", False),
    ("import warnings\ntry:\n    import apex\nexcept ImportError:\n    warnings.warn('apex missing')\n", False),
    ("import logging\nlogging.basicConfig(level=logging.INFO)\n", True),  # configures the program's logging
    # A report of what a call computes does that work: `logger.info(main())` runs the program.
    ("import logging\nlogger = logging.getLogger(__name__)\nlogger.info(main())\n", True),
    ("import warnings\nwarnings.warn(str(train(parse())))\n", True),
    ("import logging\nlogger = logging.getLogger(__name__)\nlogger.info('%d GPUs', NUM_GPUS)\n", False),
    ("print('training...')\n", True),
])
def test_what_makes_a_module_a_script(source: str, script: bool):
    assert is_script(ast.parse(source)) is script


def test_a_module_that_registers_a_class_may_be_imported_from_outside(tmp_path: Path):
    # ConvNeXt's backbone, copied into mmsegmentation, built by `type='ConvNeXt'`.
    loss = _OLD_LOSS.format(extra="").replace("class RankLoss", "@LOSSES.register_module()\nclass RankLoss")
    assert _findings(tmp_path, _program(loss=loss)) == [("pkg/losses.py", 7, 16, "SL101", "hot", HOT)]


def test_files_tools_run_by_their_name_are_never_unimported(tmp_path: Path):
    hubconf = _OLD_LOSS.format(extra="\n\ndef rank_loss():\n    return RankLoss()\n")
    assert _findings(tmp_path, _program(loss=hubconf, loss_path="hubconf.py")) == _hot("hubconf.py")


# -- texts that spell the module ------------------------------------------------------------

@pytest.mark.parametrize("more", [
    {"README.md": "Run `python -m pkg.losses` to see the old loss.\n"},
    {"scripts/old.sh": "python pkg/losses.py --data coco\n"},
    {"conf/loss.yaml": "loss:\n  _target_: pkg.losses.RankLoss\n"},
    {"tools/load.py": 'import importlib\n\nLOSSES = importlib.import_module("pkg.losses")\n'},
    {"demo.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": ["from pkg.losses import RankLoss\n"]}]})},
])
def test_a_module_a_text_spells_may_run(tmp_path: Path, more: dict[str, str]):
    assert _findings(tmp_path, _program(**more)) == _hot()


def test_a_module_whose_own_docstring_tells_how_to_run_it_may_run(tmp_path: Path):
    loss = '"""Usage: python pkg/losses.py"""\n' + _OLD_LOSS.format(extra="")
    assert _findings(tmp_path, _program(loss=loss)) == [("pkg/losses.py", 7, 16, "SL101", "hot", HOT)]


def test_a_module_whose_own_comment_tells_how_to_run_it_may_run(tmp_path: Path):
    # A comment documents how it runs as a docstring does (27667fd kept only the strings).
    loss = "# Usage: python -m pkg.losses\n" + _OLD_LOSS.format(extra="")
    assert _findings(tmp_path, _program(loss=loss)) == [("pkg/losses.py", 7, 16, "SL101", "hot", HOT)]


@pytest.mark.parametrize("more", [
    {"README.md": "The losses live in `pkg/losses_tal.py` and `mypkg.losses`.\n"},
    {"scripts/old.sh": "python pkg/losses2.py\n"},
])
def test_a_longer_name_does_not_spell_the_module(tmp_path: Path, more: dict[str, str]):
    assert _findings(tmp_path, _program(**more)) == _cold()


def test_a_module_an_unparsable_file_may_import_may_run(tmp_path: Path):
    # Python 2: the index cannot read it, so its text is searched for every tail of the name.
    files = _program(loss_path="losses.py", **{"legacy.py": "import losses\nprint 'old'\n"})
    found = _findings(tmp_path, files)
    assert [row[:4] for row in found] == [("legacy.py", 2, 1, "SL000"), ("losses.py", 6, 16, "SL101")]
    assert found[1][4:] == ("hot", HOT)


# -- when the question is not asked ----------------------------------------------------------

@pytest.mark.parametrize("loader", [
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f'pkg.{name}')\n",
    "import pkgutil\n\nNAMES = [m.name for m in pkgutil.iter_modules(['pkg'])]\n",
    "import runpy\n\n\ndef run(path):\n    return runpy.run_path(path)\n",
    "def run(path):\n    exec(open(path).read())\n",
    "from mmcv import Config\n\n\ndef load(path):\n    return Config.fromfile(path)\n",
    # Another framework's entry point is still the program's (score_sde's TensorFlow `main.py`).
    "import tensorflow\nfrom ml_collections import config_flags\n\nconfig_flags.DEFINE_config_file('config')\n",
    # gin's configuration files run their own `import pkg.losses` lines.
    "import gin\n\n\ndef configure(paths):\n    gin.parse_config_files_and_bindings(paths, [])\n",
    # Lookups of an object by its dotted path import the module the path names.
    "from pydoc import locate\n\n\ndef load(name):\n    return locate(f'pkg.{name}.RankLoss')()\n",
    "from hydra.utils import get_class\n\n\ndef load(name):\n    return get_class('pkg.' + name + '.RankLoss')()\n",
    "from hydra.utils import instantiate\n\n\ndef load(name):\n"
    "    return instantiate({'_target_': f'pkg.{name}.RankLoss'})\n",
    "import importlib.util\n\n\ndef load(name):\n    spec = importlib.util.find_spec('pkg.' + name)\n"
    "    module = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(module)\n    return module\n",
])
def test_reflection_that_could_import_any_module_keeps_every_module(tmp_path: Path, loader: str):
    assert _findings(tmp_path, _program(**{"registry.py": loader}), include_cold=True)[-1:] == _hot()
    assert find_module_loading_in_packages(loader) != _NO_LOADING


#: What a file without module loading gives.
_NO_LOADING = (None, frozenset())


def test_reflection_text_finds_only_computed_names():
    assert find_module_loading_in_packages('importlib.import_module("pkg.losses")') == _NO_LOADING
    assert find_module_loading_in_packages("boxes = np.fromfile(path, dtype=np.float32)") == _NO_LOADING
    assert find_module_loading_in_packages("__import__(name)") == ("`__import__`", frozenset())
    assert find_module_loading_in_packages("cls = locate('pkg.losses.RankLoss')") == _NO_LOADING
    assert find_module_loading_in_packages("block = allocate(size)") == _NO_LOADING
    assert find_module_loading_in_packages("model = instantiate(cfg.model)") == _NO_LOADING  # (its `_target_` is a configuration's text)
    assert find_module_loading_in_packages("cfg = dict(_target_='pkg.losses.RankLoss')") == _NO_LOADING
    assert find_module_loading_in_packages("cfg = dict(_target_=path)") == ("`_target_=`", frozenset())
    assert find_module_loading_in_packages("spec = importlib.util.spec_from_file_location(name, path)") == (
        "`spec_from_file_location`", frozenset()
    )


def test_an_installable_project_s_package_modules_are_its_library(tmp_path: Path):
    # Its users import `pkg.losses`; its loose tools are still asked.
    files = _program(**{"tools/old_loss.py": _OLD_LOSS.format(extra="")})
    assert _findings(tmp_path, files, pyproject="[project]\nname = 'pkg'\n") == [
        *_hot(), ("tools/old_loss.py", 6, 16, "SL101", "cold", _never_imported("tools/old_loss.py")),
    ]


def test_a_library_with_no_steps_but_the_unimported_module_s_keeps_them(tmp_path: Path):
    assert _findings(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": _OLD_LOSS.format(extra="")}) == _hot()


def test_a_project_with_no_script_is_a_library_of_modules(tmp_path: Path):
    # Its steps are found (`Net.forward`), but nothing in it is run: its users import it.
    files = _program()
    files["train.py"] = _TRAIN.format(imports="", extra="").split("\n\nif __name__")[0] + "\n"
    assert _findings(tmp_path, files) == _hot()


def test_a_test_file_keeps_its_context_and_its_imports_run_the_module(tmp_path: Path):
    test = ("import torch\n\nfrom pkg.losses import RankLoss\n\n\ndef rank_check():\n"
            "    loss = RankLoss()\n    print(loss(torch.ones(3, device='cuda')).nonzero())\n")
    found = _findings(tmp_path, _program(**{"tests/test_losses.py": test}))
    assert found == [*_hot(), ("tests/test_losses.py", 8, 11, "SL101", "cold", "test code")]
    # Unimported itself, a test keeps its own reason.
    found = _findings(tmp_path, {**_program(), "tests/test_losses.py": test.replace("pkg.losses", "model")})
    assert found == [*_cold(), ("tests/test_losses.py", 8, 11, "SL101", "cold", "test code")]


def test_the_cross_file_package_fixture_keeps_its_contexts_installable_or_not(tmp_path: Path):
    # detkit's `train.py` defines `train` for its users and nothing in detkit imports it:
    # installable, its package is a library; not, every module is unimported (what only
    # `train.py` imports too), no step is left, and the project is a library again.
    root = tmp_path / "detkit-project"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "project", root)
    options = RunOptions(jobs=1, use_cache=False, include_cold=True)
    installed = sorted((Path(f.path).name, f.line, f.context, f.why)
                       for f in lint_paths([root], Settings(root=root), options))
    assert ("train.py", 7, "hot", "the loop over `loader` in `train` -> `grad_norm`") in installed
    (root / "pyproject.toml").write_text(_TOOLS_ONLY)
    loose = sorted((Path(f.path).name, f.line, f.context, f.why)
                   for f in lint_paths([root], Settings(root=root), options))
    assert loose == installed


def test_the_summary_lists_every_import_statement_wherever_it_stands():
    source = ("import a.b.c as d, e\nfrom . import f\nfrom ..g import h\nfrom g import *\n\n\ndef load():\n"
              "    import i.j\n\n\nclass K:\n    from l import m\n")
    summary = summarize(source)
    assert summary.module_imports == ((0, "a.b.c", ()), (0, "e", ()), (1, "", ("f",)), (2, "g", ("h",)),
                                      (0, "g", ("*",)), (0, "i.j", ()), (0, "l", ("m",)))
    assert not summary.is_script and not summary.registers_itself


@pytest.mark.parametrize(
    ("setup_cfg", "installable"),
    [
        ("[flake8]\nmax-line-length = 120\n", False),  # mt-dnn: a tool's settings only
        ("[isort]\nprofile = black\n\n[tool:pytest]\naddopts = -q\n", False),
        ("[metadata]\nname = pkg\n\n[options]\npackages = find:\n", True),
        ("[options.packages.find]\nwhere = src\n", True),
        ("\ufeff[metadata]\nname = pkg\n", True),  # saved with a byte order mark
    ],
)
def test_a_setup_cfg_makes_a_library_only_when_it_describes_a_distribution(tmp_path: Path, setup_cfg, installable):
    (tmp_path / "setup.cfg").write_text(setup_cfg)
    assert is_installable(tmp_path) is installable
    # An unimported module of the package is the library's only when the project installs.
    files = _program(**{"pkg/old_loss.py": _OLD_LOSS.format(extra="")})
    found = _findings(tmp_path, files)
    expected_cold = ("pkg/old_loss.py", 6, 16, "SL101", "cold", _never_imported("pkg/old_loss.py"))
    assert (expected_cold in found) is not installable


@pytest.mark.parametrize("loader", [
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module('tasks.' + name)\n",
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f'tasks.{name}')\n",
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module('.' + name, 'tasks')\n",
    "def load(name):\n    return __import__('tasks.' + name)\n",
])
def test_a_module_imported_by_a_name_begun_with_a_literal_package_rules_out_only_that_package(tmp_path: Path, loader):
    # mt-dnn's `tasks/__init__.py` imports `"tasks." + file_name`: only modules of `tasks` may
    # come in that way; its unused `msrlongt5` package still never runs.
    files = _program(**{"registry.py": loader, "tasks/__init__.py": "", "tasks/rank.py": _OLD_LOSS.format(extra="")})
    found = _findings(tmp_path, files)
    assert ("pkg/losses.py", 6, 16, "SL101", "cold", _never_imported("pkg/losses.py")) in found
    assert ("tasks/rank.py", 6, 16, "SL101", "hot", HOT) in found


def test_a_module_name_with_no_literal_package_still_keeps_every_module(tmp_path: Path):
    loaders = ["import importlib\n\n\ndef load(name):\n    return importlib.import_module('tasks.' + name)\n"
               "def other(name):\n    return importlib.import_module(name)\n"]
    files = _program(**{"registry.py": loaders[0]})
    assert _findings(tmp_path, files)[-1:] == _hot()


def test_a_module_that_names_itself_in_its_own_code_is_still_unimported(tmp_path: Path):
    # TinyLlama's `lit_gpt/adapter_v2.py`: `getattr(lit_gpt.adapter_v2, self._mlp_class)` runs
    # only once the module does; a docstring's `python pkg/losses.py` still says how to run it.
    loss = "import pkg.losses\n" + _OLD_LOSS.format(extra="\n\ndef pick(name):\n    return getattr(pkg.losses, name)\n")
    assert _findings(tmp_path, _program(loss=loss)) == [("pkg/losses.py", 7, 16, "SL101", "cold",
                                                         _never_imported("pkg/losses.py"))]


@pytest.mark.parametrize("loader", [
    # (a comma inside the name's expression is no end of it: the package is "pkg", not "rank")
    "import importlib\n\n\ndef load(cfg):\n    return importlib.import_module('.' + cfg.get('loss', 'rank'), 'pkg')\n",
    # a literal name with the package that holds its modules
    "def load(name):\n    return __import__('pkg', fromlist=[name])\n",
    "def load(name):\n    return __import__('pkg', globals(), locals(), [name], 0)\n",
    "import importlib\n\n\ndef load():\n    return importlib.import_module('.losses', package='pkg')\n",
])
def test_a_module_a_computed_import_of_its_package_may_bring_in_runs(tmp_path: Path, loader):
    assert _findings(tmp_path, _program(**{"registry.py": loader})) == _hot()


@pytest.mark.parametrize("loader", [
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module('proj.pkg.' + name)\n",
    "def load(name):\n    return __import__('proj.pkg.' + name)\n",
    # the project's own name: any module of it (`name` may be "pkg.losses")
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module('proj.' + name)\n",
    "import importlib\n\n\ndef load(name):\n    return importlib.import_module('..' + name, 'proj.tools')\n",
])
def test_a_package_spelled_under_the_projects_own_name_is_the_projects(tmp_path: Path, loader):
    # Run from the directory above (`python -m proj.train`), the project's `pkg` is `proj.pkg`.
    root = tmp_path / "proj"
    root.mkdir()
    assert _findings(root, _program(**{"registry.py": loader})) == _hot()


_GET_OBJ_FROM_STR = (
    "import importlib\n\n\ndef get_obj_from_str(string):\n    module, cls = string.rsplit('.', 1)\n"
    "    return getattr(importlib.import_module(module, package=None), cls)\n"
)


@pytest.mark.parametrize(("more", "imported"), [
    ({}, False),
    ({"configs/model.yaml": "loss:\n  target: pkg.losses.RankLoss\n"}, True),
    ({"build.py": "from registry import get_obj_from_str\n\n\ndef build(name):\n"
                  "    return get_obj_from_str('pkg.' + name + '.RankLoss')\n"}, True),
], ids=["spelled nowhere", "a config spells the path", "a template of its package"])
def test_a_path_split_in_two_imports_only_a_module_spelled_as_a_path(tmp_path: Path, more, imported):
    # ResShift's `ldm/util.py: get_obj_from_str(config["target"])` imports the module its
    # configs spell; `ldm/modules/quantize.py`, which no config names, never runs.
    files = _program(**{"registry.py": _GET_OBJ_FROM_STR, **more})
    assert _findings(tmp_path, files)[-1:] == (_hot() if imported else _cold())
    assert find_module_loading_in_packages(_GET_OBJ_FROM_STR) == _NO_LOADING


def test_a_file_name_split_in_two_and_imported_may_import_any_module(tmp_path: Path):
    # A plugin loader splits a file's name from its extension (`name, ext =
    # filename.rsplit(".", 1)`) and imports every module of a folder: no member of a path
    # is looked up, so no path's text names what it imports.
    plugins = ("import importlib\nimport os\nimport sys\n\n\ndef load_all(directory):\n"
               "    sys.path.insert(0, directory)\n    for filename in os.listdir(directory):\n"
               "        module, ext = filename.rsplit('.', 1)\n        if ext == 'py':\n"
               "            importlib.import_module(module)\n")
    assert find_module_loading_in_packages(plugins) == ("`import_module`", frozenset())
    assert _findings(tmp_path, _program(imports="import registry", **{"registry.py": plugins}))[-1:] == _hot()


def test_a_module_imported_by_a_name_no_path_split_gave_may_be_any(tmp_path: Path):
    # Beside get_obj_from_str, a loader whose parameter is named like the split's module
    # part (`load_module(module)`) imports whatever its callers pass: not a split path.
    loader = _GET_OBJ_FROM_STR + "\n\ndef load_module(module):\n    return importlib.import_module(module)\n"
    assert find_module_loading_in_packages(loader) == ("`import_module`", frozenset())
    assert _findings(tmp_path, _program(imports="import registry", **{"registry.py": loader}))[-1:] == _hot()


def _shadowed_project(tmp_path: Path, train_extra: str = "", files: dict[str, str] | None = None) -> Path:
    """CCNet's shape: a top-level package ``loss/`` that the script imports, and an older
    ``utils/loss.py`` (imported only by ``utils/criterion.py``, which nothing imports) that
    ``import loss`` would reach only if ``utils/`` were on ``sys.path``."""
    project = tmp_path / "project"
    for folder in ("loss", "utils"):
        (project / folder).mkdir(parents=True)
        (project / folder / "__init__.py").write_text("")
    (project / "loss" / "criterion.py").write_text(
        "import torch\n\n\nclass Criterion(torch.nn.Module):\n    def forward(self, x):\n        return x.sum()\n")
    (project / "utils" / "loss.py").write_text(
        "import torch\n\n\nclass OhemLoss(torch.nn.Module):\n    def forward(self, x):\n        return x.nonzero()\n")
    (project / "utils" / "criterion.py").write_text(
        "from .loss import OhemLoss\n\n\ndef build():\n    return OhemLoss()\n")
    (project / "train.py").write_text(
        f"import torch\nfrom loss.criterion import Criterion\n{train_extra}\n\ndef train(loader):\n"
        "    criterion = Criterion()\n    for batch in loader:\n        criterion(batch.cuda())\n\n\n"
        "if __name__ == '__main__':\n    train([torch.ones(3)])\n")
    for name, text in (files or {}).items():
        (project / name).write_text(text)
    return project


def _reported(project: Path) -> set[tuple[str, str, int]]:
    return {(Path(f.path).relative_to(project).as_posix(), f.code, f.line)
            for f in lint_paths([project], Settings(root=project), RunOptions(jobs=1, use_cache=False))}


def test_a_tail_that_names_another_module_whole_imports_nothing_else(tmp_path: Path):
    # ``from loss.criterion import ...`` names the package ``loss/``; it reaches ``utils/loss.py``
    # only through the tail ``loss``, which Python finds first in the project's directory.
    project = _shadowed_project(tmp_path)
    assert ("utils/loss.py", "SL101", 6) not in _reported(project)
    assert ("train.py", "SL401", 8) in _reported(project)


@pytest.mark.parametrize("files, train_extra", [
    ({}, "import sys\nsys.path.insert(0, 'utils')"),
    ({"run.sh": "PYTHONPATH=utils python train.py\n"}, ""),
    ({"utils/tool.py": "import loss\n\nif __name__ == '__main__':\n    loss.OhemLoss()(None)\n"}, ""),
])
def test_a_shadowed_tail_counts_where_its_directory_may_be_on_the_path(tmp_path: Path, files, train_extra):
    # ``sys.path`` changed in the program, ``PYTHONPATH`` set by a script, or a script beside
    # ``utils/loss.py`` (its directory is ``sys.path[0]``): ``import loss`` may reach it.
    project = _shadowed_project(tmp_path, train_extra, files)
    assert ("utils/loss.py", "SL101", 6) in _reported(project)


@pytest.mark.parametrize("files, train_extra", [
    ({"pytest.ini": "[pytest]\npythonpath = utils\n"}, ""),
    ({"pyproject.toml": "[tool.pytest.ini_options]\npythonpath = [\"utils\"]\n"}, ""),
    ({}, "import site\nsite.addsitedir('utils')"),
])
def test_a_shadowed_tail_counts_where_pytest_or_site_puts_its_directory_on_the_path(
        tmp_path: Path, files, train_extra):
    # pytest's ``pythonpath`` option (lower case) and ``site.addsitedir`` put ``utils/`` on
    # ``sys.path`` too: a test's ``import loss`` may reach ``utils/loss.py``.
    (tmp_path / "project" / "tests").mkdir(parents=True)
    files = {"tests/test_loss.py": "import loss\n\n\ndef test_loss():\n    loss.OhemLoss()(None)\n", **files}
    project = _shadowed_project(tmp_path, train_extra, files)
    assert ("utils/loss.py", "SL101", 6) in _reported(project)


@pytest.mark.parametrize("files", [
    {"tests/conftest.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'utils'))\n"},
    {"tests/test_path.py": "import sys\n\nsys.path.append('utils')\n"},
])
def test_a_shadowed_tail_counts_where_a_test_puts_its_directory_on_the_path(tmp_path: Path, files):
    # A test's imports count (its code runs, under pytest), and so does the ``sys.path`` it
    # (or its ``conftest.py``) changes: ``import loss`` in a test may reach ``utils/loss.py``.
    (tmp_path / "project" / "tests").mkdir(parents=True)
    files = {"tests/test_loss.py": "import loss\n\n\ndef test_loss():\n    loss.OhemLoss()(None)\n", **files}
    project = _shadowed_project(tmp_path, "", files)
    assert ("utils/loss.py", "SL101", 6) in _reported(project)
