"""A method that loops over batches and that nothing in the project names never runs
(continual-learning's ``Encoder.train_discriminatively``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

MODELS = """
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def forward(self, x):
            return x * 2

        def train_discriminatively(self, train_loader):
            for data, y in train_loader:
                data = data.to("cuda")
                loss = self(data).sum()
                print(loss.item())

        def fit(self, train_loader):
            for data, y in train_loader:
                data = data.to("cuda")
                loss = self(data).sum()
                print(loss.item())
    """

MAIN = """
    import torch
    from models import Encoder


    def main(loader):
        model = Encoder().cuda()
        model.fit(loader)


    if __name__ == "__main__":
        main(torch.utils.data.DataLoader([]))
    """

NEVER_NAMED = "not reached from any step of the project: nothing in the project names `Encoder.train_discriminatively`"


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _found(tmp_path: Path, include_cold: bool = True, **extra: str) -> dict[int, tuple[str, str]]:
    files = {"models.py": MODELS, "main.py": MAIN, **{name.replace("__", "/"): text for name, text in extra.items()}}
    _write(tmp_path, files)
    findings = lint_paths([tmp_path], Settings(root=tmp_path),
                          RunOptions(jobs=1, use_cache=False, include_cold=include_cold))
    return {f.line: (f.context, f.why) for f in findings if f.path.endswith("models.py") and f.code == "SL201"}


def test_a_method_nothing_names_is_unreached_and_hidden(tmp_path):
    found = _found(tmp_path)
    assert found[14] == ("unknown", NEVER_NAMED)
    assert found[20] == ("hot", "the loop over `train_loader` in `Encoder.fit`")
    assert sorted(_found(tmp_path, include_cold=False)) == [20]


@pytest.mark.parametrize(
    "extra",
    [
        {"run.py": "def run(model, loader):\n    model.train_discriminatively(loader)\n"},
        {"configs__train.yaml": "method: train_discriminatively\n"},
        {"scripts__pretrain.sh": "python main.py --how train_discriminatively\n"},
        {"README.md": "Call `model.train_discriminatively(loader)` to pretrain.\n"},
        {"run.py": "def run(model, loader, how):\n    getattr(model, 'train_' + how)(loader)\n"},
        {"run.py": "def run(model, loader, how):\n    getattr(model, f'train_{how}')(loader)\n"},
        {"run.py": "def run(model, loader, how):\n    name = '%s_discriminatively' % how\n    getattr(model, name)(loader)\n"},
        {"run.py": "def run(model, loader):\n    for name in dir(model):\n        getattr(model, name)\n"},
        {"run.py": "def run(model, loader):\n    for cls in object.__subclasses__():\n        pass\n"},
        {"run.py": "def run(model, loader, how):\n    eval(f'model.train_{how}(loader)')\n"},
        {"run.py": "def run(model, loader, how):\n    exec('model.train_' + how + '(loader)')\n"},
        {"run.py": "def run(model, loader, how):\n    model.__getattribute__(f'train_{how}')(loader)\n"},
        {"run.py": "import inspect\n\n\ndef run(model, loader, how):\n"
                   "    inspect.getattr_static(model, 'train_' + how)(model, loader)\n"},
        {"run.py": "import inspect\n\n\ndef run(model, loader, how):\n"
                   "    for name, method in inspect.getmembers(model):\n        if name.startswith('train_'):\n"
                   "            method(loader)\n"},
        {"run.py": "def run(model, loader, how):\n    for name, method in vars(type(model)).items():\n"
                   "        if name.startswith('train_'):\n            method(model, loader)\n"},
        {"run.py": "def run(model, loader, how):\n    for name, method in type(model).__dict__.items():\n"
                   "        if name.startswith('train_'):\n            method(model, loader)\n"},
    ],
    ids=["a call", "a configuration file", "a script", "documentation", "a joined name", "an f-string name",
         "a formatted name looked up elsewhere", "a listing of members", "reflection", "eval of a template",
         "exec of a joined call", "__getattribute__", "inspect.getattr_static", "inspect.getmembers' methods",
         "vars of a class", "a class's __dict__"],
)
def test_a_method_the_project_names_or_may_reach_keeps_its_context(tmp_path, extra):
    if "run.py" in extra:  # (a script: a module nothing imports and that is none never runs)
        extra = {"run.py": extra["run.py"] + "\n\nif __name__ == '__main__':\n    run(None, None, 'x')\n"}
    assert _found(tmp_path, **extra)[14][0] == "hot"


@pytest.mark.parametrize(
    "extra",
    [
        {"run.py": "# model.train_discriminatively(loader) is too slow\n"},
        {"run.py": "def log(key, value):\n    print(f'train/{key}', value)\n\n\ndef get(args, key):\n    return getattr(args, key)\n"},
        {"run.py": "def label(a, b, c):\n    return '{}_{}c{}'.format(a, b, c)\n\n\ndef get(args, key):\n    return getattr(args, key)\n"},
        {"run.py": "def evaluate(model, how):\n    model.eval()\n    print(f'train_{how}')\n\n\n"
                   "if __name__ == '__main__':\n    evaluate(None, 'x')\n"},
    ],
    ids=["a comment", "a template that builds no name", "a template of fills and a letter",
         "a template beside model.eval(), no lookup"],
)
def test_what_cannot_call_it_leaves_it_unreached(tmp_path, extra):
    assert _found(tmp_path, **extra)[14] == ("unknown", NEVER_NAMED)


def test_a_method_a_framework_may_call_keeps_its_context(tmp_path):
    lightning = MODELS.replace("from torch import nn", "from torch import nn\n    import lightning as L").replace(
        "class Encoder(nn.Module)", "class Encoder(L.LightningModule)")
    assert _found(tmp_path, **{"models.py": lightning})[15][0] == "hot"


def test_a_project_users_install_keeps_its_methods_context(tmp_path):
    found = _found(tmp_path, **{"pyproject.toml": "[project]\nname = 'fe'\n"})
    assert found[14][0] == "hot"


def test_a_decorated_method_may_be_registered(tmp_path):
    decorated = MODELS.replace("        def train_discriminatively", "        @hooks.register\n        def train_discriminatively")
    assert _found(tmp_path, **{"models.py": decorated})[15][0] == "hot"


def test_a_method_only_its_own_body_names_is_unreached(tmp_path):
    recursive = MODELS.replace("print(loss.item())\n\n", "print(loss.item())\n            self.train_discriminatively(train_loader)\n\n", 1)
    assert _found(tmp_path, **{"models.py": recursive})[14] == ("unknown", NEVER_NAMED)


def test_a_data_pipeline_method_nothing_names_starts_no_pipeline(tmp_path):
    # Every method of a class named like a feature extractor is the data pipeline's (an
    # image processor's); one nothing names is no root of it either (continual-learning's).
    models = MODELS.replace("Encoder", "FeatureExtractor")
    main = textwrap.dedent(MAIN).replace("Encoder", "FeatureExtractor").replace("model.fit(loader)", "model.fit(loader)\n    Head()(loader)")
    main += "\n\nclass Head(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    found = _found(tmp_path, **{"models.py": models, "main.py": main})
    assert found[14] == ("unknown", NEVER_NAMED.replace("Encoder", "FeatureExtractor"))


def test_a_method_another_candidate_calls_runs_when_that_one_does(tmp_path):
    # `fit` loops over batches too (a candidate), and main calls it: what it calls each
    # epoch runs, though only a candidate's body spells its name.
    calls = MODELS.rstrip() + "\n            self.train_discriminatively(train_loader)\n"
    found = _found(tmp_path, **{"models.py": calls})
    assert found[14][0] == "hot"



@pytest.mark.parametrize("cli", ["import fire\n\n\nif __name__ == '__main__':\n    fire.Fire(Encoder)\n",
                                 "from jsonargparse import CLI\n\n\nif __name__ == '__main__':\n    CLI(Encoder)\n"],
                         ids=["fire", "jsonargparse"])
def test_a_class_handed_to_a_command_line_may_run_any_method(tmp_path, cli):
    # `fire.Fire(Encoder)`: `python main.py train_discriminatively` runs the method, a
    # command line the project need not spell.
    main = textwrap.dedent(MAIN).split("\n\nif __name__")[0] + "\n" + cli
    assert _found(tmp_path, **{"main.py": main})[14][0] == "hot"


def test_a_method_a_framework_subclass_inherits_keeps_its_context(tmp_path):
    # A mixin of the project's own whose subclass is a framework's: Hugging Face's
    # `Trainer.evaluate` calls `self.evaluation_loop(...)`, the mixin's, by its name.
    mixin = textwrap.dedent(MODELS).replace("train_discriminatively", "evaluation_loop")
    mixin += "\n\nclass EvalTrainer(Encoder, transformers.Trainer):\n    pass\n"
    mixin = mixin.replace("import torch\n", "import torch\nimport transformers\n", 1)
    main = textwrap.dedent(MAIN).replace("from models import Encoder", "from models import Encoder, EvalTrainer")
    main = main.replace("model.fit(loader)", "model.fit(loader)\n    EvalTrainer().evaluate()")
    assert _found(tmp_path, **{"models.py": mixin, "main.py": main})[15][0] == "hot"


@pytest.mark.parametrize("bases", ["*MIXINS, nn.Module", "base_class()"], ids=["unpacked", "called"])
def test_a_class_whose_base_is_no_name_may_be_a_frameworks(tmp_path, bases):
    # A base the text cannot name (`*MIXINS`, `base_class()`) may be Lightning's: its
    # methods may be the framework's to call.
    lightning = MODELS.replace("from torch import nn", "from torch import nn\n    import lightning as L").replace(
        "class Encoder(nn.Module)", "MIXINS = (L.LightningModule,)\n\n\n    def base_class():\n"
        "        return L.LightningModule\n\n\n    class Encoder(" + bases + ")")
    found = _found(tmp_path, **{"models.py": lightning})
    assert found[min(found)][0] == "hot"
