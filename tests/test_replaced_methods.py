"""A method of a class built only as a base, which every subclass replaces, never runs
(simple-HRNet's ``Train._train``, replaced by ``COCOTrain._train``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.reflection import builds_its_own_classes
from synclint.runner import RunOptions, lint_paths

BASE = """
    import torch


    class Train:
        def __init__(self, model, loader):
            self.model, self.loader = model, loader

        def run(self):
            for epoch in range(10):
                self._train()

        def _train(self):
            for x in self.loader:
                loss = self.model(x.cuda()).sum()
                print(loss.item())
    """

COCO = """
    import torch
    from training.base import Train


    class COCOTrain(Train):
        \"\"\"Extension of the Train class for COCO.\"\"\"

        def _train(self):
            for x in self.loader:
                loss = self.model(x.cuda()).mean()
                print(loss.item())
    """

SCRIPT = """
    import torch
    from training.coco import COCOTrain


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2


    if __name__ == "__main__":
        COCOTrain(Net(), []).run()
    """

REPLACED = "never runs: `Train` is built only as a base of classes that each replace `_train`"


def _found(tmp_path: Path, **files: str) -> dict[tuple[str, int], tuple[str, str]]:
    texts = {"training/__init__.py": "", "training/base.py": BASE, "training/coco.py": COCO, "train.py": SCRIPT,
             **{name.replace("__", "/"): text for name, text in files.items()}}
    for name, text in texts.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return {(Path(f.path).name, f.line): (f.context, f.why) for f in findings if f.code == "SL201"}


def test_a_method_every_subclass_replaces_of_a_class_built_only_as_a_base_never_runs(tmp_path):
    found = _found(tmp_path)
    assert found[("base.py", 16)] == ("cold", REPLACED)
    assert found[("coco.py", 12)][0] == "hot"
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert sorted((Path(f.path).name, f.line) for f in shown if f.code == "SL201") == [("coco.py", 12)]


@pytest.mark.parametrize(
    "files",
    [
        # The base is built itself: its method runs.
        {"train.py": SCRIPT.replace("COCOTrain(Net(), []).run()",
                                    "COCOTrain(Net(), []).run()\n    Train(Net(), []).run()")
         .replace("from training.coco import COCOTrain", "from training.coco import COCOTrain\nfrom training.base import Train")},
        # A subclass keeps the method: it runs on that subclass's instances.
        {"training__lite.py": "from training.base import Train\n\n\nclass LiteTrain(Train):\n    pass\n"},
        # A page tells users to subclass it (and keep the method).
        {"README.md": "Subclass `Train` and override `loss`.\n"},
        # A lookup by a computed name may build it.
        {"training__registry.py": "import sys\nfrom training import base\n\n\ndef build(name):\n    return getattr(base, name)\n"
                                  "\n\nif __name__ == '__main__':\n    build(sys.argv[1])\n"},
        # An override that runs the base's own method.
        {"training__coco.py": COCO.split("        def _train")[0] + "        def _train(self):\n            super()._train()\n"},
        # A project users install: they may subclass it.
        {"pyproject.toml": "[project]\nname = 'training'\n"},
        # Calls the resolver does not follow to the base's method: a bound super() method held in a name,
        # getattr(super(), ...), the class's bases by reflection, a mixin's super() ahead of the base in the MRO.
        {"training__coco.py": COCO.split("        def _train")[0] + "        def _train(self):\n            step = super()._train\n            step()\n"},
        {"training__coco.py": COCO.split("        def _train")[0]
                              + "        def _train(self):\n            step = super(type(self), self)._train\n            step()\n"},
        {"training__coco.py": COCO.split("        def _train")[0] + "        def _train(self):\n            getattr(super(), '_train')()\n"},
        {"training__coco.py": COCO.split("        def _train")[0] + "        def _train(self):\n            type(self).__bases__[0]._train(self)\n"},
        {"training__coco.py": COCO.split("        def _train")[0] + "        def _train(self):\n            type(self).__mro__[1]._train(self)\n"},
        {"training__coco.py": COCO.split("    class COCOTrain")[0] + "    class Log:\n        def _train(self):\n            print('step')\n"
                              "            return super()._train()\n\n\n    class COCOTrain(Log, Train):\n        pass\n"},
        # A one-line subclass (`class Small(COCOTrain): pass`): its header is not the lines after it.
        {"training__small.py": "from training.coco import COCOTrain\nfrom training.base import Train\n\n\n"
                               "class Small(COCOTrain): pass\nTrain(None, []).run()\n"},
        # A decorator right under the header is the body's, and it builds the base.
        {"training__coco.py": COCO.replace('        \"\"\"Extension of the Train class for COCO.\"\"\"\n\n', "")
         .replace("        def _train", "        @staticmethod\n        @print(Train(None, []).run())\n        def _train")},
        # The base names itself in its own body: `functools.partial(Train._train, self)`, `__class__._train`.
        {"training__base.py": BASE.replace("            for epoch in range(10):\n                self._train()",
                                           "            step = functools.partial(Train._train, self)\n            step()")
         .replace("import torch", "import functools, torch")},
        {"training__base.py": BASE.replace("self._train()", "getattr(__class__, '_train')(self)")},
    ],
    ids=["built itself", "a subclass keeps it", "documentation", "reflection", "super() runs it", "a library",
         "a bound super() method", "a bound super(type(self), self) method", "getattr(super())", "__bases__", "__mro__", "a mixin's super()",
         "a one-line subclass", "a decorator under the header",
         "Train in its own body", "__class__ in its own body"],
)
def test_a_base_method_that_may_run_keeps_its_context(tmp_path, files):
    assert _found(tmp_path, **files)[("base.py", 16)][0] == "hot"


def test_a_base_that_names_itself_only_in_super_still_never_runs_its_replaced_method(tmp_path):
    # `super(Train, self).__init__()` reaches Train's parents, never `Train._train`.
    base = BASE.replace("            self.model, self.loader = model, loader",
                        "            super(Train, self).__init__(); self.model, self.loader = model, loader")
    assert _found(tmp_path, **{"training__base.py": base})[("base.py", 16)] == ("cold", REPLACED)


def test_a_self_call_of_the_replaced_method_reaches_only_the_subclasses(tmp_path):
    # `Train.run` runs every step here: its `self._train()` makes `COCOTrain._train` hot, not `Train._train`.
    hot_run = BASE.replace("def run(self):\n            for epoch in range(10):\n                self._train()",
                           "def run(self):\n            for batch in self.loader:\n                self._train()")
    found = _found(tmp_path, **{"training__base.py": hot_run})
    assert found[("base.py", 16)] == ("cold", REPLACED)


@pytest.mark.parametrize(("source", "builds"), [
    ("class A:\n    def f(self):\n        return locals().items()\n", False),  # simple-HRNet's Train.__init__
    ("def f(**kwargs):\n    return vars()\n", False),
    ("x = locals()[name]\n", True),
    ("if NAME:\n    net = vars()[NAME]()\n", True),
    ("def f(table=vars()):\n    return table\n", True),  # (a default is evaluated at the top)
    ("import fire\n\n\ndef main():\n    fire.Fire()\n", True),  # (the caller's namespace holds the module's functions)
    ("def broken(:\n    locals()\n", True),
    # (a class's keywords and a function's annotations are evaluated at the top too)
    ("class A(metaclass=vars()['Meta']):\n    pass\n", True),
    ("def f(x: locals()['T']) -> vars()['R']:\n    pass\n", True),
])
def test_only_a_namespace_read_outside_functions_may_build_the_files_classes(source, builds):
    assert builds_its_own_classes(source) is builds
