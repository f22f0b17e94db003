"""A module's code outside its loops runs once per run: cold (synclint.project.run_once)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint import check_source
from synclint.config import Settings
from synclint.project.run_once import DEFINITION_TIME, MODULE_CODE
from synclint.rules.sl402_unpinned_loader import LEAVES
from synclint.runner import RunOptions, lint_paths
from tests.notebook_helpers import notebook_of

#: The loop over batches in ``MAIN_SCRIPT``, and the chain from it to ``count``.
LOOP = "the loop over `DataLoader` in module code"

SCRIPT = textwrap.dedent("""\
    import torch
    model = torch.nn.Linear(3, 3).cuda()
    x = torch.rand(3, device='cuda')
    y = model(x)
    print(y.cpu())
    v = y.sum().item()
    for i in range(10):
        z = model(x)
        print(z.sum().item())
    print(z.cpu())
    """)

MAIN_SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    try:
        def count(mask):
            return mask.nonzero().shape[0]
    except ImportError:
        count = None


    class Settings:
        scale = torch.ones(3, device="cuda").sum().item()

        @torch.no_grad()
        def apply(self, x, floor=torch.zeros(1, device="cuda").item()):
            return x.clamp(min=floor).sum().item()


    loader = DataLoader(range(10))
    if __name__ == "__main__":
        model = torch.nn.Linear(3, 3).cuda()
        warm = model(torch.rand(3, device="cuda")).sum().item()
        for batch in DataLoader(range(10), pin_memory=True):
            loss = model(batch.cuda(non_blocking=True)).sum()
            print(loss.item(), count(batch > 0))
        print(loss.item())
    """)


def _rows(findings) -> list[tuple]:
    return [(f.code, f.cell, f.line, f.column, f.context, f.why) for f in findings]


def test_straight_line_module_code_is_cold_and_a_loop_s_body_keeps_its_context(tmp_path: Path):
    (tmp_path / ".git").mkdir()  # a project of one script, as the CLI finds it
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    found = lint_paths([script], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert _rows(found) == [
        ("SL201", None, 5, 7, "cold", MODULE_CODE),
        ("SL201", None, 6, 5, "cold", MODULE_CODE),
        ("SL201", None, 9, 11, "unknown", ""),  # every pass of the loop: not known to be once
        ("SL201", None, 10, 7, "cold", MODULE_CODE),  # after the loop
    ]
    shown = lint_paths([script], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(f.line, f.column) for f in shown] == [(9, 11)]


def test_a_main_block_s_loop_over_batches_stays_hot_and_definitions_keep_their_own_context():
    assert _rows(check_source(MAIN_SCRIPT, "main_script.py", include_cold=True)) == [
        # defined inside a module-level ``try``, called from the loop over batches
        ("SL101", None, 6, 16, "hot", f"{LOOP} -> `count`"),
        ("SL201", None, 12, 13, "cold", DEFINITION_TIME),  # a class body's own statement
        ("SL201", None, 15, 30, "cold", DEFINITION_TIME),  # a default value
        ("SL201", None, 16, 16, "unknown", ""),  # the method's body: its own context
        ("SL402", None, 19, 10, "cold", LEAVES),  # a loader's line runs once; no copy of its batches here
        ("SL201", None, 22, 12, "cold", MODULE_CODE),  # before the loop, in `if __name__ == "__main__":`
        ("SL201", None, 25, 15, "hot", LOOP),
        ("SL201", None, 26, 11, "cold", MODULE_CODE),  # after it
    ]
    shown = check_source(MAIN_SCRIPT, "main_script.py")
    assert [(f.code, f.line) for f in shown] == [("SL101", 6), ("SL201", 16), ("SL201", 25)]


def test_each_cell_s_code_outside_a_loop_is_cold():
    text = notebook_of(
        "import torch\nimages = torch.rand(4, 3, device='cuda')\nprint(images[0].cpu())\n",
        "for i in range(3):\n    print(images[i].sum().item())\nprint(torch.cat([images]).cpu())\n",
    )
    assert _rows(check_source(text, "nb.ipynb", include_cold=True)) == [
        ("SL201", 1, 3, 7, "cold", MODULE_CODE),
        ("SL201", 2, 2, 11, "unknown", ""),
        ("SL201", 2, 3, 7, "cold", MODULE_CODE),
    ]
    assert [(f.cell, f.line) for f in check_source(text, "nb.ipynb")] == [(2, 2)]


def test_a_file_cold_as_a_whole_keeps_its_reason(tmp_path: Path):
    """Under "test code", even an unpinned loader is no part of the program: still hidden."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    script = tmp_path / "tests" / "check_loader.py"
    script.write_text("import torch\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(range(4))\nprint(torch.ones(1, device='cuda').item())\n")
    found = lint_paths([script], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert _rows(found) == [
        ("SL402", None, 3, 10, "cold", "test or benchmark code"),
        ("SL201", None, 4, 7, "cold", "test or benchmark code"),
    ]
    assert lint_paths([script], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False)) == []


def test_match_and_with_blocks_run_once_unless_in_a_loop():
    source = textwrap.dedent("""\
        import torch
        x = torch.ones(2, device="cuda")
        match x.sum().item():
            case 0 if x.max().item() > 1:
                print(x.cpu())
            case _:
                with torch.no_grad():
                    for i in range(2):
                        print(x[i].item())
                    print(x.tolist())
        """)
    assert _rows(check_source(source, "m.py", include_cold=True)) == [
        ("SL201", None, 3, 7, "cold", MODULE_CODE),  # the subject
        ("SL201", None, 4, 15, "cold", MODULE_CODE),  # a guard
        ("SL201", None, 5, 15, "cold", MODULE_CODE),
        ("SL201", None, 9, 23, "unknown", ""),
        ("SL201", None, 10, 19, "cold", MODULE_CODE),
    ]


def test_a_comprehension_over_batches_runs_per_batch_not_once():
    """A comprehension or generator over a loader is a loop over batches, like a ``for``."""
    source = textwrap.dedent("""\
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(3, 3).cuda()
        batches = DataLoader(range(10), pin_memory=True)
        losses = [model(x.cuda(non_blocking=True)).sum().item() for x in batches]
        stats = (model(x.cuda(non_blocking=True)).sum().item()
                 for x in batches)
        print(torch.stack([torch.ones(1, device="cuda") for _ in range(2)]).sum().item())
        """)
    assert _rows(check_source(source, "c.py", include_cold=True)) == [
        ("SL201", None, 5, 11, "unknown", ""),
        ("SL201", None, 6, 10, "unknown", ""),
        ("SL201", None, 8, 7, "cold", MODULE_CODE),  # a comprehension over no batches runs once
    ]
