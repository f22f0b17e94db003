"""SL402 only where pinning can matter: a project that asks for an asynchronous copy.

A blocking copy (``x.to(device)``, ``x.cuda()``) waits for the device whether its source is
pinned or not (PyTorch's ``copy_`` synchronises the stream after it), so an unpinned loader
in a project whose copies all block adds no wait of its own: SL401 reports the copies.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.cli import cli
from synclint.config import Settings
from synclint.engine import check_source
from synclint.fixers import fix_source
from synclint.project.summary import summarize
from synclint.rules.sl402_unpinned_loader import LEAVES, SETUP
from synclint.runner import RunOptions, lint_paths
from tests.notebook_helpers import notebook_of

BLOCKING = "every copy in the project blocks (none asks for `non_blocking=True`): each waits, pinned or not"

LOADER = """\
import torch
from torch.utils.data import DataLoader


def make_loader(ds):
    return DataLoader(ds, batch_size=8)


DEVICE = "cuda"
"""

TRAIN = """\
from pkg.data import make_loader


def train(model, ds, device):
    for x, y in make_loader(ds):
        x, y = x.to(device), y.to(device{copy})
        model(x, y).backward()
"""


def _project(tmp_path: Path, copy: str = "", extra: dict[str, str] | None = None) -> Path:
    files = {"pyproject.toml": "[project]\nname = 'pkg'\n", "pkg/__init__.py": "", "pkg/data.py": LOADER,
             "pkg/train.py": TRAIN.format(copy=copy), **(extra or {})}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _sl402(root: Path, include_cold: bool = True) -> list[tuple[str, int, int, str, str]]:
    findings = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False, include_cold=include_cold))
    return [(Path(f.path).relative_to(root).as_posix(), f.line, f.column, f.context, f.why)
            for f in findings if f.code == "SL402"]


def test_a_loader_whose_project_copies_only_blocking_is_cold(tmp_path):
    root = _project(tmp_path)
    assert _sl402(root) == [("pkg/data.py", 6, 12, "cold", BLOCKING)]
    assert _sl402(root, include_cold=False) == []
    # The waits themselves are reported where they happen.
    findings = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False))
    assert {(f.line, f.code) for f in findings if f.path.endswith("train.py")} == {(6, "SL401")}


@pytest.mark.parametrize(
    ("copy", "shown"),
    [
        (", non_blocking=True", True),
        (", non_blocking=args.async_copy", True),  # may be true
        (", non_blocking=False", False),
        (", False", False),  # positional: `to(device, dtype)` in the other order is not asked for
    ],
)
def test_a_copy_that_asks_to_be_asynchronous_anywhere_shows_the_loader(tmp_path, copy, shown):
    root = _project(tmp_path, copy=copy.replace("args.", ""))
    expected = ("pkg/data.py", 6, 12, "cold", LEAVES) if shown else ("pkg/data.py", 6, 12, "cold", BLOCKING)
    assert _sl402(root) == [expected]


@pytest.mark.parametrize("module", ["pytorch_lightning", "lightning.pytorch", "lightning_fabric", "composer.trainer"])
def test_a_trainer_that_copies_batches_asynchronously_shows_the_loader(tmp_path, module):
    # Lightning's move_data_to_device and Composer's DeviceGPU pass non_blocking=True themselves.
    extra = {"pkg/fit.py": f"import {module} as trainer_lib\n\n\ndef fit(model, loader):\n    return trainer_lib\n"}
    assert _sl402(_project(tmp_path, extra=extra)) == [("pkg/data.py", 6, 12, "cold", LEAVES)]


def test_a_relative_import_named_like_a_trainer_is_not_one(tmp_path):
    extra = {"pkg/lightning.py": "", "pkg/fit.py": "from . import lightning\n"}
    assert _sl402(_project(tmp_path, extra=extra)) == [("pkg/data.py", 6, 12, "cold", BLOCKING)]


def test_a_file_python_cannot_parse_still_counts_by_its_text(tmp_path):
    # A Python 2 script is common in research repositories: one that asks for asynchronous
    # copies counts; one that does not, does not switch the analysis off.
    quiet = _project(tmp_path / "a", extra={"tools/old.py": "print 'hello'\n"})
    assert _sl402(quiet) == [("pkg/data.py", 6, 12, "cold", BLOCKING)]
    asks = _project(tmp_path / "b", extra={"tools/old.py": "print 'x'\ny = x.cuda(non_blocking=True)\n"})
    assert _sl402(asks) == [("pkg/data.py", 6, 12, "cold", LEAVES)]


@pytest.mark.parametrize(
    ("copy", "shown"),
    [
        ("y = x.cuda(async=True)", True),  # PyTorch before 0.4 spelled non_blocking `async`
        ("y = x.cuda(non_blocking = flag)", True),
        ("y = x.cuda(non_blocking=False)", False),
        ("# no non_blocking here", False),
    ],
)
def test_an_unparsed_file_asks_by_the_keyword_its_text_spells(tmp_path, copy, shown):
    root = _project(tmp_path, extra={"tools/old.py": f"print 'x'\n{copy}\n"})
    assert _sl402(root) == [("pkg/data.py", 6, 12, "cold", LEAVES) if shown else ("pkg/data.py", 6, 12, "cold", BLOCKING)]


@pytest.mark.parametrize(
    ("cells", "shown"),
    [
        (["from pkg.data import make_loader", "for x in make_loader(ds):\n    x = x.cuda(non_blocking=True)"], True),
        (["%matplotlib inline\nimport pytorch_lightning as pl", "pl.Trainer().fit(model)"], True),
        (["!pip install torch\nfor x in loader:\n    x = x.cuda(non_blocking=True)"], True),  # a shell line: text
        (["for x in loader:\n    x = x.cuda()"], False),
    ],
)
def test_a_notebook_of_the_project_asks_for_asynchronous_copies_too(tmp_path, cells, shown):
    # The training loop of many research projects lives in a notebook that imports the
    # project's loaders: its copies are the loaders' copies.
    root = _project(tmp_path, extra={"train.ipynb": notebook_of(*cells)})
    assert _sl402(root) == [("pkg/data.py", 6, 12, "cold", LEAVES) if shown else ("pkg/data.py", 6, 12, "cold", BLOCKING)]


def test_a_notebook_markdown_cell_asks_for_nothing(tmp_path):
    document = json.loads(notebook_of("import torch"))
    document["cells"].append({"cell_type": "markdown", "metadata": {}, "source": ["Use `x.cuda(non_blocking=True)`."]})
    root = _project(tmp_path, extra={"train.ipynb": json.dumps(document)})
    assert _sl402(root) == [("pkg/data.py", 6, 12, "cold", BLOCKING)]


def _cached_reasons(root: Path, cache_dir: Path, paths: list[Path] | None = None) -> list[tuple[int | None, int, str]]:
    """SL402's findings with their reasons, served by the results cache where it can."""
    findings = lint_paths(paths or [root], Settings(root=root),
                          RunOptions(jobs=1, use_cache=True, cache_dir=cache_dir, include_cold=True))
    return [(f.cell, f.line, f.why) for f in findings if f.code == "SL402"]


def test_an_edited_notebook_rechecks_the_loader_file(tmp_path):
    root = _project(tmp_path, extra={"train.ipynb": notebook_of("x = x.cuda()")})
    assert _cached_reasons(root, tmp_path / ".cache") == [(None, 6, BLOCKING)]
    (root / "train.ipynb").write_text(notebook_of("x = x.cuda(non_blocking=True)"))
    assert _cached_reasons(root, tmp_path / ".cache") == [(None, 6, LEAVES)]


def test_code_outside_the_program_keeps_its_own_reason(tmp_path):
    extra = {"tests/test_data.py": "from torch.utils.data import DataLoader\n\n\ndef test_it(ds):\n"
                                   "    return DataLoader(ds).cuda\n"}
    found = _sl402(_project(tmp_path, extra=extra))
    assert ("tests/test_data.py", 5, 12, "cold", "test code") in found


def test_a_new_asynchronous_copy_elsewhere_rechecks_the_loader_file(tmp_path):
    # The loader's file did not change, but its facts did: the results cache must not
    # serve the old (cold) finding.
    root = _project(tmp_path)
    assert _cached_reasons(root, tmp_path / ".cache") == [(None, 6, BLOCKING)]
    (root / "pkg" / "train.py").write_text(TRAIN.format(copy=", non_blocking=True"))
    assert _cached_reasons(root, tmp_path / ".cache") == [(None, 6, LEAVES)]


def test_a_source_on_its_own_is_its_own_project():
    blocking = "from torch.utils.data import DataLoader\nl = DataLoader(ds)\nfor x in l:\n    x = x.cuda()\n"
    found = [(f.line, f.context, f.why) for f in check_source(blocking, "t.py", include_cold=True) if f.code == "SL402"]
    assert found == [(2, "cold", BLOCKING)]
    asks = blocking.replace("x.cuda()", "x.cuda(non_blocking=True)")
    # The copy that asks not to block is where the host waits (below); the loader's line runs once.
    assert [(f.line, f.context) for f in check_source(asks, "t.py") if f.code == "SL402"] == [(4, "hot")]
    asks_elsewhere = blocking + "y = z.cuda(non_blocking=True)\n"
    assert [f for f in check_source(asks_elsewhere, "t.py") if f.code == "SL402"] == []
    assert [(f.line, f.context, f.why) for f in check_source(asks_elsewhere, "t.py", include_cold=True)
            if f.code == "SL402"] == [(2, "cold", LEAVES)]


# ---------------------------------------------------------------------------------------
# An unpinned loader's batches copied with `non_blocking=True`: reported at each such copy,
# the line that runs every step and waits; the loader's own line is cold.

COPIED = """\
import torch
from torch.utils.data import DataLoader


def train(ds, model, device):
    loader = DataLoader(ds, batch_size=4)
    for epoch in range(10):
        for i, (x, y) in enumerate(tqdm(loader)):
            x = x.to(device, non_blocking=True)
            y = y.cuda(non_blocking=True)
            model(x, y)
"""

COPIED_WHY = "its batches are copied with `non_blocking=True` where it is iterated: each such copy waits, and is reported there"


def _sl402_of(source: str) -> list[tuple[int, int, str, str]]:
    return [(f.line, f.column, f.context, f.why) for f in check_source(source, "t.py", include_cold=True)
            if f.code == "SL402"]


def _only_the_loader_is_reported(source: str, line: int) -> None:
    """No copy is taken for one of the loader's: its own line is the one finding, for a
    reason of its own."""
    found = _sl402_of(source)
    assert [found_line for found_line, _, _, _ in found] == [line]
    assert found[0][3] != COPIED_WHY


def test_asynchronous_copies_of_an_unpinned_loader_s_batches_are_reported_where_they_wait():
    found = _sl402_of(COPIED)
    assert [(line, column, context) for line, column, context, _ in found] == [
        (6, 14, "cold"), (9, 17, "hot"), (10, 17, "hot")]
    assert found[0][3] == COPIED_WHY
    (copy,) = [f for f in check_source(COPIED, "t.py") if f.code == "SL402" and f.line == 9]
    assert copy.message.startswith("`non_blocking=True` copy of a batch of `loader`, which does not pin memory")
    # The fix pins the loader, once, whichever finding it comes from.
    fixed = fix_source(COPIED, settings=Settings(select=("SL402",)))
    assert fixed == COPIED.replace("DataLoader(ds, batch_size=4)", "DataLoader(ds, batch_size=4, pin_memory=True)")
    assert _sl402_of(fixed) == []


@pytest.mark.parametrize(
    ("loop", "line"),
    [
        ("for x, y in loader:\n        x = x.cuda(non_blocking=True)", 8),
        ("it = iter(loader)\n    for x, y in it:\n        x = x.cuda(non_blocking=True)", 9),
        ("pbar = tqdm(enumerate(loader))\n    for i, batch in pbar:\n        img = batch['img'].to(d, non_blocking=True)", 9),
        ("with tqdm(loader) as bar:\n        for batch in bar:\n            x, y = batch\n            y = y.cuda(0, True)", 10),
        ("for batch in loader:\n        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}", 8),
        ("for batch in loader:\n        for k, v in batch.items():\n            batch[k] = v.to(d, non_blocking=True)", 9),
        ("for x, y in loader:\n        buf.copy_(x, non_blocking=True)", 8),
        ("for x, y in loader:\n        x = x.cuda(non_blocking=args.async_copy)", 8),
        # What a helper returns of a host batch is host data too (as SL401 reads it).
        ("for x, y in loader:\n        x = helper(x)\n        x = x.cuda(non_blocking=True)", 9),
    ],
)
def test_the_forms_of_an_asynchronous_copy_of_a_batch(loop, line):
    source = f"import torch\nfrom torch.utils.data import DataLoader\n\n\ndef run(ds, d='cuda'):\n    loader = DataLoader(ds)\n    {loop}\n"
    found = _sl402_of(source)
    # (A loop over a name a `with` binds is no loop over batches the index knows of: unknown.)
    assert [(l, c) for l, _, c, _ in found] == [(6, "cold"), (line, "unknown" if "with" in loop else "hot")]


@pytest.mark.parametrize(
    "loop",
    [
        "for x, y in loader:\n        x = x.cuda()",  # blocking: SL401's (it waits pinned or not)
        "for x, y in loader:\n        x = x.cuda(non_blocking=False)",
        "for x, y in loader:\n        model.cuda(non_blocking=True)",  # not a batch
        "for x, y in loader:\n        def up(t):\n            return x.cuda(non_blocking=True)",  # another scope
        "for x, y in other:\n        x = x.cuda(non_blocking=True)",  # another loader's
    ],
)
def test_what_is_no_asynchronous_copy_of_the_loader_s_batches(loop):
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef run(ds, d, model, other, helper):\n"
              f"    loader = DataLoader(ds)\n    {loop}\n")
    _only_the_loader_is_reported(source, 6)


def test_a_batch_copied_once_is_a_device_tensor_afterwards():
    source = COPIED.replace("            model(x, y)\n", "            z = x.to(device, non_blocking=True)\n            model(z, y)\n")
    assert [line for line, _, _, _ in _sl402_of(source)] == [6, 9, 10]


def test_a_pinned_loader_s_copies_are_not_reported():
    assert _sl402_of(COPIED.replace("batch_size=4)", "batch_size=4, pin_memory=True)")) == []


def test_a_loader_held_by_a_class_attribute_is_no_local():
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\nclass Data:\n    loader = DataLoader(ds)\n\n\n"
              "loader = make()\nfor x in loader:\n    x = x.cuda(non_blocking=True)\n")
    found = _sl402_of(source)
    assert [(line, context, why) for line, _, context, why in found] == [(6, "cold", LEAVES)]


# Review of 1d9ef24: copies that are not copies of this loader's batches.

_RUN = "import torch\nfrom torch.utils.data import DataLoader\n\n\ndef run(ds, val, other, model, accelerator):\n"


@pytest.mark.parametrize(
    "body",
    [
        # The loader's name rebound before the loop: the loop iterates something else.
        "    loader = DataLoader(ds)\n    loader = accelerator.prepare(loader)\n    for x, y in loader:\n"
        "        x = x.cuda(non_blocking=True)\n",
        # A name bound to an iterator over the loader, then to one over something else.
        "    loader = DataLoader(ds)\n    it = iter(loader)\n    it = iter(other)\n    for x in it:\n"
        "        x = x.cuda(non_blocking=True)\n",
        # zip: what the loop target takes from the other iterable is not the loader's.
        "    loader = DataLoader(ds)\n    for (x, y), (u, v) in zip(loader, other):\n        u = u.cuda(non_blocking=True)\n",
        "    loader = DataLoader(ds)\n    for a, b in zip(other, loader):\n        a = a.cuda(non_blocking=True)\n",
        # A batch name rebound to something unrelated before the copy.
        "    loader = DataLoader(ds)\n    for batch in loader:\n        batch = next(other)\n"
        "        batch = batch.cuda(non_blocking=True)\n",
        "    loader = DataLoader(ds)\n    for x in loader:\n        for x in other:\n            x = x.cuda(non_blocking=True)\n",
        # A comprehension's own variable, named like the batch, over something else.
        "    loader = DataLoader(ds)\n    for x in loader:\n        ys = [x.cuda(non_blocking=True) for x in other]\n",
    ],
)
def test_copies_of_what_is_not_the_loader_s_batch_are_not_its_copies(body):
    _only_the_loader_is_reported(_RUN + body, 6)


def test_two_loaders_bound_to_one_name_do_not_share_copies():
    # The second loader (pinned) is iterated by the second loop: its copy does not wait.
    source = (_RUN + "    loader = DataLoader(ds)\n    for x, y in loader:\n        x = x.cuda()\n"
              "    loader = DataLoader(val, pin_memory=True)\n    for x, y in loader:\n        x = x.cuda(non_blocking=True)\n")
    assert [line for line, _, _, _ in _sl402_of(source)] == [6]
    # Both unpinned: no copy's fix may pin a loader its loop does not iterate.
    both = source.replace("DataLoader(val, pin_memory=True)", "DataLoader(val)").replace("x.cuda()", "x.cuda(non_blocking=True)")
    for finding in check_source(both, "t.py", include_cold=True):
        if finding.code == "SL402" and finding.message.startswith("`non_blocking=True` copy"):
            pytest.fail(f"copy at line {finding.line} attributed to one of two loaders named `loader`")


def test_a_zip_s_loader_part_is_still_followed():
    source = _RUN + "    loader = DataLoader(ds)\n    for (x, y), z in zip(loader, other):\n        x = x.cuda(non_blocking=True)\n"
    assert [(line, context) for line, _, context, _ in _sl402_of(source)] == [(6, "cold"), (8, "hot")]


def test_a_one_off_pass_s_copies_stay_cold():
    # At 1970b90 a one-off pass in `__init__` was cold; its copies run once too.
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\nclass Norm:\n    def __init__(self, ds):\n"
              "        for x in DataLoader(ds):\n            x = x.cuda(non_blocking=True)\n")
    found = _sl402_of(source)
    assert [context for _, _, context, _ in found] == ["cold"] * len(found)
    assert check_source(source, "t.py") == [] or all(f.code != "SL402" for f in check_source(source, "t.py"))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x.to(d, non_blocking=True)\n", True),
        ("x.copy_(y, non_blocking=flag)\n", True),
        ("f(**{'non_blocking': True})\n", True),  # a keyword spelled as a dictionary's key
        ("options = dict(device=d, non_blocking=flag)\n", True),
        ("options = {'non_blocking': False}\n", False),
        ("x.cuda(0, True)\n", True),  # Tensor.cuda(device, non_blocking)
        ("x.to(d, None, True)\n", True),  # Tensor.to(device, dtype, non_blocking)
        ("x.to(torch.device('cuda', rank), None, True)\n", True),
        ("x.to(torch.half, True)\n", True),  # Tensor.to(dtype, non_blocking)
        ("y.copy_(x, True)\n", True),  # Tensor.copy_(src, non_blocking)
        ("x.to(d, torch.half)\n", False),
        ("x.cuda(0)\n", False),
        ("f(a, True)\n", False),
        ("x.to(d, non_blocking=False)\n", False),
        ("# non_blocking=True in a comment\nx.to(d)\n", False),
        ("s = 'non_blocking=True'\n", False),
        ("def f(non_blocking=True):\n    pass\n", False),  # a parameter's default is no copy
        ("import pytorch_lightning as pl\n", True),
        ("from lightning.pytorch import Trainer\n", True),
        ("from composer import Trainer\n", True),
        ("import lightgbm\n", False),
        ("import torchtnt.framework as tnt\n", True),  # AutoUnit prefetches batches on a side stream
        ("from catalyst import dl\n", True),  # its runners move batches with any2device
        ("from timm.data import PrefetchLoader\n", True),
        ("import timm\nloader = timm.data.PrefetchLoader(loader)\n", True),
        ("import timm\nmodel = timm.create_model('resnet50')\n", False),
        ("from mmcv.parallel import MMDataParallel\n", True),  # scatters host batches on a side stream
        ("import mmcv\nmodel = mmcv.parallel.MMDistributedDataParallel(model)\n", True),
        ("import mmcv\nimage = mmcv.imread(path)\n", False),
    ],
)
def test_what_counts_as_asking_for_an_asynchronous_copy(source, expected):
    assert summarize(source).copies_asynchronously is expected


@pytest.mark.parametrize(("copy", "why"), [(", non_blocking=True", LEAVES), ("", BLOCKING)])
def test_a_checked_notebook_asks_its_project_whether_copies_are_asynchronous(tmp_path, copy, why):
    # The notebook builds the loader; the project's training function copies its batches.
    cells = ["from torch.utils.data import DataLoader\nfrom pkg.train import train",
             "loader = DataLoader(ds)\ntrain(model, loader, 'cuda')"]
    root = _project(tmp_path, copy=copy, extra={"explore.ipynb": notebook_of(*cells)})
    findings = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(f.cell, f.line, f.context, f.why) for f in findings
            if f.code == "SL402" and f.path.endswith(".ipynb")] == [(2, 1, "cold", why)]


def test_a_notebook_result_is_rechecked_when_its_project_starts_copying_asynchronously(tmp_path):
    cells = ["from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nx = 'cuda'"]
    root = _project(tmp_path, extra={"explore.ipynb": notebook_of(*cells)})
    notebook = [root / "explore.ipynb"]
    assert _cached_reasons(root, tmp_path / ".cache", notebook) == [(1, 2, BLOCKING)]
    (root / "pkg" / "train.py").write_text(TRAIN.format(copy=", non_blocking=True"))
    assert _cached_reasons(root, tmp_path / ".cache", notebook) == [(1, 2, LEAVES)]


@pytest.mark.parametrize("notebook", [False, True])
def test_fix_pins_a_loader_whose_batches_another_file_copies_asynchronously(tmp_path, notebook):
    # The loader's line is cold (it runs once; the copies that wait are in another file),
    # but `check --include-cold` shows it as fixable, so `--fix` with it must fix it: the
    # fixer asks the project too, not the loader's file on its own.
    cells = ["from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nx = 'cuda'"]
    root = _project(tmp_path, copy=", non_blocking=True", extra={"explore.ipynb": notebook_of(*cells)})
    target = root / ("explore.ipynb" if notebook else "pkg/data.py")
    result = CliRunner().invoke(cli, ["check", str(target), "--fix", "--include-cold", "--no-cache"])
    assert "1 fixed, 0 remaining" in result.output, result.output
    expected = "DataLoader(ds, pin_memory=True)" if notebook else "DataLoader(ds, batch_size=8, pin_memory=True)"
    assert expected in target.read_text()


def test_fix_fixes_what_each_mode_of_check_shows(tmp_path):
    # `fix` and `check --fix` fix the findings `check` shows: the cold ones only with
    # --include-cold (before, `check --include-cold` marked them [*] and `--fix` skipped them).
    root = _project(tmp_path, copy=", non_blocking=True")
    target = root / "pkg" / "data.py"
    assert CliRunner().invoke(cli, ["fix", str(target), "--no-cache"]).output == ""
    shown = CliRunner().invoke(cli, ["fix", str(target), "--include-cold", "--no-cache"])
    assert "+    return DataLoader(ds, batch_size=8, pin_memory=True)" in shown.output
    listed = CliRunner().invoke(cli, ["check", str(target), "--include-cold", "--no-cache"])
    assert "[*] 1 fixable with `synclint check --fix --include-cold`." in listed.output
    result = CliRunner().invoke(cli, ["check", str(target), "--fix", "--no-cache"])
    assert result.exit_code == 0 and "pin_memory" not in target.read_text()
    applied = CliRunner().invoke(cli, ["fix", "--apply", "--include-cold", str(target), "--no-cache"])
    assert applied.exit_code == 0, applied.output
    assert "DataLoader(ds, batch_size=8, pin_memory=True)" in target.read_text()


def test_stdin_is_checked_and_fixed_as_include_cold_says():
    source = "from torch.utils.data import DataLoader\nl = DataLoader(ds)\nfor x in l:\n    x = x.cuda()\n"
    def sl402(*flags: str) -> list[tuple[int, str]]:
        found = CliRunner().invoke(cli, ["check", "-", "--output-format", "json", *flags], input=source)
        return [(f["line"], f["why"]) for f in json.loads(found.output) if f["code"] == "SL402"]

    assert sl402() == []
    assert sl402("--include-cold") == [(2, BLOCKING)]
    assert CliRunner().invoke(cli, ["check", "-", "--fix"], input=source).stdout == source
    fixed = CliRunner().invoke(cli, ["check", "-", "--fix", "--include-cold"], input=source)
    assert fixed.stdout == source.replace("DataLoader(ds)", "DataLoader(ds, pin_memory=True)")


# -- a loader whose batches stay in its file --------------------------------------------------

NEARBY = ("its batches stay in this file, and neither it nor a project module it imports asks for "
          "`non_blocking=True`: each copy waits, pinned or not")

# The project asks for an asynchronous copy, in a file the training script does not import.
ASYNC_ELSEWHERE = {"pkg/eval_tool.py": "def up(x):\n    return x.cuda(non_blocking=True)\n"}

SCRIPT = """\
import torch
from torch.utils.data import DataLoader
{imports}


def run_model(model, sample):
    return model(sample["x"].cuda())


def main(ds, model):
    loader = DataLoader(ds, batch_size=4)
    it = iter(loader)
    for step in range(100):
        run_model(model, next(it))
    {tail}
"""


def _script(tmp_path: Path, imports: str = "", tail: str = "pass", extra: dict[str, str] | None = None) -> Path:
    script = SCRIPT.format(imports=imports, tail=tail)
    return _project(tmp_path, copy=", non_blocking=False", extra={"pkg/script.py": script, **ASYNC_ELSEWHERE,
                                                                  **(extra or {})})


def _script_finding(root: Path) -> tuple[str, str]:
    (found,) = [(context, why) for path, line, _, context, why in _sl402(root) if path == "pkg/script.py"]
    return found


def test_a_loader_iterated_in_its_file_by_blocking_copies_is_cold(tmp_path):
    # pips' train.py: `iter(loader)`, `next(it)`, a helper of the file copying with `.cuda()`,
    # while only an evaluation tool elsewhere asks for `non_blocking=True`.
    assert _script_finding(_script(tmp_path)) == ("cold", NEARBY)
    # The loader handed back to a `make_loader` caller stays shown: the project may copy it
    # asynchronously (pkg/eval_tool.py).
    assert ("pkg/data.py", 6, 12, "cold", LEAVES) in _sl402(_script(tmp_path))


@pytest.mark.parametrize(
    "tail",
    [
        # Grad-TTS: a progress bar opened over the loader in a `with`, then iterated.
        "with tqdm(loader, total=10) as bar:\n        for batch in bar:\n            run_model(model, batch)",
        "with torch.no_grad(), tqdm(enumerate(loader)) as bar:\n        for i, batch in bar:\n            pass",
    ],
)
def test_a_loader_iterated_through_a_with_bound_progress_bar_is_cold(tmp_path, tail):
    root = _script(tmp_path, imports="from tqdm import tqdm", tail=tail)
    assert _script_finding(root) == ("cold", NEARBY)


@pytest.mark.parametrize(
    "tail",
    [
        "with tqdm(loader) as bar:\n        trainer.run(bar)",  # the bar hands the batches on
        "with tqdm(loader) as bar:\n        return bar",
        "with open_loader(loader) as data:\n        pass",  # not a known wrapper: handed on
    ],
)
def test_a_loader_a_with_bound_progress_bar_hands_on_stays_shown(tmp_path, tail):
    root = _script(tmp_path, imports="from tqdm import tqdm", tail=tail)
    assert _script_finding(root) == ("cold", LEAVES)


def test_a_with_bound_progress_bar_that_only_counts_the_loader_is_no_iterator_over_it(tmp_path):
    # `tqdm(total=len(loader))` iterates nothing of the loader: handing the bar on (to a
    # logger) hands no batch on, and the loader iterated in the file stays cold.
    tail = "with tqdm(total=len(loader)) as bar:\n        for b in loader:\n            logger.info(bar)"
    root = _script(tmp_path, imports="from tqdm import tqdm", tail=tail)
    assert _script_finding(root) == ("cold", NEARBY)


# A helper of the file that hands on the module's progress bar, which it reads as a global.
FIT_ALL = "from tqdm import tqdm\n\n\ndef fit_all(trainer, model):\n    trainer.fit(model, bar)\n"


@pytest.mark.parametrize(
    "tail",
    [
        "global bar\n    with tqdm(loader) as bar:\n        fit_all(trainer, model)",
        "global bar\n    bar = tqdm(loader)\n    fit_all(trainer, model)",
    ],
)
def test_a_progress_bar_bound_to_a_global_stays_shown(tmp_path, tail):
    # Other scopes read a global (another function here, another file): they are not followed.
    root = _script(tmp_path, imports=FIT_ALL, tail=tail)
    assert _script_finding(root) == ("cold", LEAVES)


NONLOCAL_BAR = """\
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def run_model(model, sample):
    return model(sample["x"].cuda())


def main(ds, model, trainer):
    bar = None

    def load():
        nonlocal bar
        loader = DataLoader(ds, batch_size=4)
        it = iter(loader)
        for step in range(100):
            run_model(model, next(it))
        with tqdm(loader) as bar:
            pass

    load()
    trainer.fit(model, bar)
"""


def test_a_progress_bar_bound_to_a_nonlocal_stays_shown(tmp_path):
    # The enclosing function hands the bar (and the loader's batches) to the trainer.
    root = _project(tmp_path, copy=", non_blocking=False", extra={"pkg/script.py": NONLOCAL_BAR, **ASYNC_ELSEWHERE})
    assert _script_finding(root) == ("cold", LEAVES)


@pytest.mark.parametrize(
    "tail",
    [
        "return loader",  # its caller may copy the batches asynchronously
        "model.fit(loader)",  # so may a method of another object
        "self_loaders = {'train': loader}",  # stored in a container
        "alias = loader",  # followed no further
    ],
)
def test_a_loader_that_leaves_its_file_stays_shown(tmp_path, tail):
    assert _script_finding(_script(tmp_path, tail=tail)) == ("cold", LEAVES)


@pytest.mark.parametrize(
    ("imports", "extra"),
    [
        ("from pkg.eval_tool import up", {}),  # the file imports a module that asks
        ("from pkg.helpers import up", {"pkg/helpers/__init__.py": "from .copies import up\n",
                                        "pkg/helpers/copies.py": "def up(x):\n    return x.cuda(non_blocking=True)\n"}),
        ("from pkg import eval_tool", {}),
    ],
)
def test_a_loader_whose_file_imports_an_asynchronous_copy_stays_shown(tmp_path, imports, extra):
    # semantic-segmentation-pytorch's eval.py: `from mit_semseg.lib.nn import async_copy_to`, a
    # helper the package re-exports from the module that copies with `non_blocking=True`.
    assert _script_finding(_script(tmp_path, imports=imports, extra=extra)) == ("cold", LEAVES)


def test_a_module_level_loader_read_by_the_file_s_functions_is_cold(tmp_path):
    script = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n\n\n"
              "def train(model):\n    for x in enumerate(loader):\n        model(x.cuda())\n")
    root = _project(tmp_path, copy=", non_blocking=False", extra={"pkg/script.py": script, **ASYNC_ELSEWHERE})
    assert _script_finding(root) == ("cold", NEARBY)


@pytest.mark.parametrize(
    "tail",
    [
        "trainer.run(iter(loader))",  # the iterator, not the loader, is handed on
        "trainer.run(model, tqdm(loader))",
        "pbar = enumerate(loader)\n    trainer.run(pbar)",
        "trainer.run(it)",  # `it = iter(loader)` above
        "model.batches = iter(loader)",  # stored on an object
        "return tqdm(loader)",  # handed back
    ],
)
def test_a_loader_handed_on_through_an_iterator_stays_shown(tmp_path, tail):
    assert _script_finding(_script(tmp_path, tail=tail)) == ("cold", LEAVES)


@pytest.mark.parametrize(
    "imports",
    [
        "from pkg.eval_tool import *",  # a star import names no local
        "import pkg.eval_tool",  # binds `pkg`, but runs (and reads) pkg.eval_tool
    ],
)
def test_a_loader_whose_file_imports_an_asynchronous_copy_by_module_stays_shown(tmp_path, imports):
    assert _script_finding(_script(tmp_path, imports=imports)) == ("cold", LEAVES)


@pytest.mark.parametrize(
    "consumer",
    [
        "from pkg.script import loader\n\n\ndef train(model):\n    for x in loader:\n        model(x.cuda(non_blocking=True))\n",
        "from pkg import script\n\n\ndef train(model):\n    for x in script.loader:\n        model(x.cuda(non_blocking=True))\n",
        "from pkg.script import *\n\n\ndef train(model):\n    for x in loader:\n        model(x.cuda(non_blocking=True))\n",
    ],
)
def test_a_module_level_loader_another_file_imports_stays_shown(tmp_path, consumer):
    # `loader` at the top of pkg/script.py, iterated by pkg/consumer.py with `non_blocking=True`.
    script = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n\n\n"
              "def train(model):\n    for x in enumerate(loader):\n        model(x.cuda())\n")
    root = _project(tmp_path, copy=", non_blocking=False",
                    extra={"pkg/script.py": script, "pkg/consumer.py": consumer})
    assert _script_finding(root) == ("cold", LEAVES)


@pytest.mark.parametrize(
    "tail",
    [
        "yield from loader",  # improved-diffusion's `load_data`: the caller iterates the batches
        "for batch in loader:\n        yield batch",
        "hand_on(loader, model)",  # a function of the file that hands it to other code
    ],
)
def test_a_loader_whose_batches_leave_through_a_generator_or_a_helper_stays_shown(tmp_path, tail):
    imports = "\n\ndef hand_on(data, model):\n    model.fit(data)\n"
    assert _script_finding(_script(tmp_path, imports=imports, tail=tail)) == ("cold", LEAVES)


def test_a_loader_iterated_where_it_is_built_by_a_generator_stays_shown(tmp_path):
    script = ("from torch.utils.data import DataLoader\nDEVICE = \"cuda\"\n\n\ndef batches(ds):\n"
              "    for batch in DataLoader(ds):\n        yield batch\n")
    root = _project(tmp_path, copy=", non_blocking=False", extra={"pkg/script.py": script, **ASYNC_ELSEWHERE})
    assert _script_finding(root) == ("cold", LEAVES)


@pytest.mark.parametrize("tail", ["epoch(loader, model)", "epoch(model=model, data=tqdm(loader))", "epoch(it, model)"])
def test_a_loader_handed_to_a_helper_of_the_file_that_iterates_it_is_cold(tmp_path, tail):
    imports = "\n\ndef epoch(data, model):\n    for x in data:\n        model(x.cuda())\n"
    assert _script_finding(_script(tmp_path, imports=imports, tail=tail)) == ("cold", NEARBY)


@pytest.mark.parametrize("tail", ["epoch(loader, model)", "epoch(tqdm(loader), model)", "spread(loader)"])
def test_a_loader_a_helper_of_the_file_hands_on_stays_shown(tmp_path, tail):
    imports = ("\n\ndef epoch(data, model):\n    model.fit(iter(data))\n\n\n"
               "def spread(*data):\n    for x in data[0]:\n        pass\n")
    assert _script_finding(_script(tmp_path, imports=imports, tail=tail)) == ("cold", LEAVES)


def test_a_module_level_loader_a_notebook_imports_stays_shown(tmp_path):
    cells = ["%matplotlib inline\nfrom pkg.script import (loader,\n    other)",
             "for x in loader:\n    model(x.cuda(non_blocking=True))"]
    script = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nother = 1\n\n\n"
              "def train(model):\n    for x in enumerate(loader):\n        model(x.cuda())\n")
    root = _project(tmp_path, copy=", non_blocking=False",
                    extra={"pkg/script.py": script, "explore.ipynb": notebook_of(*cells), **ASYNC_ELSEWHERE})
    assert _script_finding(root) == ("cold", LEAVES)
    (root / "explore.ipynb").write_text(notebook_of("import numpy as np"))
    assert _script_finding(root) == ("cold", NEARBY)


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("for b in batches(loader):\n        model(b.cuda())", NEARBY),  # a generator of the file, iterated here
        ("trainer.run(batches(loader))", LEAVES),  # its batches handed on
    ],
)
def test_a_loader_read_through_a_generator_of_the_file(tmp_path, tail, why):
    imports = "\n\ndef batches(data):\n    for b in data:\n        yield b\n"
    assert _script_finding(_script(tmp_path, imports=imports, tail=tail)) == ("cold", why)


@pytest.mark.parametrize("comment", ["# noqa: SL402", "# synclint: ignore[SL402]", "# synclint: ignore"])
def test_a_loader_silenced_where_it_is_built_silences_its_copies(comment):
    # At 1970b90 the comment on the loader's line silenced SL402 for it; its copies are the
    # same finding, moved: the comment still silences them.
    source = COPIED.replace("DataLoader(ds, batch_size=4)", f"DataLoader(ds, batch_size=4)  {comment}")
    assert [f for f in check_source(source, "t.py", include_cold=True) if f.code == "SL402"] == []


def test_a_batch_moved_to_a_cpu_device_is_no_copy_to_the_device():
    source = (_RUN + "    loader = DataLoader(ds)\n    for x in loader:\n"
              "        model(x, 'cuda')\n        y = x.to(torch.device('cpu'), non_blocking=True)\n        z = x.to(device=torch.device('cpu:0'), non_blocking=True)\n")
    _only_the_loader_is_reported(source, 6)


def test_copies_in_a_constructor_do_not_stand_for_a_kept_loader():
    # The loader is kept for training (its per-step copies are elsewhere); the copy in
    # `__init__` runs once: it is cold, and so is the loader's own line, for its own reason.
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\nclass Trainer:\n    def __init__(self, ds):\n"
              "        loader = DataLoader(ds)\n        for x, y in loader:\n"
              "            self.mean += x.cuda(non_blocking=True).mean()\n        self.loader = loader\n")
    found = _sl402_of(source)
    assert [(line, context, why) for line, _, context, why in found] == [(7, "cold", LEAVES), (9, "cold", SETUP)]


def test_a_loop_that_breaks_after_one_batch_copies_no_batch_per_step():
    # A peek at the first batch runs once; the loader is handed on for training.
    source = (_RUN + "    loader = DataLoader(ds)\n    for x, y in loader:\n        sample = x.cuda(non_blocking=True)\n"
              "        break\n    accelerator.fit(model, loader)\n")
    _only_the_loader_is_reported(source, 6)


def test_a_loader_built_only_when_none_is_passed_is_not_followed():
    # The loop may iterate the caller's loader (pinned or not): the copy is not this loader's.
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef evaluate(model, ds, loader=None):\n"
              "    if loader is None:\n        loader = DataLoader(ds)\n    for x, y in loader:\n"
              "        x = x.cuda(non_blocking=True)\n")
    _only_the_loader_is_reported(source, 7)


def test_a_module_loader_a_function_rebinds_through_global_is_not_followed():
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\n\n\ndef setup():\n"
              "    global loader\n    loader = DataLoader(ds, pin_memory=True)\n\n\nsetup()\nfor x in loader:\n"
              "    x = x.cuda(non_blocking=True)\n")
    _only_the_loader_is_reported(source, 4)


def test_a_copy_into_a_pinned_host_buffer_is_no_copy_to_the_device():
    # Host to host (the staging a prefetcher does itself): the host waits for no device.
    source = (_RUN + "    loader = DataLoader(ds)\n    buf = torch.empty(64, 3, pin_memory=True)\n"
              "    staging = torch.empty(64, 3).pin_memory()\n    for x, y in loader:\n"
              "        buf[: len(x)].copy_(x, non_blocking=True)\n        staging.copy_(y, non_blocking=True)\n"
              "        model(buf.cuda(non_blocking=True))\n")
    _only_the_loader_is_reported(source, 6)


# Review of c729170: the loader's own line is cold now, so a loop the copy follower misses
# loses the only finding that pointed at the per-step wait.


def test_a_loader_bound_with_an_annotation_is_followed_to_its_copies():
    # `loader: DataLoader = DataLoader(ds)` binds the name as `loader = DataLoader(ds)` does.
    source = _RUN + "    loader: DataLoader = DataLoader(ds)\n    for x, y in loader:\n        x = x.cuda(non_blocking=True)\n"
    assert [(line, context) for line, _, context, _ in _sl402_of(source)] == [(6, "cold"), (8, "hot")]
    assert [f.line for f in check_source(source, "t.py") if f.code == "SL402"] == [8]


@pytest.mark.parametrize(
    ("loop", "line"),
    [
        # A fixed number of steps, each taking the next batch of an iterator over the loader.
        ("it = iter(loader)\n    for step in range(steps):\n        x, y = next(it)\n"
         "        x = x.cuda(non_blocking=True)", 10),
        ("it = iter(loader)\n    while True:\n        batch = next(it)\n"
         "        img = batch['img'].to('cuda', non_blocking=True)", 10),
        ("it = iter(tqdm(loader))\n    for step in range(steps):\n        for _ in range(2):\n"
         "            x, y = next(it)\n            y = y.cuda(non_blocking=True)", 11),
        ("it = enumerate(loader)\n    for step in range(steps):\n        i, (x, y) = next(it)\n"
         "        x = x.cuda(non_blocking=True)", 10),
    ],
)
def test_batches_taken_with_next_in_a_loop_are_followed_to_their_copies(loop, line):
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef run(ds, steps, tqdm):\n"
              f"    loader = DataLoader(ds)\n    {loop}\n")
    found = _sl402_of(source)
    assert [(found_line, why) for found_line, _, _, why in found][0] == (6, COPIED_WHY)
    assert [f.line for f in check_source(source, "t.py") if f.code == "SL402"] == [line]


@pytest.mark.parametrize(
    "body",
    [
        # One batch taken outside any loop: a peek, once.
        "it = iter(loader)\n    x, y = next(it)\n    x = x.cuda(non_blocking=True)\n    trainer.fit(loader)",
        # The iterator rebound (restarted at StopIteration): not followed, as any name bound twice.
        "it = iter(loader)\n    for step in range(steps):\n        try:\n            x = next(it)\n"
        "        except StopIteration:\n            it = iter(loader)\n            x = next(it)\n"
        "        x = x.cuda(non_blocking=True)",
        # The first batch of a fresh iterator: a sample shown once an epoch, not a step's batch.
        "for epoch in range(steps):\n        sample = next(iter(loader))\n        sample = sample.cuda(non_blocking=True)",
        # The next batch of another iterator.
        "it = iter(loader)\n    for step in range(steps):\n        x = next(other)\n        x = x.cuda(non_blocking=True)",
        # What a zip takes from another iterable, and enumerate's count, are no batch of it.
        "it = iter(zip(loader, other))\n    for step in range(steps):\n        x, u = next(it)\n"
        "        u = u.cuda(non_blocking=True)",
        "it = enumerate(loader)\n    for step in range(steps):\n        i, x = next(it)\n        i = i.cuda(non_blocking=True)",
    ],
)
def test_what_next_takes_that_is_no_per_step_batch_of_the_loader(body):
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef run(ds, steps, other, trainer):\n"
              f"    loader = DataLoader(ds)\n    {body}\n")
    _only_the_loader_is_reported(source, 6)


@pytest.mark.parametrize("comment", ["# noqa: SL402", "# synclint: ignore[SL402]", "# synclint: ignore"])
def test_fix_leaves_a_loader_silenced_where_it_is_built(comment):
    # `check` shows none of its copies (the comment silences them): `fix` must not pin it
    # through them either, with or without --include-cold.
    source = COPIED.replace("DataLoader(ds, batch_size=4)", f"DataLoader(ds, batch_size=4)  {comment}")
    assert fix_source(source) == source
    from synclint.fixers.apply import fix_text

    assert fix_text(source, "t.py", include_cold=True) == (source, 0)


def test_a_field_of_an_element_of_a_batch_in_nested_comprehensions_is_followed():
    # torchvision's detection references: `targets` is a list of dictionaries. The inner
    # comprehension is visited before the outer one binds `t`: its names must not be taken
    # for another value's.
    source = (_RUN + "    loader = DataLoader(ds)\n    for images, targets in loader:\n"
              "        targets = [{k: v.to('cuda', non_blocking=True) for k, v in t.items()} for t in targets]\n"
              "        model(images, targets)\n")
    assert [f.line for f in check_source(source, "t.py") if f.code == "SL402"] == [8]


def test_the_reason_of_a_loader_iterated_here_by_blocking_copies_does_not_say_it_is_handed_on():
    # The file asks for an asynchronous copy elsewhere; this loader's own loop blocks. Its
    # line is cold for LEAVES, whose words must hold here too: it is not handed on.
    source = (_RUN + "    loader = DataLoader(ds)\n    for x, y in loader:\n        x = x.cuda()\n        model(x)\n\n\n"
              "def other(b):\n    return b.to('cuda', non_blocking=True)\n")
    ((line, _, context, why),) = _sl402_of(source)
    assert (line, context, why) == (6, "cold", LEAVES)
    assert "(it is handed on" not in why  # (c729170's words: "(it is handed on, or read elsewhere)")


# -- a loader handed to a function of its module --------------------------------------------

HANDED = """\
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def train_one_epoch(model, data_loader, device):
    for images, targets in data_loader:
        images = images.to(device, non_blocking=True)
        model(images).backward()


def evaluate(model, loader):
    for batch in loader:
        model(batch["img"].cuda(non_blocking=True))


def main(ds, model):
    train_loader = DataLoader(ds, batch_size=4)
    val_loader = DataLoader(ds, batch_size=4)
    for epoch in range(10):
        train_one_epoch(model, train_loader, "cuda")
        evaluate(model, loader=tqdm(val_loader))
"""


def test_a_loader_handed_to_a_function_of_its_module_is_followed_to_its_copies():
    # A script's `main` builds the loaders and hands them to its own `train_one_epoch` and
    # `evaluate`: the copies there are the loaders' (reported by default), the loaders'
    # lines are cold.
    found = [(f.line, f.column, f.context, f.message) for f in check_source(HANDED, "t.py") if f.code == "SL402"]
    assert [(line, column, context) for line, column, context, _ in found] == [(8, 18, "hot"), (14, 15, "hot")]
    assert "a batch of `train_loader` (handed to `train_one_epoch`)" in found[0][3]
    assert "a batch of `val_loader` (handed to `evaluate`)" in found[1][3]
    fixed = fix_source(HANDED)
    assert fixed == HANDED.replace("batch_size=4)", "batch_size=4, pin_memory=True)")
    assert _sl402_of(fixed) == []


def test_a_pinned_loader_handed_on_has_no_copy_to_report():
    assert [f for f in check_source(HANDED.replace("batch_size=4)", "batch_size=4, pin_memory=True)"), "t.py")
            if f.code == "SL402"] == []


def test_a_loader_is_followed_two_hands_deep_and_no_further():
    two = HANDED.replace("def main(", "def fit(model, loader):\n    train_one_epoch(model, loader, 'cuda')\n\n\ndef main(") \
        .replace("        train_one_epoch(model, train_loader, \"cuda\")", "        fit(model, train_loader)")
    assert [line for line, *_ in _sl402_of(two) if line == 8] == [8]
    three = two.replace("def main(", "def run(model, loader):\n    fit(model, loader)\n\n\ndef main(") \
        .replace("        fit(model, train_loader)", "        run(model, train_loader)")
    assert [line for line, *_ in _sl402_of(three) if line == 8] == []


@pytest.mark.parametrize(
    "call",
    [
        "train_one_epoch(model, enumerate(train_loader), 'cuda')",  # yields (i, batch): another item
        "train_one_epoch(model, zip(train_loader, val_loader), 'cuda')",
        "train_one_epoch(*[model], train_loader, 'cuda')",  # which parameter is not known
        "train_one_epoch(model, device='cuda', data=train_loader)",  # no such parameter
        "self_train(model, train_loader)",  # not a function of the module
    ],
)
def test_what_is_not_followed_into_a_function(call):
    source = HANDED.replace("        train_one_epoch(model, train_loader, \"cuda\")", f"        {call}")
    assert [line for line, *_ in _sl402_of(source) if line == 8] == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("    for images, targets in data_loader:\n",
         "    data_loader = accelerator.prepare(data_loader)\n    for images, targets in data_loader:\n"),  # rebound
        ("def main(", "def train_one_epoch(model, data_loader, device):\n    pass\n\n\ndef main("),  # defined twice
    ],
)
def test_a_function_that_may_not_iterate_the_loader_it_is_handed_is_not_followed(change, why):
    source = HANDED.replace(change, why, 1)
    assert [line for line, *_ in _sl402_of(source) if line in (8, 9)] == []


def test_a_recursive_function_is_followed_once():
    source = HANDED.replace("        model(images).backward()\n",
                            "        model(images).backward()\n    train_one_epoch(model, data_loader, device)\n")
    assert [line for line, *_ in _sl402_of(source)].count(8) == 1


def test_a_loader_built_in_a_constructor_and_handed_on_makes_one_pass():
    # `calibrate` iterates the loader `__init__` hands it once per construction, as a loop
    # over it in `__init__` would: its copies run once (the callee is visited first here).
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef calibrate(model, loader):\n"
              "    for x in loader:\n        model(x.cuda(non_blocking=True))\n\n\nclass Runner:\n"
              "    def __init__(self, model, ds):\n        loader = DataLoader(ds, batch_size=2)\n"
              "        calibrate(model, loader)\n")
    assert [(line, context, why) for line, _, context, why in _sl402_of(source) if line == 7] == [
        (7, "cold", "construction or setup")]


@pytest.mark.parametrize(
    ("change", "to", "call"),
    [
        # `data_loader` is positional-only: `data_loader=` goes to `**kwargs`, the loop runs over `[]`.
        ("def train_one_epoch(model, data_loader, device):", "def train_one_epoch(model, data_loader, /, device, **kw):",
         "train_one_epoch(model, [], device='cuda', data_loader=train_loader)"),
        # `main` binds a `train_one_epoch` of its own: the call runs that one.
        ("    train_loader = DataLoader(ds, batch_size=4)\n",
         "    train_one_epoch = make_trainer()\n    train_loader = DataLoader(ds, batch_size=4)\n", None),
        # The module rebinds the name: a call may run other code.
        ("def evaluate(", "train_one_epoch = make_trainer(train_one_epoch)\n\n\ndef evaluate(", None),
    ],
)
def test_a_call_that_may_not_run_the_function_s_code_with_the_loader_is_not_followed(change, to, call):
    source = HANDED.replace(change, to, 1)
    if call is not None:
        source = source.replace("        train_one_epoch(model, train_loader, \"cuda\")", f"        {call}")
    assert [line for line, *_ in _sl402_of(source) if line in (8, 9)] == []


FIELDS = """\
import torch
from torch.utils.data import DataLoader
def train(model, ds, gpu):
    loader = DataLoader(ds, batch_size=4{pin}, num_workers=4)
    for sample in loader:
        ref_imgs = sample["ref_img"]
        labels = sample["meta"]["label"]
        ref_imgs = ref_imgs.cuda(gpu, non_blocking=True)
        labels = labels.cuda(gpu)
        extra = torch.ones(3)
        extra = extra.cuda(gpu)
        model(ref_imgs, labels, extra).backward()
"""


def test_a_name_bound_to_a_batch_field_is_the_loader_s_to_copy():
    # aot-benchmark's ``ref_imgs = sample["ref_img"]`` then ``ref_imgs.cuda(gpu, non_blocking=True)``
    # from a pinned loader: an asynchronous copy of the batch, no tensor built on the host
    # (SL403); its blocking twin is a blocking copy of the batch (SL401). Its fix only where
    # something proves the field a tensor, as for the loop's own targets: a batch may hold
    # any object, whose `.cuda()` need not take `non_blocking` (the call is no such proof).
    pinned = check_source(FIELDS.format(pin=", pin_memory=True"), "train.py", include_cold=True)
    assert sorted((f.line, f.code) for f in pinned) == [(9, "SL401"), (11, "SL403")]
    assert [f.fix for f in pinned if f.code == "SL401"] == [None]
    fixed = fix_source(FIELDS.format(pin=", pin_memory=True"), "train.py")
    assert "labels = labels.cuda(gpu)\n" in fixed
    annotated = FIELDS.format(pin=", pin_memory=True").replace(
        '        labels = sample["meta"]["label"]\n', '        labels = sample["meta"]["label"]\n        labels: torch.Tensor\n')
    assert "labels = labels.cuda(gpu, non_blocking=True)" in fix_source(annotated, "train.py")
    # Unpinned, the asynchronous copy waits while the host stages it: SL402 says so there.
    unpinned = check_source(FIELDS.format(pin=""), "train.py", include_cold=True)
    assert (8, "SL402") in {(f.line, f.code) for f in unpinned}
    assert (8, "SL403") not in {(f.line, f.code) for f in unpinned}


REBOUND_FIELDS = """\
import torch
def train(model, loader, device):
    for batch in loader:
        labels = batch["label"]
        labels = torch.tensor([int(l) for l in labels])
        labels = labels.cuda()
        out = batch["img"]
        out = model(out.cuda(non_blocking=True))
        out = out.cuda()
        kept = batch["kept"]
        kept = kept.float()
        kept = kept.cuda()
        batch["x"] = batch["x"].cuda(non_blocking=True)
        x = batch["x"]
        x = x.to(device)
        model(labels, out, kept, x)
"""


def test_a_field_name_rebound_to_something_else_is_no_batch():
    # ``labels = batch["label"]`` then ``labels = torch.tensor(...)``: the name holds a tensor
    # built here (SL403's, not a second SL401 on the same copy); rebound to the model's output
    # it holds a device tensor (no copy); a cast keeps the field (its move still copies). A
    # field the loop already replaced with its device copy (``batch["x"] = batch["x"].cuda()``)
    # copies nothing when moved again.
    found = sorted((f.line, f.code) for f in check_source(REBOUND_FIELDS, "train.py", include_cold=True))
    assert [line for line, code in found if code == "SL401"] == [12]
    assert (6, "SL403") in found
    # The loop's own batch rebound to its field stays the loop's: kept through a helper's
    # result, as the loop's targets are (``x, y = augment(x, y)``).
    source = ("import torch\nfor batch in loader:\n    batch = batch['net_input']\n"
              "    batch = prepare(batch)\n    batch = batch.to(device)\n")
    assert [(f.line, f.code) for f in check_source(source, "train.py", include_cold=True)] == [(5, "SL401")]


def test_a_field_moved_before_the_loop_stores_its_copy_is_still_a_copy():
    # ``x = batch["x"]; x = x.cuda(); batch["x"] = x``: the loop stores the device copy back
    # *after* the move, which copies the loader's host tensor (blocking); only a read after
    # the store (``y = batch["y"]`` below an inner loop storing ``batch[key] = ...cuda()``) gets
    # the device copy.
    source = textwrap.dedent("""\
        import torch
        def train(model, loader, device):
            for batch in loader:
                x = batch["x"]
                x = x.cuda()
                batch["x"] = x
                for key in ("y", "z"):
                    batch[key] = batch[key].cuda(non_blocking=True)
                y = batch["y"]
                y = y.cuda()
                model(batch, y)
    """)
    assert [(f.line, f.code) for f in check_source(source, "train.py", include_cold=True)] == [(5, "SL401")]
