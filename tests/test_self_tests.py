"""The ``__main__`` block of a module other project files import is a self-test: cold,
loops and all, with what only it calls (synclint.project.self_tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.cold_reasons import SELF_TEST, SELF_TEST_HELPER
from synclint.runner import RunOptions, lint_paths

OPTIM = """\
import torch
from torch.utils.data import DataLoader


class Adam(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            pass


def _test_adam():
    device = torch.device("cuda")
    pairs = [(torch.randn(4, device=device), torch.randn(4, device=device)) for _ in range(8)]
    model = torch.nn.Linear(4, 4).to(device)
    for epoch in range(10):
        for n, (x, y) in enumerate(pairs):
            loss = ((model(x) - y) ** 2).mean()
            print(loss.item())


def shared(batch):
    return batch.nonzero()


def evaluate(loader):
    for batch in loader:
        print(batch.cuda().sum().item())


if __name__ == "__main__":
    _test_adam()
    evaluate(DataLoader(range(10)))
    for batch in DataLoader(range(10), batch_size=2):
        batch = batch.cuda()
        print(batch.nonzero())
        shared(batch)
"""

TRAIN = """\
import torch
from pkg.optim import Adam, shared


def main(model, loader):
    opt = Adam(model.parameters(), {})
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        shared(y.cuda())
        print(loss.item())


if __name__ == "__main__":
    main(None, None)
"""


def _contexts(tmp_path: Path, files: dict[str, str | None]) -> dict[tuple[str, int, str], tuple[str, str]]:
    """Context and why of each finding (with cold ones) in a project of ``train.py`` and
    ``pkg/optim.py`` and ``files`` (None: left out)."""
    for name, text in {"pkg/__init__.py": "", "train.py": TRAIN, "pkg/optim.py": OPTIM, **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
    found = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return {(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.code): (f.context, f.why) for f in found}


def test_the_main_block_of_an_imported_package_module_is_a_self_test(tmp_path):
    found = _contexts(tmp_path, {})
    # The block's loop over a DataLoader is the self-test's, not a step.
    assert found[("pkg/optim.py", 34, "SL401")] == ("cold", SELF_TEST)
    assert found[("pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)
    # `_test_adam` only the block calls: its loops are the self-test's too.
    assert found[("pkg/optim.py", 18, "SL201")] == ("cold", SELF_TEST_HELPER)
    # `shared`, which the training step calls too, syncs on its argument: reported at each
    # call, hot in the step, cold in the block.
    assert found[("train.py", 11, "SL101")][0] == "hot"
    assert found[("pkg/optim.py", 36, "SL101")] == ("cold", SELF_TEST)
    # The program's own script is untouched.
    assert found[("train.py", 12, "SL201")][0] == "hot"


@pytest.mark.parametrize(
    "files",
    [
        {"train.py": TRAIN.replace("from pkg.optim import Adam, shared", "import pkg.optim")},
        {"train.py": TRAIN.replace("from pkg.optim import Adam, shared", "from pkg import optim")},
        {"train.py": TRAIN.replace("from pkg.optim import Adam, shared\n", ""),
         "pkg/__init__.py": "from .optim import Adam\n"},
        {"train.py": TRAIN.replace("from pkg.optim import", "from vendor.pkg.optim import")},
    ],
    ids=["import", "from-package", "relative", "longer-path"],
)
def test_any_import_by_its_dotted_name_makes_a_library_module(tmp_path, files):
    found = _contexts(tmp_path, files)
    assert found[("pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)


def test_an_import_by_its_last_name_alone_does_not(tmp_path):
    # `import optim` after a `sys.path` insertion is how scripts import each other.
    found = _contexts(tmp_path, {"train.py": TRAIN.replace("from pkg.optim import Adam, shared", "from optim import Adam")})
    assert _hot_in_block(found)


def _hot_in_block(found) -> bool:
    return found[("pkg/optim.py", 35, "SL101")][0] == "hot"


def test_a_script_no_file_imports_keeps_its_main_block(tmp_path):
    # Without `train.py`'s import, `pkg/optim.py` is a script of its own.
    found = _contexts(tmp_path, {"train.py": TRAIN.replace("from pkg.optim import Adam, shared\n", "")})
    assert _hot_in_block(found)


def test_a_module_of_no_package_keeps_its_main_block(tmp_path):
    # A script beside the others (`from train import parse_args`) is still a script.
    found = _contexts(tmp_path, {"pkg/__init__.py": None})
    assert _hot_in_block(found)


def test_a_module_a_document_says_to_run_keeps_its_main_block(tmp_path):
    found = _contexts(tmp_path, {"README.md": "Smoke test: `python pkg/optim.py`\n"})
    assert _hot_in_block(found)
    found = _contexts(tmp_path, {"README.md": "python -m pkg.optim\n"})
    assert _hot_in_block(found)


def test_a_main_block_that_trains_is_the_program(tmp_path):
    trains = OPTIM.replace("        print(batch.nonzero())\n", "        print(batch.nonzero())\n        batch.sum().backward()\n")
    found = _contexts(tmp_path, {"pkg/optim.py": trains})
    assert _hot_in_block(found)


def test_a_helper_handed_on_as_a_value_keeps_its_loops(tmp_path):
    found = _contexts(tmp_path, {})
    assert found[("pkg/optim.py", 27, "SL201")] == ("cold", SELF_TEST_HELPER)
    # pvcnn stores its module's `evaluate` in a config the trainer calls: it may run every
    # step, and its loop over batches is an inference step.
    config = "from pkg.optim import evaluate\n\nEVALUATE = evaluate\n"
    found = _contexts(tmp_path, {"config.py": config})
    assert found[("pkg/optim.py", 27, "SL201")] == ("hot", "the loop over `loader` in `evaluate`")
    assert found[("pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)


ENTRY = """\
import torch
from torch.utils.data import DataLoader


def build_model():
    return torch.nn.Linear(4, 1).cuda()


class Trainer:
    def fit(self, model, opt, loader):
        for x in loader:
            loss = model(x.cuda().float()[:, None]).sum()
            loss.backward()
            opt.step()
            print(loss.item())


def train(model, opt, loader):
    for x in loader:
        loss = model(x.cuda().float()[:, None]).sum()
        loss.backward()
        opt.step()
        print(loss.item())


def main():
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, DataLoader(range(100), batch_size=4))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("call", ["main()", "Trainer().fit(build_model(), None, [])"])
def test_a_main_block_that_trains_through_its_modules_functions_is_the_program(tmp_path, call):
    # `pkg/entry.py` is the training entry point (`python -m pkg.entry`, run by hand), and
    # `pkg/tune.py` imports a helper from it: its block trains through `main` and `train`
    # (or a class of the module), so the training loop is a step, not a self-test's pass.
    found = _contexts(tmp_path, {"pkg/entry.py": ENTRY.replace("    main()\n", f"    {call}\n"),
                                 "pkg/tune.py": "from pkg.entry import build_model\n"})
    line = 15 if call != "main()" else 23
    assert found[("pkg/entry.py", line, "SL201")][0] == "hot"


def test_an_import_from_a_test_does_not_make_a_library_module(tmp_path):
    # Tests import the script they test (`from pkg.optim import _test_adam`): that says
    # nothing of whether the program imports it.
    found = _contexts(tmp_path, {"train.py": TRAIN.replace("from pkg.optim import Adam, shared\n", ""),
                                 "tests/test_optim.py": "from pkg.optim import shared\n"})
    assert _hot_in_block(found)


@pytest.mark.parametrize("guard", ['__name__ != "__main__"', '__name__ == "__main__" or FORCE'])
def test_a_block_that_runs_on_import_is_no_self_test(tmp_path, guard):
    found = _contexts(tmp_path, {"pkg/optim.py": OPTIM.replace('if __name__ == "__main__":', f"if {guard}:")})
    assert found[("pkg/optim.py", 35, "SL101")][0] != "cold"


def test_a_main_block_that_trains_through_another_modules_function_is_the_program(tmp_path):
    # DeiT's layout in a package: `main` loops over epochs and calls `train_one_epoch`
    # of `pkg/engine.py`, whose loop draws batches and runs a backward pass.
    engine = ENTRY.split("\n\n\ndef main", 1)[0]
    entry = ("import torch\nfrom torch.utils.data import DataLoader\nfrom pkg.engine import build_model, train\n\n\n"
             "def main():\n    model = build_model()\n    for epoch in range(3):\n"
             "        train(model, None, DataLoader(range(8)))\n\n\n"
             'if __name__ == "__main__":\n    main()\n')
    found = _contexts(tmp_path, {"pkg/engine.py": engine, "pkg/entry.py": entry,
                                 "pkg/tune.py": "from pkg.entry import main\n"})
    assert found[("pkg/engine.py", 23, "SL201")][0] == "hot"


@pytest.mark.parametrize(
    "files",
    [
        {"pkg/optim.py": '"""Check the optimizer: python -m pkg.optim"""\n' + OPTIM},
        {"launch.py": 'import subprocess\nimport sys\n\nsubprocess.run([sys.executable, "-m", "pkg.optim"])\n'},
        {"launch.py": 'import os\n\nos.system("python pkg/optim.py --steps 10")\n'},
    ],
    ids=["own-docstring", "launcher-module", "launcher-path"],
)
def test_a_module_a_python_file_says_to_run_keeps_its_main_block(tmp_path, files):
    # Its own usage line, or a launcher that runs it as a process: the block is how it runs.
    found = _contexts(tmp_path, files)
    line = 36 if "pkg/optim.py" in files else 35
    assert found[("pkg/optim.py", line, "SL101")][0] == "hot"


def test_an_import_or_a_test_spelling_the_module_does_not_document_running_it(tmp_path):
    found = _contexts(tmp_path, {"tests/test_optim.py": 'import subprocess\n\nsubprocess.run(["python", "-m", "pkg.optim"])\n'})
    assert found[("pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)


def test_code_that_uses_the_module_by_its_dotted_name_does_not_document_running_it(tmp_path):
    train = TRAIN.replace("from pkg.optim import Adam, shared", "import pkg.optim").replace("Adam(", "pkg.optim.Adam(")
    found = _contexts(tmp_path, {"train.py": train})
    assert found[("pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)


METRICS = """\
import torch


def accuracy(logits, labels):
    return (logits.argmax(-1) == labels).float().mean().item()


if __name__ == "__main__":
    print(accuracy(torch.randn(4, 3).cuda(), torch.zeros(4).cuda()))
"""

ENGINE = """\
from pkg.metrics import accuracy


class Engine:
    def run_batch(self, model, x, y):
        return accuracy(model(x), y)
"""


def test_a_self_tests_call_does_not_make_what_the_program_also_calls_cold(tmp_path):
    # `Engine.run_batch` (a library's API: no project caller) calls `accuracy` too. The
    # self-test's call says nothing of it: its context is what it was without the block.
    library = {"train.py": None, "pkg/optim.py": None, "pkg/metrics.py": METRICS, "pkg/engine.py": ENGINE}
    found = _contexts(tmp_path, library)
    without = _contexts(tmp_path, {**library, "pkg/metrics.py": METRICS.split("\n\nif __name__")[0] + "\n"})
    assert found[("pkg/metrics.py", 5, "SL201")] == without[("pkg/metrics.py", 5, "SL201")]
    assert found[("pkg/metrics.py", 5, "SL201")][0] == "unknown"
    # Where every other caller is cold (a test), the self-test's call does not keep it unknown.
    test = "from pkg.metrics import accuracy\n\n\ndef test_accuracy():\n    accuracy(None, None)\n"
    found = _contexts(tmp_path, {**library, "pkg/engine.py": None, "tests/test_metrics.py": test})
    assert found[("pkg/metrics.py", 5, "SL201")][0] == "cold"


STEP = """\
import torch
from torch.utils.data import DataLoader


def apply_batch(model, opt, x):
    loss = model(x.cuda().float()[:, None]).sum()
    loss.backward()
    opt.step()
    return loss.item()


def main():
    model = torch.nn.Linear(1, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(range(100), batch_size=4):
        print(apply_batch(model, opt, x))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("block", ["    main()\n", "    for x in DataLoader(range(9)):\n        apply_batch(None, None, x)\n"])
def test_a_main_block_whose_loop_calls_a_backward_pass_is_the_program(tmp_path, block):
    # The loop draws batches and a function it calls runs the backward pass (`apply_batch`):
    # the block trains, though no one loop holds both.
    source = STEP.replace("    main()\n", block)
    found = _contexts(tmp_path, {"pkg/step.py": source, "pkg/tune.py": "from pkg.step import apply_batch\n"})
    assert found[("pkg/step.py", 9, "SL201")][0] == "hot"


@pytest.mark.parametrize("readme", ["cd code && python pkg/optim.py\n", "cd code && python -m pkg.optim\n"])
def test_a_document_that_runs_the_module_from_a_folder_below_the_root_keeps_its_main_block(tmp_path, readme):
    # The project's root holds `pyproject.toml`; its code lies in `code/`, where its
    # README runs the module: it spells the module's path inside `code/`, not the root.
    moved = {"pkg/__init__.py": None, "pkg/optim.py": None, "train.py": None, "pyproject.toml": "",
             "code/pkg/__init__.py": "", "code/pkg/optim.py": OPTIM, "code/train.py": TRAIN}
    assert _contexts(tmp_path, moved)[("code/pkg/optim.py", 35, "SL101")] == ("cold", SELF_TEST)
    found = _contexts(tmp_path, {**moved, "README.md": readme})
    assert found[("code/pkg/optim.py", 35, "SL101")][0] == "hot"


def test_a_self_test_that_backpropagates_on_its_own_pairs_stays_a_self_test(tmp_path):
    # vall-e's `_test_scaled_adam` runs `loss.backward()` over random (x, y) pairs: a loop
    # over its own items, not one that draws batches; the block's `evaluate` draws from a
    # loader but runs no backward pass. Neither trains.
    optim = OPTIM.replace("            print(loss.item())\n", "            loss.backward()\n            print(loss.item())\n", 1)
    found = _contexts(tmp_path, {"pkg/optim.py": optim})
    assert found[("pkg/optim.py", 36, "SL101")] == ("cold", SELF_TEST)
    assert found[("pkg/optim.py", 19, "SL201")] == ("cold", SELF_TEST_HELPER)
