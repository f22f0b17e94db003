"""Functions every call of which runs once run once themselves: their code outside loops is
cold (synclint.project.called_once)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint import check_source
from synclint.config import Settings
from synclint.project.called_once import MODULE_SITE, runs_once
from synclint.project.facts import facts_for_project
from synclint.project.hotness import COLD, UNKNOWN_CONTEXT, Context
from synclint.project.index import ProjectIndex
from synclint.project.summary import summarize
from synclint.runner import RunOptions, lint_paths
from tests.notebook_helpers import notebook_of

SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def evaluate(model, inputs):
        total = torch.zeros((), device="cuda")
        for i in range(len(inputs)):
            total += model(inputs[i]).sum()
        return total.item()


    def report(model):
        print(model.weight.cpu())


    def per_pass(model):
        print(model.bias.sum().item())


    def main():
        model = torch.nn.Linear(3, 3).cuda()
        start = model.weight.sum().item()
        print(evaluate(model, [torch.ones(3, device="cuda")]))
        report(model)
        for i in range(3):
            per_pass(model)
            print(model.bias.sum().item())
        for batch in DataLoader(range(10), pin_memory=True):
            print(model(batch.cuda(non_blocking=True)).sum().item())


    if __name__ == "__main__":
        main()
    """)

#: The why of ``main``'s own straight-line code, and of what only it calls there.
FROM_MODULE = runs_once(MODULE_SITE)
FROM_MAIN = runs_once("`main` outside its loops")


def _rows(findings) -> list[tuple]:
    return [(f.code, f.cell, f.line, f.column, f.context, f.why) for f in findings]


def _project(tmp_path: Path, files: dict[str, str]) -> list[Path]:
    (tmp_path / ".git").mkdir()
    paths = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(path)
    return paths


def _lint(tmp_path: Path, paths: list[Path], include_cold: bool = True):
    return lint_paths(paths, Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=include_cold))


def test_main_s_code_outside_its_loops_and_what_only_it_calls_there_run_once(tmp_path: Path):
    paths = _project(tmp_path, {"train.py": SCRIPT})
    assert _rows(_lint(tmp_path, paths)) == [
        ("SL201", None, 9, 12, "cold", FROM_MAIN),  # an evaluation main runs once, before training
        ("SL201", None, 13, 11, "cold", FROM_MAIN),
        ("SL201", None, 17, 11, "unknown", ""),  # called from main's loop: every pass
        ("SL201", None, 22, 13, "cold", FROM_MODULE),  # main's setup
        ("SL201", None, 27, 15, "unknown", ""),  # a loop's body keeps its context
        ("SL201", None, 29, 15, "hot", "the loop over `DataLoader` in `main`"),
    ]
    assert [(f.line, f.column) for f in _lint(tmp_path, paths, include_cold=False)] == [(17, 11), (27, 15), (29, 15)]


def test_a_function_also_called_from_a_loop_is_not_once(tmp_path: Path):
    source = SCRIPT.replace("        per_pass(model)\n", "        per_pass(model)\n        report(model)\n")
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"train.py": source})))
    assert ("SL201", None, 13, 11, "unknown", "") in rows
    assert ("SL201", None, 9, 12, "cold", FROM_MAIN) in rows


def test_a_function_passed_as_a_value_may_run_unseen(tmp_path: Path):
    """``register(report)`` may call it every step: its one visible call proves nothing."""
    source = SCRIPT.replace("    report(model)\n", "    report(model)\n    hooks.append(report)\n")
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"train.py": source})))
    assert ("SL201", None, 13, 11, "unknown", "") in rows


def test_a_step_s_callee_stays_hot_whoever_else_calls_it_once(tmp_path: Path):
    source = textwrap.dedent("""\
        import torch

        def norm(t):
            return t / t.sum().item()

        class Net(torch.nn.Module):
            def forward(self, x):
                return norm(x)

        if __name__ == "__main__":
            print(norm(torch.ones(2, device="cuda")))
        """)
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"net.py": source})))
    assert rows == [("SL201", None, 4, 16, "hot", "`Net.forward` -> `norm`")]


def test_once_flows_across_files_and_through_helpers(tmp_path: Path):
    """``main`` (in one file) calls ``setup`` (in another) once, which calls ``summary`` once."""
    helpers = textwrap.dedent("""\
        import torch

        def summary(model):
            print(model.weight.norm().item())

        def setup():
            model = torch.nn.Linear(2, 2).cuda()
            summary(model)
            return model
        """)
    script = textwrap.dedent("""\
        from helpers import setup

        def main():
            return setup()

        main()
        """)
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"helpers.py": helpers, "run.py": script})))
    # ``setup`` is cold only by a name hot code may break: its caller decides.
    assert rows == [("SL201", None, 4, 11, "cold", runs_once("`setup` outside its loops"))]


def test_a_notebook_helper_called_from_cells_runs_once_per_call():
    text = notebook_of(
        "import torch\n\ndef show(images):\n    print(images.cpu())\n",
        "samples = torch.rand(4, 3, device='cuda')\nshow(samples)\n",
        "for i in range(2):\n    print(samples[i].sum().item())\n",
    )
    assert _rows(check_source(text, "nb.ipynb", include_cold=True)) == [
        ("SL201", 1, 4, 11, "cold", FROM_MODULE),
        ("SL201", 3, 2, 11, "unknown", ""),
    ]


def test_a_notebook_helper_called_in_a_loop_keeps_its_context():
    text = notebook_of(
        "import torch\n\ndef show(images):\n    print(images.cpu())\n",
        "for i in range(2):\n    show(torch.rand(4, device='cuda'))\n",
    )
    assert _rows(check_source(text, "nb.ipynb", include_cold=True)) == [("SL201", 1, 4, 11, "unknown", "")]


def test_a_call_in_a_comprehension_runs_once_per_item(tmp_path: Path):
    """``[generate(model, p) for p in prompts]`` is a loop whatever ``prompts`` holds: a call
    in it runs once per item, in a function's code outside its loops or in module code."""
    helper = textwrap.dedent("""\
        import torch

        def generate(model, prompt):
            return model(prompt.cuda()).sum().item()

        def main(model, prompts):
            first = generate(model, prompts[0])
            return first, [generate(model, p) for p in prompts]
        """)
    at_module = helper.replace("[generate(model, p) for p in prompts]", "0") + textwrap.dedent("""\

        scores = [generate(None, p) for p in range(9)]
        main(None, [])
        """)
    for where, source in (("a function", helper + "\nmain(None, [])\n"), ("module code", at_module)):
        project = tmp_path / where.replace(" ", "_")
        project.mkdir()
        rows = _rows(_lint(project, _project(project, {"gen.py": source})))
        assert rows == [("SL201", None, 4, 12, "unknown", "")], where


def test_a_method_the_project_may_call_where_the_index_cannot_resolve_is_not_once(tmp_path: Path):
    """``meters["loss"].accumulate(...)`` runs every pass, on a receiver the index cannot spell;
    ``m.accumulate(...)`` in ``main`` is the only call it resolves. A method of that name may
    run from the call it does not see."""
    source = textwrap.dedent("""\
        import torch

        class Meter:
            def accumulate(self, v):
                self.total = v.sum().item()

        def advance(model, meters):
            meters["loss"].accumulate(model(torch.randn(2, device="cuda")))

        def main(model, iters):
            m = Meter()
            m.accumulate(torch.ones(2, device="cuda"))
            for it in range(iters):
                advance(model, {"loss": m})

        main(None, 100)
        """)
    # ``self.accumulate`` in ``Trainer`` resolves to nothing: it runs ``Meter``'s on a ``Metered``.
    unresolved = source.replace(
        'def advance(model, meters):\n    meters["loss"].accumulate',
        "class Trainer:\n    def advance(self, model, meters):\n        self.accumulate",
    ).replace("advance(model, {", "Metered().advance(model, {") + "\n\nclass Metered(Trainer, Meter):\n    pass\n"
    resolved = source.replace('meters["loss"].accumulate(model(torch.randn(2, device="cuda")))', "pass")
    for where, text, context, why in (("unspelled", source, "unknown", ""), ("unresolved", unresolved, "unknown", ""),
                                      ("resolved", resolved, "cold", FROM_MAIN)):
        project = tmp_path / where
        project.mkdir()
        assert _rows(_lint(project, _project(project, {"train.py": text}))) == [("SL201", None, 5, 22, context, why)], where


def test_a_piece_of_a_split_project_may_be_called_from_another_piece():
    """A huge tree is indexed piece by piece: ``report``'s per-step callers may be in another
    piece, so the one call this piece shows proves nothing."""
    source = textwrap.dedent("""\
        import torch

        def report(m):
            print(m.weight.norm().item())

        def main():
            report(torch.nn.Linear(2, 2).cuda())

        main()
        """)
    key = "/project/piece/helpers.py"
    index = ProjectIndex({key: summarize(source)}, Path("/project/piece"))
    assert facts_for_project(index, split=False)[key].context_at(4) == Context(COLD, FROM_MAIN)
    index = ProjectIndex({key: summarize(source)}, Path("/project/piece"))
    assert facts_for_project(index, split=True)[key].context_at(4) == UNKNOWN_CONTEXT


def test_a_call_from_an_earlier_definition_of_a_name_is_a_call_site_too(tmp_path: Path):
    """``train`` is defined twice (by torch version): the first one, which the index keeps
    apart from the name's last definition, calls ``report`` every pass."""
    source = textwrap.dedent("""\
        import torch

        def report(m):
            print(m.weight.sum().item())

        if torch.__version__ >= "2":
            def train(m, n):
                for i in range(n):
                    report(m)
        else:
            def train(m, n):
                pass

        def main():
            m = torch.nn.Linear(2, 2).cuda()
            report(m)
            train(m, 10)

        main()
        """)
    assert _rows(_lint(tmp_path, _project(tmp_path, {"train.py": source}))) == [("SL201", None, 4, 11, "unknown", "")]


def test_a_function_some_unresolved_call_of_its_name_may_run_is_not_once(tmp_path: Path):
    """``from utils import *`` leaves ``report(...)`` in the training loop unresolved: the
    self-test under ``utils``'s ``__main__`` is the only call the index sees."""
    utils = textwrap.dedent("""\
        import torch

        def report(x):
            print(x.sum().item())

        if __name__ == "__main__":
            report(torch.ones(2, device="cuda"))
        """)
    train = textwrap.dedent("""\
        import torch
        from utils import *

        def main(iters):
            for i in range(iters):
                report(torch.randn(2, device="cuda"))

        main(10)
        """)
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"utils.py": utils, "train.py": train})))
    assert rows == [("SL201", None, 4, 11, "unknown", "")]


def test_a_step_by_name_called_only_rarely_or_once_is_no_step(tmp_path: Path):
    # U-ViT's `train` defines `eval_step` and calls it every `save_interval` steps and once
    # after the loop: its name says "step", its calls say otherwise. `train_step`, called
    # every pass of the loop, stays a step, and so does a step no project code calls (a
    # framework's hook).
    source = textwrap.dedent("""\
        import torch

        def train(model, loader, n_steps, save_interval):
            def train_step(batch):
                return model(batch).sum().item()

            def eval_step(n):
                fid = torch.zeros((), device="cuda") + n
                return fid.item()

            step = 0
            for batch in loader:
                train_step(batch.cuda(non_blocking=True))
                step += 1
                if step % save_interval == 0:
                    eval_step(10)
            return eval_step(100)

        class Lit(torch.nn.Module):
            def validation_step(self, batch):
                return batch.sum().item()

        if __name__ == "__main__":
            train(None, [], 10, 5)
            fit(Lit())
        """)
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"train.py": source})))
    assert rows == [
        ("SL201", None, 5, 16, "hot", "`train_step`"),
        ("SL201", None, 9, 16, "cold", "called only where it runs rarely: periodic (logging every N steps)"),
        ("SL201", None, 21, 16, "hot", "`Lit.validation_step`"),
    ]


def test_a_step_hook_method_keeps_its_name_whatever_the_project_calls(tmp_path: Path):
    # TRL's trainers: Hugging Face's Trainer calls `compute_loss` every step; the project
    # itself calls it only from `prediction_step`'s straight-line code. A method is a
    # framework's hook: it stays a step.
    source = textwrap.dedent("""\
        import torch

        class Trainer:
            def compute_loss(self, model, inputs):
                loss = model(inputs).mean()
                return loss, loss.detach().item()

            def prediction_step(self, model, inputs):
                return self.compute_loss(model, inputs)

        if __name__ == "__main__":
            Trainer()
        """)
    rows = _rows(_lint(tmp_path, _project(tmp_path, {"trainer.py": source})))
    assert rows == [("SL201", None, 6, 22, "hot", "`Trainer.compute_loss`")]
