"""The project index: hotness along calls, cold regions, residency, and independence
from how synclint is invoked (which files, which working directory, which spelling)."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.engine import check_source
from synclint.project import AT_CALL_SITES, COLD, UNREACHED, Context, facts_for_files, facts_for_source
from synclint.project.run_once import MODULE_CODE
from synclint.runner import RunOptions, lint_files, lint_paths

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "project"
PACKAGE = Path("src") / "detkit"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A copy of the cross-file fixture project (so caches and edits stay private)."""
    root = tmp_path / "detkit-project"
    shutil.copytree(FIXTURE, root)
    return root


def _lint(paths, include_cold=False, cache=None, jobs=1):
    options = RunOptions(jobs=jobs, use_cache=cache is not None, cache_dir=cache, include_cold=include_cold)
    return lint_paths(paths, Settings(root=FIXTURE), options)


def _rows(findings, root: Path):
    """(relative path, line, column, code, context, message) for comparisons across spellings."""
    rows = []
    for f in findings:
        path = Path(f.path)
        path = path if path.is_absolute() else Path.cwd() / path
        rows.append((Path(os.path.realpath(path)).relative_to(root.resolve()).as_posix(), f.line, f.column, f.code,
                     f.context, f.why, f.message))
    return sorted(rows)


# -- the cross-file package ------------------------------------------------------------

def test_cross_file_findings_and_their_contexts(project: Path):
    found = {(Path(f.path).name, f.line, f.code): f for f in _lint([project], include_cold=True)}
    # Interprocedural: a helper that syncs on its parameter (``x.nonzero()``) is reported at
    # the call from another module, in the caller's context; its own line is hidden.
    call = found[("model.py", 15, "SL101")]
    assert (call.column, call.context, call.why) == (22, "hot", "`Head.forward`")
    assert call.message.startswith("`nonzero_tuple()` (it calls `.nonzero()` on its parameter `x`) syncs the host")
    helper = found[("ops.py", 5, "SL101")]
    assert (helper.context, helper.why) == ("unknown", AT_CALL_SITES)
    # A per-step helper found by the call graph, not by its name (SL403 is gated by hotness).
    ctor = found[("train.py", 7, "SL403")]
    assert ctor.context == "hot" and ctor.why == "the loop over `loader` in `train` -> `grad_norm`"
    # The body of a loop over batches is hot.
    assert found[("train.py", 24, "SL202")].context == "hot"
    # Nothing calls it: unknown.
    assert found[("ops.py", 13, "SL101")].context == "unknown"
    # Cold: construction, periodic logging, error paths, after the loop, data pipeline.
    assert found[("model.py", 12, "SL201")].why == "construction or setup"
    assert found[("train.py", 14, "SL201")].context == "cold"
    assert found[("train.py", 25, "SL201")].why == "error path"
    assert found[("train.py", 27, "SL201")].why.startswith("after the loop over batches")
    assert found[("pipeline.py", 6, "SL103")].why == "data pipeline (reached from `Boxes.__getitem__`)"
    cold = {key for key, f in found.items() if f.context == "cold"}
    assert cold == {("model.py", 12, "SL201"), ("train.py", 14, "SL201"), ("train.py", 25, "SL201"),
                    ("train.py", 27, "SL201"), ("pipeline.py", 6, "SL103")}


def test_residency_across_the_project(project: Path):
    lines = {(Path(f.path).name, f.line) for f in _lint([project], include_cold=True)}
    assert ("model.py", 16) not in lines  # self.table: created with device="cpu" in __init__
    assert ("model.py", 18) not in lines  # stats = to_host(x): a helper in another module returns host tensors
    assert ("ops.py", 9) in lines  # ...the copy inside it is what syncs
    assert ("model.py", 22) not in lines  # the CPU branch of `if x.is_cuda:`
    assert ("model.py", 20) in lines  # the CUDA branch


def test_cold_and_unreached_findings_are_hidden_by_default(project: Path):
    shown = _lint([project])
    assert shown and all(f.context == "hot" for f in shown)
    everything = _lint([project], include_cold=True)
    hidden = [f for f in everything if f not in shown]
    assert sorted(f.context for f in hidden) == ["cold"] * 5 + ["unknown"] * 2
    unknown = sorted((Path(f.path).name, f.line, f.why) for f in hidden if f.context == "unknown")
    assert unknown == [("ops.py", 5, AT_CALL_SITES), ("ops.py", 13, UNREACHED)]


def test_unknown_findings_of_a_source_on_its_own_are_shown():
    """Without a project, "nothing calls it" means nothing: the API shows such findings."""
    (finding,) = check_source("import torch\ndef f(x: torch.Tensor):\n    return x.item()\n")
    assert (finding.context, finding.why) == ("unknown", "")


# -- independence from the invocation ------------------------------------------------------

def test_a_file_named_alone_gets_the_findings_of_a_full_run(project: Path):
    ops = project / PACKAGE / "ops.py"
    alone = _rows(_lint([ops], include_cold=True), project)
    full = [row for row in _rows(_lint([project], include_cold=True), project) if row[0].endswith("ops.py")]
    assert alone == full and any(row[4] == "hot" for row in alone)


def test_findings_do_not_depend_on_the_order_of_files(project: Path):
    files = sorted(project.rglob("*.py"))
    settings = Settings(root=project)
    forward = lint_files(files, settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    backward = lint_files(list(reversed(files)), settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert forward == backward


def test_findings_do_not_depend_on_the_working_directory_or_path_spelling(project: Path, monkeypatch):
    expected = _rows(_lint([project / PACKAGE / "ops.py"], include_cold=True), project)
    spellings = [
        (project, "src/detkit/ops.py"),
        (project, "./src/detkit/../detkit/ops.py"),
        (project / PACKAGE, "ops.py"),
        (project.parent, f"{project.name}/src/detkit/ops.py"),
        (Path("/"), str(project / PACKAGE / "ops.py")),
    ]
    for cwd, spelled in spellings:
        monkeypatch.chdir(cwd)
        assert _rows(_lint([spelled], include_cold=True), project) == expected, (cwd, spelled)


def test_a_symlinked_spelling_resolves_to_the_same_file(project: Path, tmp_path: Path):
    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    facts = facts_for_files([link / PACKAGE / "ops.py", project / PACKAGE / "ops.py"])
    assert len(facts) == 1


def test_editing_a_caller_rechecks_the_callee_through_the_cache(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    ops = project / PACKAGE / "ops.py"
    before = {f.line: f.why for f in _lint([ops], include_cold=True, cache=cache)}
    assert before[13] == UNREACHED
    model = project / PACKAGE / "model.py"
    text = model.read_text()
    model.write_text(text.replace("from .ops import nonzero_tuple, to_host", "from .ops import nonzero_tuple, to_host, unused_helper")
                     .replace("        first = self.table[0].item()", "        first = self.table[0].item()\n        unused_helper(x)"))
    after = {f.line: f.why for f in _lint([ops], include_cold=True, cache=cache)}
    # ops.py did not change; its facts did (a hot call now reports its sync on `x`), so its
    # cached findings did not stand
    assert after[13] == AT_CALL_SITES


def test_the_index_cache_gives_the_same_facts(project: Path, tmp_path: Path):
    files = sorted(project.rglob("*.py"))
    cold = facts_for_files(files, tmp_path / "c")
    warm = facts_for_files(files, tmp_path / "c")
    uncached = facts_for_files(files, None)
    assert cold == warm == uncached


def _counting_facts(monkeypatch) -> list[int]:
    """How often the store computes a project's facts (rather than reading them back)."""
    from synclint.project import store

    computed = []
    real = store.facts_for_project

    def counted(*args, **kwargs):
        computed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "facts_for_project", counted)
    return computed


def test_an_edit_that_leaves_every_summary_as_it_was_computes_the_facts_again(project: Path, tmp_path: Path,
                                                                               monkeypatch):
    """The facts also read the files' text (a string or a comment may name a class: see
    tests/test_unnamed_classes.py): no edit keeps the last state's facts."""
    files = sorted(project.rglob("*.py"))
    cache = tmp_path / "c"
    before = facts_for_files(files, cache)
    computed = _counting_facts(monkeypatch)
    model = project / PACKAGE / "model.py"
    # A comment at the end, and layout within a line: the same summary.
    model.write_text(model.read_text().replace("from .ops import", "from .ops  import") + "# tuned\n")
    assert facts_for_files(files, cache) == before == facts_for_files(files, None)
    assert len(computed) == 2
    # The new state is the cached one now: the next run reads it back without summarising.
    assert facts_for_files(files, cache) == before and len(computed) == 2


def test_a_summaries_entry_that_no_longer_unpickles_is_summarised_again(project: Path, tmp_path: Path):
    import pickle

    from synclint.project import store

    files = sorted(project.rglob("*.py"))
    cache = tmp_path / "c"
    facts_for_files(files, cache)
    entry = next((cache / store.INDEX_ENTRIES).glob("*.summaries.pickle"))
    spoilt = {digest: b"spoilt" for digest in pickle.loads(entry.read_bytes())}
    entry.write_bytes(pickle.dumps(spoilt))
    model = project / PACKAGE / "model.py"
    model.write_text(model.read_text() + "x = 1\n")
    assert facts_for_files(files, cache) == facts_for_files(files, None)


def test_an_edit_that_changes_a_summary_computes_the_facts_again(project: Path, tmp_path: Path, monkeypatch):
    files = sorted(project.rglob("*.py"))
    cache = tmp_path / "c"
    facts_for_files(files, cache)
    computed = _counting_facts(monkeypatch)
    model = project / PACKAGE / "model.py"
    model.write_text("\n" + model.read_text())  # every line moves down
    after = facts_for_files(files, cache)
    assert len(computed) == 1 and after == facts_for_files(files, None)
    # A new file with nothing in it changes no summary but the project's files: computed again.
    (project / PACKAGE / "empty.py").write_text("# nothing\n")
    files = sorted(project.rglob("*.py"))
    assert facts_for_files(files, cache) == facts_for_files(files, None) and len(computed) == 4


# -- hot and cold forms, one file each -------------------------------------------------------

def _contexts(source: str, include_cold=True) -> dict[tuple[int, str], str]:
    findings = check_source(textwrap.dedent(source), "example.py", include_cold=include_cold)
    return {(f.line, f.code): f.context for f in findings}


@pytest.mark.parametrize(
    ("source", "line", "expected"),
    [
        # nn.Module.forward and modules called as self.head(x)
        ("""
         import torch
         class Head(torch.nn.Module):
             def forward(self, x):
                 return helper(x)
         def helper(x):
             return (x > 0).nonzero()
         """, 7, "hot"),
        ("""
         import torch
         class Inner(torch.nn.Module):
             def predict(self, x):
                 return (x > 0).nonzero()
             def forward(self, x):
                 return self.predict(x)
         class Outer(torch.nn.Module):
             def __init__(self):
                 super().__init__()
                 self.inner = Inner()
             def forward(self, x):
                 return self.inner(x)
         """, 5, "hot"),
        # losses (functions and classes)
        ("""
         import torch
         def dice_loss(p, t):
             return p.nonzero()
         """, 4, "hot"),
        # the body of a loop over a DataLoader
        ("""
         import torch
         def fit(model, train_loader):
             for batch in train_loader:
                 print(model(batch).item())
         """, 5, "hot"),
        # Lightning / HF steps and optimizer step
        ("""
         import torch
         class Lit:
             def training_step(self, batch, i):
                 return batch.nonzero()
         """, 5, "hot"),
        ("""
         import torch
         class MyOpt(torch.optim.Optimizer):
             def step(self, closure=None):
                 for p in self.params:
                     if p.grad.abs().max() > 1:
                         pass
         """, 6, "hot"),
        # cold: construction and setup
        ("""
         import torch
         class Net(torch.nn.Module):
             def build_anchors(self, x):
                 return x.nonzero()
             def forward(self, x):
                 return x
         """, 5, "cold"),
        # cold: periodic guards and what they call
        ("""
         import torch
         def fit(model, loader):
             for step, batch in enumerate(loader):
                 loss = model(batch)
                 if step % 50 == 0:
                     report(loss)
         def report(loss):
             print(loss.item())
         """, 9, "cold"),
        # cold: error paths written as torch._assert(False, ...)
        ("""
         import torch
         def forward(self, x):
             torch._assert(False, f"bad {x.sum().item()}")
         """, 4, "cold"),
        # cold: export / ONNX
        ("""
         import torch
         def export_onnx(x):
             return x.nonzero()
         """, 4, "cold"),
        # cold: test code
        ("""
         import torch
         def test_forward(x):
             return x.nonzero()
         """, 4, "cold"),
        # cold: data pipeline reached from Dataset.__getitem__, wherever the file lives
        ("""
         import torch
         class Images(torch.utils.data.Dataset):
             def __getitem__(self, i):
                 return normalize(self.items[i])
         def normalize(img):
             return img.nonzero()
         """, 7, "cold"),
        ("""
         import torch
         def pad_batch(samples):
             return torch.stack(samples).nonzero()
         loader = torch.utils.data.DataLoader(ds, collate_fn=pad_batch)
         """, 4, "cold"),
        # cold: after `if not should_log: return`, and optimizer state initialisation
        ("""
         import torch
         class Trainer:
             def train_step(self, batch):
                 loss = batch.sum()
                 if not self.should_log(self.step):
                     return loss
                 print(loss.item())
         """, 8, "cold"),
        ("""
         import torch
         class Adam(torch.optim.Optimizer):
             def step(self, closure=None):
                 for p in self.params:
                     state = self.state[p]
                     if len(state) == 0:
                         state["max"] = p.abs().max().item()
         """, 8, "cold"),
        # cold: an observer, whose forward returns its input unchanged (calibration statistics)
        ("""
         import torch
         class HistObserver(torch.nn.Module):
             def forward(self, x_orig):
                 if x_orig.numel() == 0:
                     return x_orig
                 x = x_orig.detach()
                 if x.min() < self.lo:
                     self.lo.copy_(x.min())
                 return x_orig
         """, 8, "cold"),
        # an identity forward that records nothing is no observer (a barrier, a check)
        ("""
         import torch
         class Barrier(torch.nn.Module):
             def forward(self, x):
                 if x.isnan().any():
                     print("nan")
                 return x
         """, 5, "hot"),
        # an identity-looking forward that changes its input in place, or returns something else, computes
        ("""
         import torch
         class Clip(torch.nn.Module):
             def forward(self, x):
                 if x.max() > 1:
                     x.clamp_(max=1)
                 return x
         """, 5, "hot"),
        ("""
         import torch
         class Mask(torch.nn.Module):
             def forward(self, x):
                 if x.max() > 1:
                     x[x > 1] = 1
                 return x
         """, 5, "hot"),
        ("""
         import torch
         class Norm(torch.nn.Module):
             def forward(self, x):
                 if x.max() > 1:
                     x = x / x.max()
                 return x
         """, 5, "hot"),
        # cold: a cache kept on the module, filled when it misses or is stale (once per shape or key)
        ("""
         import torch
         class Attn(torch.nn.Module):
             def forward(self, x):
                 n = x.shape[1]
                 if self.rel is None or self.rel.shape[1] != n:
                     self.rel = torch.arange(n).cuda()
                 return x + self.rel
         """, 7, "cold"),
        ("""
         import torch
         class Experts(torch.nn.Module):
             def forward(self, x):
                 key = (x.device, x.size(0))
                 counts = self._counts.get(key)
                 if counts is None:
                     counts = torch.tensor([x.size(0)], device=x.device)
                     self._counts[key] = counts
                 return x * counts
         """, 8, "cold"),
        # cold: an exception handler (a diagnostic before re-raising); the try body stays hot
        ("""
         import torch
         class Gather(torch.nn.Module):
             def forward(self, src, index):
                 try:
                     return src.index_select(0, index)
                 except RuntimeError:
                     if index.min() < 0:
                         raise IndexError("negative index")
                     raise
         """, 8, "cold"),
        ("""
         import torch
         class Gather(torch.nn.Module):
             def forward(self, src, index):
                 try:
                     return src[index.nonzero()]
                 except RuntimeError:
                     raise
         """, 6, "hot"),
        # a None default filled into a local runs whenever the caller passes None: still hot
        ("""
         import torch
         class Net(torch.nn.Module):
             def forward(self, x, offsets=None):
                 if offsets is None:
                     offsets = torch.tensor([0, 1], device=x.device)
                 return x + offsets
         """, 6, "hot"),
        # shape arithmetic with % is not a periodic guard
        ("""
         import torch
         class Net(torch.nn.Module):
             def forward(self, x):
                 if x.shape[-1] % self.patch != 0:
                     return x.nonzero()
                 return x
         """, 6, "hot"),
        # unknown: nothing reaches it
        ("""
         import torch
         def helper(x):
             return x.nonzero()
         """, 4, "unknown"),
    ],
)
def test_hot_and_cold_forms(source, line, expected):
    found = _contexts(source)
    contexts = {context for (at, _code), context in found.items() if at == line}
    assert contexts == {expected}, found


def test_a_hot_call_under_a_periodic_guard_does_not_make_the_callee_hot():
    source = """
        import torch
        class Net(torch.nn.Module):
            def forward(self, x):
                if self.steps % 100 == 0:
                    self.visualise(x)
                return x
            def visualise(self, x):
                return x.nonzero()
        """
    assert _contexts(source) == {(9, "SL101"): "cold"}
    assert _contexts(source, include_cold=False) == {}


# -- residency forms -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "source",
    [
        # attributes created with device="cpu" in __init__, used in another method
        """
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.counts = torch.zeros(10, device="cpu")
            def forward(self, x):
                return self.counts.nonzero()
        """,
        # ... also under the name of a tensor view (`.data`, `.T`)
        """
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.data = torch.zeros(10, device="cpu")
                self.T = torch.zeros(10).cpu()
            def forward(self, x):
                return self.data.nonzero(), self.T.nonzero()
        """,
        # .numpy() on its own only runs on a host tensor
        """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return x.numpy()
        """,
        # a factory without a device (no default device set)
        """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                r = torch.rand([])
                if r < 0.5:
                    return x
                return x
        """,
        # the CPU branch of `if x.is_cuda:` and of a device.type guard
        """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if x.is_cuda:
                    return x
                return x
            def other(self, x):
                if not x.is_cuda:
                    return x.nonzero()
                if x.device.type == "cpu":
                    return x.nonzero()
                return x
        """,
        # host returns of helpers, also in other modules
        """
        import torch
        def stats(x):
            return x.detach().cpu()
        class M(torch.nn.Module):
            def forward(self, x):
                s = stats(x)
                return s.nonzero()
        """,
    ],
)
def test_host_tensors_are_not_flagged(source):
    found = {(line, code) for (line, code), _ in _contexts(source).items()}
    # only the read-back that moves data to the host may be flagged, never the host-side ops
    assert all(code == "SL201" for _, code in found), found


def test_is_cuda_guard_keeps_the_device_branch_flagged():
    source = """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if x.is_cuda:
                    return x.nonzero()
                return x.nonzero()
            def unguarded(self, x):
                if x.is_cuda:
                    y = x.nonzero()
                return x.nonzero()
        """
    # After the early return, x is on the host; without one, the code below runs for both.
    assert _contexts(source) == {(6, "SL101"): "hot", (10, "SL101"): "unknown", (11, "SL101"): "unknown"}


def test_isinstance_checks_narrow_unions():
    source = """
        import torch
        class M(torch.nn.Module):
            def forward(self, x, scale):
                if torch.is_tensor(scale):
                    x = x * scale
                else:
                    x = x * float(scale)
                if isinstance(x, torch.Tensor):
                    return float(x.sum())
                return x
        """
    assert set(_contexts(source)) == {(10, "SL201")}


def test_facts_of_a_source_on_its_own():
    facts = facts_for_source("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    assert facts.context_at(4).kind == "hot"
    assert facts.context_at(1) == Context(COLD, MODULE_CODE)  # module code outside a loop: runs once


def test_math_named_like_logging_stays_hot():
    source = """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return log_softmax_mask(x)
        def log_softmax_mask(x):
            return x.nonzero()
        def log_metrics(x):
            return x.nonzero()
        """
    # (``log_softmax_mask`` syncs on its parameter: reported at the call in ``forward``,
    # which a logging helper, cold on its own account, would not be.)
    assert _contexts(source) == {(5, "SL101"): "hot", (7, "SL101"): "unknown", (9, "SL101"): "cold"}


def test_a_huge_tree_is_split_below_its_root(tmp_path: Path, monkeypatch):
    from synclint.project import layout

    monkeypatch.setattr(layout, "MAX_PROJECT_FILES", 3)
    layout.project_root.cache_clear()
    layout._file_count.cache_clear()
    try:
        (tmp_path / "setup.py").write_text("")
        for sub in ("a", "b"):
            (tmp_path / sub).mkdir()
            for i in range(3):
                (tmp_path / sub / f"m{i}.py").write_text("")
        (tmp_path / "top.py").write_text("")
        assert layout.project_root(tmp_path / "a") == tmp_path / "a"
        assert layout.project_root(tmp_path) == tmp_path and layout.is_shallow(tmp_path, tmp_path)
        assert [p.name for p in layout.project_files(tmp_path, shallow=True)] == ["setup.py", "top.py"]
    finally:
        layout.project_root.cache_clear()
        layout._file_count.cache_clear()


def test_the_file_count_that_splits_a_tree_skips_what_the_project_leaves_out(tmp_path: Path):
    from synclint.project import layout

    for folder in ("pkg", "pkg/sub", "pkg/__pycache__", "pkg/.hidden", "build", "env"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text("")
        (tmp_path / folder / "notes.txt").write_text("")
    (tmp_path / "env" / "pyvenv.cfg").write_text("")  # a virtualenv
    (tmp_path / "top.py").write_text("")
    layout._file_count.cache_clear()
    try:
        listed = layout.project_files(tmp_path)
        assert [p.relative_to(tmp_path).as_posix() for p in listed] == ["pkg/m.py", "pkg/sub/m.py", "top.py"]
        assert layout._file_count(tmp_path) == len(listed)
    finally:
        layout._file_count.cache_clear()


def test_the_index_is_built_with_the_collector_paused(project: Path, monkeypatch):
    import gc

    from synclint.project import store

    enabled_while_building = []
    facts_for_project = store.facts_for_project

    def spy(*args, **kwargs):
        enabled_while_building.append(gc.isenabled())
        return facts_for_project(*args, **kwargs)

    monkeypatch.setattr(store, "facts_for_project", spy)
    assert gc.isenabled()
    facts = facts_for_files(sorted(project.rglob("*.py")))
    assert facts and enabled_while_building == [False]
    assert gc.isenabled()  # as it was


def test_cli_include_cold_and_the_context_in_every_format(project: Path):
    import json

    from click.testing import CliRunner

    from synclint.cli import cli

    runner = CliRunner()
    default = json.loads(runner.invoke(cli, ["check", "--no-cache", "--output-format", "json", str(project)]).output)
    cold = json.loads(
        runner.invoke(cli, ["check", "--no-cache", "--include-cold", "--output-format", "json", str(project)]).output
    )
    assert {d["context"] for d in default} == {"hot"}
    assert {d["context"] for d in cold} == {"hot", "cold", "unknown"}
    text = runner.invoke(cli, ["check", "--no-cache", "--include-cold", str(project)]).output
    assert "[cold: construction or setup]" in text and "[hot: the loop over `loader` in `train`]" in text
    sarif = json.loads(
        runner.invoke(cli, ["check", "--no-cache", "--include-cold", "--output-format", "sarif", str(project)]).output
    )
    contexts = {r["properties"]["context"] for r in sarif["runs"][0]["results"]}
    assert contexts == {"hot", "cold", "unknown"}


def test_a_parameter_takes_the_kind_every_call_site_passes():
    source = """
        import torch
        class Engine:
            def step(self, grads):
                total_norm = torch.stack([g.norm() for g in grads]).norm()
                self.clip(total_norm, 2)
            def clip(self, norm: float, limit):
                if norm > limit:
                    return limit / norm
                return 1.0
        class Optim(torch.optim.Optimizer):
            def step(self, closure=None):
                return Engine().step(self.grads)
        def scale(x, factor):
            if factor > 1:
                return x
        scale(1.0, 2)
        """
    found = _contexts(source)
    assert (8, "SL202") in found  # `norm: float`, but the only caller passes a tensor
    assert not any(line == 15 for line, _ in found)  # its caller passes a Python number


def test_self_calls_in_a_base_class_reach_the_overrides():
    source = """
        import torch
        class Metric(torch.nn.Module):
            def forward(self, preds, target):
                self.update(preds, target)
            def update(self, preds, target):
                raise NotImplementedError
        class Accuracy(Metric):
            def update(self, preds, target):
                self.correct += _safe_divide(preds, target)
        def _safe_divide(num, denom):
            return torch.tensor(0.0, device=num.device)
        """
    assert _contexts(source) == {(12, "SL403"): "hot"}


def test_a_module_s_function_is_not_the_only_project_method_of_its_name():
    # ``dist.gather`` is torch.distributed's function; the project's one ``gather`` method
    # (of an object of unknown class, ``table.gather_rows`` below, it would be) is not
    # what runs, so its sync is not made hot by ``forward``.
    source = """
        import torch
        import torch.distributed as dist
        class Gather(torch.nn.Module):
            def forward(self, x, table):
                dist.gather(x, None, 0)
                return table.gather_rows(x)
        class Sharded:
            def gather(self, out: torch.Tensor | None):
                if out:
                    raise ValueError("out must be None")
            def gather_rows(self, x):
                return x.nonzero()
        """
    assert _contexts(source) == {(10, "SL202"): "unknown", (13, "SL101"): "hot"}


def test_every_definition_of_a_redefined_function_takes_the_name_s_context():
    # ``if PT2: def scatter ... else: def scatter ...`` (pytorch_geometric): the call reaches
    # the name, whichever definition the import chose; the first one's error path stays cold.
    source = """
        import torch
        NEW = hasattr(torch, "compile")
        if NEW:
            def scatter(src, index):
                if src.dim() > 8:
                    raise ValueError(f"too many dims: {src.sum().item()}")
                return src.max().item()
        else:
            def scatter(src, index):
                return index.max().item()
        class Net(torch.nn.Module):
            def forward(self, x, index):
                return scatter(x, index)
        """
    assert _contexts(source) == {(7, "SL201"): "cold", (8, "SL201"): "hot", (11, "SL201"): "hot"}


def test_a_build_helper_called_from_forward_is_hot():
    source = """
        import torch
        class Mixer(torch.nn.Module):
            def forward(self, x):
                return build_index(x)
        def build_index(x):
            return int(x[-1].item())
        def build_anchors(x):
            return x.nonzero()
        """
    # (``build_index`` syncs on its parameter: reported at the call in ``forward``.)
    assert _contexts(source) == {(5, "SL201"): "hot", (7, "SL201"): "unknown", (9, "SL101"): "cold"}


def test_backward_and_step_of_a_training_engine_module_are_roots():
    source = """
        import torch
        class Engine(torch.nn.Module):
            def forward(self, x):
                return x
            def backward(self, loss):
                self.total += loss.mean().item()
            def step(self):
                clip(self.parameters())
        def clip(params):
            return max(p.grad.abs().max() for p in params)
        """
    assert _contexts(source) == {(7, "SL201"): "hot", (11, "SL202"): "hot"}  # builtin max compares with bool()


@pytest.mark.parametrize("cache", [False, True])
def test_a_test_file_s_twin_outside_tests_is_not_test_code(tmp_path: Path, cache: bool):
    """Summaries are shared by files of equal content: whether a file is test code comes
    from its own path, never from its twin's (``src/a.py`` was once cold as "test code")."""
    source = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    for name in ("src/a.py", "tests/test_a.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    options = RunOptions(jobs=1, use_cache=cache, cache_dir=tmp_path / "cache" if cache else None, include_cold=True)
    found = {(Path(f.path).relative_to(tmp_path).as_posix(), f.context, f.why) for f in
             lint_paths([tmp_path / "src", tmp_path / "tests"], Settings(root=tmp_path), options)}
    assert ("tests/test_a.py", "cold", "test code") in found
    assert not [row for row in found if row[0] == "src/a.py" and row[1] == "cold"]


def test_the_index_and_the_per_file_analysis_share_one_loader_vocabulary() -> None:
    """`for batch in batch_iter:` is a per-step loop for the project index (hotness) and for
    the per-file analysis alike (they once had two regexes that disagreed on it)."""
    import ast

    import libcst as cst

    from synclint.analysis.loaders import is_loader
    from synclint.project.summary import is_batch_iterable

    for name in ("batch_iter", "train_loader", "dl", "batches"):
        assert is_loader(cst.parse_expression(name)), name
        assert is_batch_iterable(ast.parse(name, mode="eval").body, set()) == name
    assert not is_loader(cst.parse_expression("items"))


def test_a_cold_chain_names_its_root_once() -> None:
    from synclint.project.hotness import called_only_from

    first = called_only_from("test or benchmark code")
    assert first == "called only from test or benchmark code"
    assert called_only_from(first) == first
    assert called_only_from("construction or setup (`__init__`)") == "called only from construction or setup code"


def _lint_project(root: Path, files: dict[str, str]) -> list:
    """Findings (``--include-cold``) of a project of ``files`` under ``root``."""
    (root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    for name, text in files.items():
        (root / name).write_text(text)
    return lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False, include_cold=True))


#: Another module's class of the name ``model.py`` defines, whose ``route`` syncs nothing.
_OTHER_LAYER = "class Layer:\n    def route(self, x):\n        return x\n"
#: ``model.py``: its own ``Layer`` (whose ``route`` syncs) and a decoder built with ``{init}``.
_SHADOWED_MODEL = """
import torch


class Layer:
    def route(self, x):
        return torch.nonzero(x)


class Decoder(torch.nn.Module):
    def __init__(self, local):
        super().__init__()
{init}
    def forward(self, x):
        return self.mlp.route(x)
"""


def test_a_class_a_method_imports_over_the_module_s_own_name_is_not_the_module_s(tmp_path: Path):
    # nanotron's Qwen2DecoderLayer.__init__ imports `Qwen2MoELayer` from nanotron.nn.moe, beside
    # the module's own unused class of that name: `self.mlp` is not the module's class.
    init = "        if local:\n            from moe import Layer\n        self.mlp = Layer()\n"
    findings = _lint_project(tmp_path, {"moe.py": _OTHER_LAYER, "model.py": _SHADOWED_MODEL.format(init=init)})
    assert [(Path(f.path).name, f.line, f.code, f.context, f.why) for f in findings] == [
        ("model.py", 7, "SL101", "unknown", UNREACHED),
    ]


def test_an_import_in_a_nested_function_shadows_the_module_s_class_only_there(tmp_path: Path):
    # `from moe import Layer` inside `other()` binds `Layer` in `other` only: `__init__`'s own
    # `self.mlp = Layer()` is still the module's class, whose `route` the step runs.
    init = ("        def other():\n            from moe import Layer\n            return Layer()\n\n"
            "        self.alt = other\n        self.mlp = Layer()\n")
    findings = _lint_project(tmp_path, {"moe.py": _OTHER_LAYER, "model.py": _SHADOWED_MODEL.format(init=init)})
    assert [(Path(f.path).name, f.line, f.code, f.context, f.why) for f in findings] == [
        ("model.py", 7, "SL101", "hot", "`Decoder.forward` -> `Layer.route`"),
    ]


def test_a_file_of_another_array_framework_is_not_torch_code(tmp_path: Path):
    # RT-DETR ships rtdetr_paddle/ beside rtdetr_pytorch/: paddle tensors sync no CUDA stream of torch's.
    layer = "class Attention({base}):\n    def forward(self, x):\n        return x.nonzero()\n"
    findings = _lint_project(tmp_path, {
        "paddle_layer.py": "import paddle\n" + layer.format(base="paddle.nn.Layer"),
        "both.py": "import paddle\nimport torch\n" + layer.format(base="torch.nn.Module"),
    })
    assert [(Path(f.path).name, f.code, f.context, f.why) for f in findings] == [
        ("both.py", "SL101", "hot", "`Attention.forward`"),
        ("paddle_layer.py", "SL101", "cold", "another framework's code (it imports paddle, not torch)"),
    ]


# -- a project that never names a device ------------------------------------------------------

_CPU_TRAINING = """\
import torch


def update(model, optimizer, batches):
    for obs, act in batches:
        logp = model(obs)
        keep = (act > 0).nonzero()
        loss = -logp[keep].mean()
        optimizer.zero_grad()
        loss.backward()
        print(loss.item())
        optimizer.step()
"""


@pytest.mark.parametrize(
    ("extra", "host_only"),
    [
        ({}, True),
        ({"README.md": "Trains fast on a GPU.\n"}, True),  # prose is no configuration
        ({"configs/run.yaml": "device: cuda\n"}, False),
        ({"run.sh": "python train.py --gpu 0\n"}, False),
        ({"model.py": "import torch\n\ndef make(device):\n    return torch.nn.Linear(4, 2).to(device)\n"}, False),
        ({"fit.py": "import lightning\n"}, False),  # a library that places the tensors itself
        # more libraries that pick a GPU when there is one (YOLO's, SentenceTransformer's device=None)
        ({"detect.py": "from ultralytics import YOLO\n"}, False),
        ({"embed.py": "from sentence_transformers import SentenceTransformer\n"}, False),
        ({"agent.py": "from sb3_contrib import RecurrentPPO\n"}, False),
        # torchrun's local rank names a GPU (init_process_group() picks NCCL for it); pinning is for one
        ({"ddp.py": "import torch.distributed as dist\n\ndef wrap(model, local_rank):\n"
                    "    dist.init_process_group()\n    return model.to(local_rank)\n"}, False),
        ({"data.py": "from torch.utils.data import DataLoader\n\ndef load(ds):\n"
                     "    return DataLoader(ds, batch_size=8, pin_memory=True)\n"}, False),
        # DDP over NCCL runs on GPUs only: ``.to(rank)`` names one by its number
        ({"dist.py": "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
                     "def wrap(model, rank, world):\n    dist.init_process_group('nccl', rank=rank, world_size=world)\n"
                     "    return DDP(model.to(rank))\n"}, False),
        ({"train.py": _CPU_TRAINING.replace("        loss.backward()\n", "")}, False),  # no training of its own
    ],
)
def test_a_project_that_trains_and_never_names_a_device_is_cold(tmp_path: Path, extra: dict[str, str], host_only: bool):
    """spinningup's PyTorch algorithms (s29-A) never name a device: their `.item()` reads host
    tensors. Any device word in the code, a configuration file or a script (or a library
    that places tensors itself, or no backward pass: a library's users may be on a GPU) keeps
    the findings."""
    files = {"train.py": _CPU_TRAINING, **extra}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    everything = _lint([tmp_path], include_cold=True)
    train = sorted((f.line, f.code, f.context, f.why) for f in everything if Path(f.path).name == "train.py")
    assert [(line, code) for line, code, _, _ in train] == [(7, "SL101"), (11 if "backward" in files["train.py"] else 10, "SL201")]
    from synclint.project.cold_reasons import HOST_ONLY_PROJECT

    if host_only:
        assert {(context, why) for _, _, context, why in train} == {("cold", HOST_ONLY_PROJECT)}
        assert _lint([tmp_path]) == []
    else:
        assert all(why != HOST_ONLY_PROJECT for _, _, _, why in train)
        assert any(Path(f.path).name == "train.py" for f in _lint([tmp_path]))


def test_a_library_whose_tests_alone_train_is_no_host_only_project(tmp_path: Path):
    """A library of optimizers never names a device, and only its tests take a backward
    pass (on the host, as tests do): its users' parameters may be on a GPU, where
    `.item()` in `step` waits for the device every step."""
    files = {
        "lion/optim.py": "import torch\n\n\nclass Lion(torch.optim.Optimizer):\n    def step(self):\n"
                         "        for group in self.param_groups:\n            for p in group['params']:\n"
                         "                if p.grad.abs().max().item() > 0:\n                    p.add_(p.grad)\n",
        "tests/test_optim.py": "import torch\nfrom lion.optim import Lion\n\n\ndef test_step():\n"
                               "    p = torch.nn.Parameter(torch.ones(3))\n    p.sum().backward()\n    Lion([p]).step()\n",
        "lion/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    from synclint.project.cold_reasons import HOST_ONLY_PROJECT

    found = [f for f in _lint([tmp_path], include_cold=True) if Path(f.path).name == "optim.py"]
    assert found and all(f.why != HOST_ONLY_PROJECT for f in found)


def test_resolved_keys_with_a_directory_memo_equal_realpath(tmp_path: Path, monkeypatch) -> None:
    """However a file's path is spelled (relative, through ``..``, a linked directory, a
    linked file), the key with the run's directory memo is ``os.path.realpath``'s."""
    from synclint.project.store import resolved_key

    real = tmp_path / "real" / "pkg"
    real.mkdir(parents=True)
    (real / "m.py").write_text("x = 1\n")
    (real / "target.py").write_text("y = 2\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (real / "alias.py").symlink_to(real / "target.py")
    monkeypatch.chdir(tmp_path)
    spellings = ["real/pkg/m.py", "linked/pkg/m.py", "real/pkg/../pkg/m.py", str(real / "alias.py"),
                 "linked/pkg/alias.py", "real/pkg/missing.py", "linked/pkg/missing.py"]
    memo: dict[str, str] = {}
    keys = [resolved_key(spelling, memo) for spelling in spellings]
    assert keys == [os.path.realpath(spelling) for spelling in spellings]
    assert keys[0] == keys[1] == keys[2] and keys[3] == keys[4] == str(real / "target.py")


def test_resolved_keys_with_a_directory_memo_resolve_links_before_parent_steps(tmp_path: Path, monkeypatch) -> None:
    """``deep/../m.py`` with ``deep`` a link to ``real/pkg/sub`` is ``real/pkg/m.py`` (the
    link first, then ``..``, as ``os.path.realpath`` and ``Path.resolve`` do), not the
    ``m.py`` beside ``deep`` that cutting ``..`` from the spelling names."""
    from synclint.project.store import resolved_key

    real = tmp_path / "real" / "pkg"
    (real / "sub").mkdir(parents=True)
    (real / "m.py").write_text("x = 1\n")
    (tmp_path / "deep").symlink_to(real / "sub", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for spelling in ["deep/../m.py", str(tmp_path / "deep" / ".." / "m.py")]:
        assert resolved_key(spelling, {}) == os.path.realpath(spelling) == str(Path(spelling).resolve())


_CONSTRUCTION_PASS = """
    import torch


    def class_weights(loader):
        counts = torch.zeros(10, device="cuda")
        for batch in loader:
            labels = batch["label"].cuda()
            present = torch.unique(labels)
            counts[present] += count(labels, present){backward}
        return counts


    def count(labels, present):
        return labels.bincount().nonzero()


    class Trainer:
        def __init__(self, loader):
            self.weights = class_weights(loader)
    {more}"""


@pytest.mark.parametrize(
    ("backward", "more", "expected"),
    [
        ("", "", {(9, "cold"), (15, "cold")}),
        # The loop trains: a trainer that runs its training as it is built.
        ("\n        labels.float().sum().backward()", "", {(9, "hot"), (16, "hot")}),
        # A step calls it too.
        ("", "\n    def training_step(self, loader):\n        return class_weights(loader)\n",
         {(9, "hot"), (15, "hot")}),
        # An epoch hook calls it too: each pass of its loop is an inference step.
        ("", "\n    def on_validation_epoch_end(self, loader):\n        return class_weights(loader)\n",
         {(9, "hot"), (15, "hot")}),
        # It is passed as a value too: whoever holds it may call it every step.
        ("", "\n    def hooks(self):\n        return [class_weights]\n", {(9, "hot"), (15, "hot")}),
        # The trainer is built anew on every pass over the batches: so is its pass.
        ("", "\n\ndef train(train_loader, val_loader):\n    for batch in train_loader:\n        Trainer(val_loader)\n",
         {(9, "hot"), (15, "hot")}),
        # So is the pass a helper of its `__init__` makes (a helper called only from construction).
        ("", "\n\nclass Holder:\n    def __init__(self, loader):\n        self.weights = weights_of(loader)\n\n\n"
             "def weights_of(loader):\n    return class_weights(loader)\n\n\n"
             "def train(train_loader, val_loader):\n    for batch in train_loader:\n        Holder(val_loader)\n",
         {(9, "hot"), (15, "hot")}),
    ],
    ids=["only construction", "the loop trains", "a step calls it", "an epoch hook calls it", "passed as a value",
         "built every step", "built every step, through a helper"],
)
def test_a_pass_over_batches_made_at_construction_runs_once(backward, more, expected):
    # ChangeFormer's `get_alpha`, called from `CDTrainer.__init__`, counts each class's
    # pixels over the training loader to weigh its focal loss: a pass made once, as the
    # trainer is built; nor is `count`, called in that loop, reached from a step.
    source = textwrap.dedent(_CONSTRUCTION_PASS).format(backward=backward, more=more)
    findings = check_source(source, "example.py", include_cold=True)
    found = {(f.line, f.context) for f in findings if f.code in ("SL102", "SL101")}
    assert found == expected, [(f.line, f.code, f.context, f.why) for f in findings]
    if expected == {(9, "cold"), (15, "cold")}:
        whys = {f.line: f.why for f in findings if f.line in (9, 15)}
        assert whys[9] == "runs once: a pass over batches in code called only from construction or setup"
        assert whys[15].startswith("called only where it runs rarely: runs once: a pass over batches"), whys


_TRAINS_AT_CONSTRUCTION = """
    import torch


    class Trainer:
        def __init__(self, model, loader, optimizer):
            self.model, self.loader, self.optimizer = model, loader, optimizer
            self.fit()

        def fit(self):
            for batch in self.loader:
    {body}
                print(loss.item())
    """


@pytest.mark.parametrize(
    "body",
    [
        # The loss's backward pass runs in a method the index cannot resolve.
        "            loss = self.model.compute_losses(batch)\n            self.optimizer.step()",
        "            loss = self.model(batch).sum()\n"
        "            grads = torch.autograd.grad(loss, self.model.parameters())",
        "            loss = self.model.train_step(batch, self.optimizer)",
    ],
    ids=["an optimizer's step", "autograd.grad", "a training step by its name"],
)
def test_a_training_loop_run_at_construction_stays_a_step(body):
    # A trainer that trains as it is built (`Trainer.__init__` calls `self.fit()`): its loop
    # is the run's steps, though no `.backward()` of its own or of a callee the index
    # resolves shows it.
    source = textwrap.dedent(_TRAINS_AT_CONSTRUCTION).replace("{body}", body)
    findings = check_source(source, "example.py", include_cold=True)
    line = source.splitlines().index(next(s for s in source.splitlines() if "loss.item()" in s)) + 1
    assert [(f.line, f.code, f.context, f.why) for f in findings if f.line == line] == [
        (line, "SL201", "hot", "the loop over `self.loader` in `Trainer.fit`")
    ]


def test_a_piece_of_a_split_project_makes_no_pass_at_construction():
    # A huge tree is indexed piece by piece: a step in another piece may call
    # `class_weights` too, so its loop stays the loop over batches it is (as a function
    # called once stays unknown there: see test_called_once).
    from synclint.project.facts import facts_for_project
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    source = textwrap.dedent(_CONSTRUCTION_PASS).format(backward="", more="")
    key = "/project/piece/weights.py"
    whole = facts_for_project(ProjectIndex({key: summarize(source)}, Path("/project/piece")))[key]
    assert whole.context_at(9) == Context(COLD, "runs once: a pass over batches in code called only from construction or setup")
    piece = facts_for_project(ProjectIndex({key: summarize(source)}, Path("/project/piece")), split=True)[key]
    assert (piece.context_at(9).kind, piece.context_at(9).why) == ("hot", "the loop over `loader` in `class_weights`")
    assert (piece.context_at(15).kind, piece.context_at(15).why) == ("hot", "the loop over `loader` in `class_weights` -> `count`")


def test_passes_at_construction_walk_the_call_graph_once(monkeypatch):
    # A chain of helpers each called only from construction, each with a loop over batches:
    # whether each reaches a backward pass is one walk of the call graph, not one per helper
    # (2,000 of them took 20 seconds).
    from synclint.project.facts import facts_for_project
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    n = 300
    lines = ["import torch", "", "", "class Trainer:", "    def __init__(self, loader):",
             "        self.first = helper_0(loader)", "", ""]
    for i in range(n):
        lines += [f"def helper_{i}(loader):", f"    helper_{i + 1}(loader)" if i + 1 < n else "    pass",
                  "    for batch in loader:", "        batch.cuda()", "", ""]
    key = "/project/chain.py"
    index = ProjectIndex({key: summarize("\n".join(lines))}, Path("/project"))
    asked = []
    function = ProjectIndex.function
    monkeypatch.setattr(ProjectIndex, "function", lambda self, fid: asked.append(fid) or function(self, fid))
    facts = facts_for_project(index)[key]
    assert facts.context_at(11).why == "runs once: a pass over batches in code called only from construction or setup"
    assert len(asked) < 30 * n, len(asked)


def test_a_pass_that_a_training_caller_makes_is_a_step():
    # RobustVideoMatting's `Trainer.__init__` runs `self.train()`, whose epochs call
    # `validate()`: a loop over batches every epoch, not a pass made as the trainer is built.
    source = textwrap.dedent("""
        import torch

        class Trainer:
            def __init__(self, loader, valid_loader):
                self.train(loader, valid_loader)

            def train(self, loader, valid_loader):
                for epoch in range(10):
                    self.validate(valid_loader)
                    for batch in loader:
                        self.model(batch.cuda()).sum().backward()

            def validate(self, valid_loader):
                for batch in valid_loader:
                    print(self.model(batch.cuda()).nonzero())
    """)
    found = {(f.line, f.code): f.context for f in check_source(source, "example.py", include_cold=True)}
    assert found[(16, "SL101")] == "hot", found


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("model(batch.cuda())", "hot"),  # a model given to the constructor
        ("self.classifier(batch.cuda())", "hot"),  # a module the object holds
        ("embed(model, batch.cuda())", "hot"),  # a helper that runs one
        ("torch.unique(batch.cuda())", "cold"),  # counting only
    ],
    ids=["a model", "a module attribute", "a helper that runs a model", "counting"],
)
def test_a_pass_at_construction_that_runs_a_model_is_an_inference_pass(call, expected):
    # DiffDock's dataset computes ESM embeddings with `model(toks)` over a loader in its
    # `__init__`: each batch is an inference step, however rarely the pass runs.
    source = textwrap.dedent(f"""
        import torch

        def embed(model, x):
            return model(x)

        class Embedder:
            def __init__(self, model, loader):
                self.embeddings = self.embed_all(model, loader)

            def embed_all(self, model, loader):
                out = []
                for batch in loader:
                    out.append({call}.cpu())
                return out
    """)
    found = {(f.line, f.code): f.context for f in check_source(source, "example.py", include_cold=True)}
    assert found[(14, "SL201")] == expected, found
