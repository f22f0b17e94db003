"""Leaving hidden functions out of a default check never changes what it shows.

Each case is checked both ways: the shown findings with the functions left out
equal those of a full analysis filtered afterwards, and the functions really
were left out (or kept, when kept code depends on them), so the comparison is
not vacuous.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.engine import _check_source, _check_text, _check_variant, select_rules, visible
from synclint.guard import guarded_tree
from synclint.hidden_code import blank_hidden_functions
from synclint.project import facts_for_files
from synclint.project.facts import facts_for_project
from synclint.project.index import ProjectIndex
from synclint.project.summary import summarize
from synclint.rules import ALL_RULES
from synclint.runner import RunOptions, lint_paths

ROOT = Path(__file__).resolve().parent.parent
RULES = tuple(select_rules(None))

MODEL = textwrap.dedent(
    '''\
    import torch
    from torch import nn
    from torch.utils.data import DataLoader


    def unreached(x):
        return x.nonzero()


    def unreached_on_device(n):
        return torch.arange(n, device="cuda").nonzero()


    def _make():
        return torch.zeros(3)


    def unreached_caller():
        return _make().nonzero()


    def unreached_loader(dataset):
        for batch in DataLoader(dataset, batch_size=8): batch.to("cuda", non_blocking=True)


    def unreached_global():
        global STATE
        STATE = torch.ones(1)


    def scaled(x):
        return x.to("cuda", non_blocking=True) * 2


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(3)
            self.count = self._count()

        def _count(self):
            return torch.zeros(1)

        def extra_repr(self):
            return f"{self.scale.item()}"

        def reset_cache(self):
            self.cache = torch.zeros(2)
            if self.cache.sum():
                pass

        def forward(self, x):
            if x.sum() > 0:
                x = x + 1
            return scaled(x) * self.scale


    class Unused:
        def training_step(self, batch):
            return batch.nonzero()

        def helper(self, batch):
            return batch.nonzero()


    def train(model, loader):
        for batch in loader:
            model(batch)
    '''
)


def _project(tmp_path: Path, source: str = MODEL) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(source)
    return package / "model.py"


def _left_out(path: Path) -> set[str]:
    """The functions (by first line's text) that the default check leaves out."""
    source = path.read_text()
    tree, _ = guarded_tree(source)
    facts = facts_for_files([path])[str(path.resolve())]
    blanked = blank_hidden_functions(source, tree, facts, RULES)
    assert blanked is not None
    text, blanked_tree = blanked.source, blanked.tree
    _assert_parsed_tree(text, blanked_tree)
    before, after = source.splitlines(), text.splitlines()
    assert len(before) == len(after)  # lines do not move
    return {
        line.strip()
        for line, kept in zip(before, after)
        if line.lstrip().startswith("def ") and kept.strip() in ("", "pass")
    }


def _assert_parsed_tree(text: str, tree) -> None:
    """The tree built without a parse is the one CPython parses, positions included."""
    assert ast.dump(tree, include_attributes=True) == ast.dump(ast.parse(text), include_attributes=True)


def _shown(paths, tmp_path: Path, **options) -> list:
    return lint_paths(paths, Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, **options))


def test_hidden_functions_are_left_out_and_what_kept_code_needs_stays(tmp_path):
    left_out = _left_out(_project(tmp_path))
    assert left_out == {
        "def unreached(x):",
        "def _make():",  # returns a value, but only left-out code calls it
        "def unreached_caller():",
        "def extra_repr(self):",  # cold; returns a value nobody calls
        "def reset_cache(self):",  # binds `self.cache`, which no kept code names
        "def helper(self, batch):",
    }
    # Kept: an op on a tensor made on the device (shown as a note), a DataLoader (its copies,
    # anywhere), a `global`, a value kept code calls for (`self._count()`), attributes
    # read by `forward` (`__init__`), a function named like a step, and the hot code.


def test_shown_findings_are_those_of_a_full_analysis(tmp_path):
    path = _project(tmp_path)
    everything = _shown([path], tmp_path, include_cold=True)
    shown = _shown([path], tmp_path)
    assert shown == visible(everything)
    codes = {(f.line, f.code) for f in everything}
    # Not vacuous: a left-out function held a finding that only --include-cold shows ...
    assert (7, "SL101") in codes and all(f.line != 7 for f in shown)
    # ... and those kept for their own sake are shown.
    assert {(f.line, f.code, f.severity) for f in shown} >= {
        (11, "SL101", "info"),  # unreached, but the op reads a CUDA tensor
        (23, "SL402", "warning"),
        (53, "SL202", "warning"),  # forward
        (60, "SL101", "warning"),  # training_step
    }
    assert (63, "SL101") in codes and all(f.line != 63 for f in shown)  # `Unused.helper`


def test_include_cold_results_are_not_served_from_a_default_runs_cache(tmp_path):
    path = _project(tmp_path)
    cache = tmp_path / "cache"
    default = lint_paths([path], Settings(root=tmp_path), RunOptions(jobs=1, cache_dir=cache))
    with_cold = lint_paths([path], Settings(root=tmp_path), RunOptions(jobs=1, cache_dir=cache, include_cold=True))
    assert len(with_cold) > len(default)
    assert with_cold == _shown([path], tmp_path, include_cold=True)
    assert lint_paths([path], Settings(root=tmp_path), RunOptions(jobs=1, cache_dir=cache)) == default


def test_a_class_left_with_no_statement_gets_a_pass(tmp_path):
    source = MODEL + textwrap.dedent(
        '''

        class Report:
            def render(self, t):
                return t.nonzero()

            @staticmethod
            def other(t):
                return t.unique()


        class Outer:
            limit = 3

            class Inner:
                def shape(self, t):
                    return t.nonzero()
        '''
    )
    path = _project(tmp_path, source)
    left_out = _left_out(path)
    assert {"def render(self, t):", "def other(t):", "def shape(self, t):"} <= left_out
    text = blank_hidden_functions(source, guarded_tree(source)[0], facts_for_files([path])[str(path.resolve())], RULES).source
    assert "    pass\n" in text.split("class Report:")[1]
    assert _shown([path], tmp_path) == visible(_shown([path], tmp_path, include_cold=True))


def test_nothing_is_left_out_without_steps_or_in_a_cold_file(tmp_path):
    # A library of helpers: nothing reaches anything, so unreached code is shown.
    source = "import torch\n\ndef f(x):\n    return x.nonzero()\n"
    path = _project(tmp_path, source)
    facts = facts_for_files([path])[str(path.resolve())]
    assert not facts.whole_project
    assert blank_hidden_functions(source, guarded_tree(source)[0], facts, RULES) is None


def _whole_project_facts(source: str):
    """Facts for ``source`` as one piece of a project whose steps are elsewhere: code
    nothing here reaches is unreached, so hidden."""
    index = ProjectIndex({"/project/module.py": summarize(source)}, Path("/project"))
    return facts_for_project(index, whole_project=True, split=True)["/project/module.py"]


RULE_EXAMPLES = [
    pytest.param(source, id=f"{rule.code}-{kind}-{index}")
    for rule in ALL_RULES
    for kind, sources in (("valid", rule.VALID), ("invalid", [example.code for example in rule.INVALID]))
    for index, source in enumerate(sources)
]


@pytest.mark.parametrize("source", RULE_EXAMPLES)
def test_rule_examples_show_the_same_findings(source):
    facts = _whole_project_facts(source)
    blanked = blank_hidden_functions(source, guarded_tree(source)[0], facts, RULES)
    if blanked is not None:
        _assert_parsed_tree(blanked.source, blanked.tree)
    full = visible(_check_text(source, "module.py", RULES, facts))
    skipped = visible(_check_text(source, "module.py", RULES, facts, skip_hidden=True))
    assert skipped == full


def test_examples_show_the_same_findings():
    examples = ROOT / "examples"
    settings = Settings(root=ROOT)
    shown = lint_paths([examples], settings, RunOptions(jobs=1, use_cache=False))
    full = lint_paths([examples], settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert shown and shown == visible(full)


def test_the_rule_examples_comparison_is_not_vacuous():
    left_alone = [
        source
        for (source,) in (param.values for param in RULE_EXAMPLES)
        if blank_hidden_functions(source, guarded_tree(source)[0], _whole_project_facts(source), RULES) is None
    ]
    assert len(RULE_EXAMPLES) - len(left_alone) >= 100  # 117 of 270 leave a function out


def test_prose_and_signatures_do_not_keep_a_function(tmp_path):
    source = MODEL + textwrap.dedent(
        '''

        def _helper(t):
            return t.nonzero()


        def documented(t, device=None):
            """Calls the helper: ``_helper(t)``.

            >>> _helper(torch.ones(2))
            """
            # _helper(t) is only named here
            return t.unique()


        def on_device(t):
            return t.to(device="cuda").unique()
        '''
    )
    path = _project(tmp_path, source)
    left_out = _left_out(path)
    # ``device=None`` is a default, not a tensor made on a device; docstrings and comments
    # are prose: ``_helper`` is not called by kept code.
    assert {"def _helper(t):", "def documented(t, device=None):"} <= left_out
    assert "def on_device(t):" not in left_out  # a `device=` keyword argument: kept
    assert _shown([path], tmp_path) == visible(_shown([path], tmp_path, include_cold=True))


def test_a_fix_outside_functions_gets_the_whole_module():
    # Fixes at module level look for names across the whole module, left-out functions too.
    source = textwrap.dedent(
        '''\
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset)
        for batch in loader: batch.to("cuda", non_blocking=True)


        def unreached(x):
            return x.nonzero()
        '''
    )
    facts = _whole_project_facts(source)
    tree = guarded_tree(source)[0]
    blanked = blank_hidden_functions(source, tree, facts, RULES)
    assert blanked is not None and "nonzero" not in blanked[0]
    assert _check_variant(source, "module.py", RULES, facts, *blanked) is None
    shown = visible(_check_text(source, "module.py", RULES, facts, skip_hidden=True))
    assert [(f.line, f.code, f.fix is not None) for f in shown] == [(5, "SL402", True)]
    assert shown == visible(_check_text(source, "module.py", RULES, facts))


# -- what kept code reads of left-out code, through channels the first tests missed ---------

_ON_DEVICE = "\n\ndef unreached(n):\n    return torch.arange(n).to({target}).nonzero()\n"
_TENSOR_ATTRIBUTE = textwrap.dedent(
    '''\
    import torch
    from torch import nn


    class Net(nn.Module):
        def {method}(self, t):
            {body}

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(3))

        def forward(self, x):
            if self.{attribute} > 0:
                x = x + 1
            return x
    '''
)
_FORWARD_FIX = textwrap.dedent(
    '''\


    class Net(torch.nn.Module):
        def forward(self, x):
            {line}
            return x
    '''
)
SHOWN_ONLY_THROUGH_OTHER_FUNCTIONS = {
    # A module-level alias of an accelerator name: the op's operand is proven on the device.
    "accelerator-alias": ('import torch\nDEVICE = "cuda"\nTARGET = DEVICE' + _ON_DEVICE.format(target="TARGET"),
                          [(6, "SL101", "info", False)]),
    "device-from-an-alias": ('import torch\nNAME = "cuda"\nDEV = torch.device(NAME)' + _ON_DEVICE.format(target="DEV"),
                             [(6, "SL101", "info", False)]),
    # An accelerator spelled with escapes, or imported (anywhere: imports are resolved module-wide).
    "escaped-accelerator": ("import torch" + _ON_DEVICE.format(target='"\\x63uda"'), [(4, "SL101", "info", False)]),
    "imported-current-device": (
        "import torch\n\n\ndef setup():\n    from torch.cuda import current_device as here\n"
        + _ON_DEVICE.format(target="here()"),
        [(9, "SL101", "info", False)],
    ),
    # A function named like a step, nested in one nothing reaches: shown.
    "nested-step": ("import torch\n\n\ndef build():\n    def step(x):\n        return x.nonzero()\n    return step\n",
                    [(6, "SL101", "warning", False)]),
    # A rule shown anywhere, its token imported under another name.
    "loader-alias": (
        'import torch\nfrom torch.utils.data import DataLoader as Loader\nDEVICE = "cuda"\n\n\n'
        "def unreached(dataset):\n    for batch in Loader(dataset): batch.cuda(non_blocking=True)\n",
        [(7, "SL402", "warning", True)],
    ),
    # Attribute kinds: a buffer registered by keyword, a name `\b` does not delimit, a
    # name Python normalises (NFKC: `ﬁle` is `file`), a call split before its parenthesis.
    "buffer-by-keyword": (
        _TENSOR_ATTRIBUTE.format(method="reset", body='self.register_buffer(name="scale", tensor=torch.relu(t))',
                                 attribute="scale"),
        [(14, "SL202", "warning", False)],
    ),
    "non-ascii-attribute": (
        _TENSOR_ATTRIBUTE.format(method="reset", body="self.maß = torch.relu(t)", attribute="maß"),
        [(14, "SL202", "warning", False)],
    ),
    "normalised-attribute": (
        _TENSOR_ATTRIBUTE.format(method="reset", body="self.ﬁle = torch.relu(t)", attribute="ﬁle"),
        [(14, "SL202", "warning", False)],
    ),
    "call-continued-on-the-next-line": (
        _TENSOR_ATTRIBUTE.format(method="_count", body="return torch.relu(t)", attribute="count").replace(
            "nn.Parameter(torch.ones(3))\n", "nn.Parameter(torch.ones(3))\n        self.count = self._count \\\n            (self.weight)\n"
        ),
        [(16, "SL202", "warning", False)],
    ),
    # Fixes: proofs that read module-level definitions, and fixers that look module-wide
    # from a lambda or a class body inside a function.
    "definition-rebinding-a-module-name": (
        "import torch\n\ndev = torch.device(NAME)\n\n\ndef dev():\n    pass\n"
        + _FORWARD_FIX.format(line="y = torch.tensor([1.0, 2.0]).to(dev)"),
        [(12, "SL403", "warning", False)],
    ),
    "definition-named-torch": (
        "from torch import Tensor\n\n\ndef torch():\n    pass\n\n\ndef forward(m: Tensor):\n    return m.nonzero().max()\n",
        [(9, "SL101", "warning", False)],
    ),
    "lambda": (
        "import torch\n\n\ndef unreached():\n    reps = torch.full((4,), 2)\n    return reps\n"
        + _FORWARD_FIX.format(line="f = lambda: torch.repeat_interleave(reps)"),
        # The fix proofs read a lambda's free names in its function (where `reps` is not
        # bound: no fix), other fixers still module-wide: the engine keeps the whole file.
        [(11, "SL104", "warning", False)],
    ),
    "class-body-in-a-function": (
        "import torch\n\n\ndef unreached(t):\n    inds = t + 1\n    return inds.unique()\n"
        + _FORWARD_FIX.format(
            line="class Local:\n            inds = torch.nonzero(x == 9, as_tuple=True)\n            x[inds] = -1"
        ),
        [(12, "SL101", "warning", False)],
    ),
}


@pytest.mark.parametrize("source, expected", SHOWN_ONLY_THROUGH_OTHER_FUNCTIONS.values(),
                         ids=SHOWN_ONLY_THROUGH_OTHER_FUNCTIONS.keys())
def test_what_kept_code_reads_of_other_functions_keeps_them(source, expected):
    facts = _whole_project_facts(source)
    full = visible(_check_text(source, "module.py", RULES, facts))
    skipped = visible(_check_text(source, "module.py", RULES, facts, skip_hidden=True))
    assert [(f.line, f.code, f.severity, f.fix is not None) for f in full] == expected
    assert skipped == full


def test_a_form_feed_libcst_rejects_is_not_blanked_away():
    # CPython accepts the form feed before `def f`; libcst's tokenizer does not. Leaving the
    # method out would turn the file's SL000 into findings.
    source = "import torch\n\nclass A:\n\f    def f(self, t):\n        return t.nonzero()\n\n\ndef forward(x):\n    return x.nonzero()\n"
    facts = _whole_project_facts(source)
    assert blank_hidden_functions(source, guarded_tree(source)[0], facts, RULES) is None
    shown = visible(_check_source(source, "module.py", None, facts, skip_hidden=True))
    assert [f.code for f in shown] == ["SL000"]
    assert shown == visible(_check_source(source, "module.py", None, facts))


def test_code_too_deep_for_the_analysis_is_not_blanked_away():
    # The whole file's analysis runs out of stack on the 800-term sum (one SL000): leaving
    # the function out would show the findings of the rest instead.
    chain = " + ".join(["t"] * 800)
    source = f"import torch\n\n\ndef unreached(t):\n    return ({chain}).nonzero()\n\n\ndef forward(x):\n    return x.nonzero()\n"
    facts = _whole_project_facts(source)
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # CPython's default, whatever ran before
    try:
        full = visible(_check_source(source, "module.py", None, facts))
        skipped = visible(_check_source(source, "module.py", None, facts, skip_hidden=True))
    finally:
        sys.setrecursionlimit(saved)
    assert [(f.code, f.message) for f in full] == [("SL000", "cannot analyse: nested too deeply (RecursionError)")]
    assert skipped == full


HANDED_LOADER = textwrap.dedent(
    '''\
    import torch
    from torch.utils.data import DataLoader


    def consume(model, rows, where):
        for x, y in rows:
            x = x.to(where, non_blocking=True)
            print(model(x), y)


    def run(net, rows, where):
        consume(net, rows, where)


    def main():
        model = torch.nn.Linear(3, 3).cuda()
        ds = torch.utils.data.TensorDataset(torch.rand(10, 3), torch.zeros(10).long())
        run(model, DataLoader(ds, batch_size=2), "cuda")


    if __name__ == "__main__":
        main()
    '''
)


def test_a_function_a_loader_is_handed_through_is_kept(tmp_path):
    # SL402 follows `main`'s unpinned loader through `run` into `consume`'s copy: with
    # `run` left out, the default check lost that shown finding.
    path = _project(tmp_path, HANDED_LOADER)
    (tmp_path / "pkg" / "net.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    everything = _shown([path], tmp_path, include_cold=True)
    assert (7, "SL402") in {(f.line, f.code) for f in visible(everything)}
    assert _shown([path], tmp_path) == visible(everything)
    source = path.read_text()
    blanked = blank_hidden_functions(source, guarded_tree(source)[0], facts_for_files([path])[str(path.resolve())], RULES)
    assert blanked is None or "def run(" in blanked.source
