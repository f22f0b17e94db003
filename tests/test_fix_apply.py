"""Fix application: parse check, overlap rejection, fixed point, and safe file writes via the CLI."""

from __future__ import annotations

import os
import stat

import libcst as cst
from click.testing import CliRunner

from synclint import fixers
from synclint.cli import cli
from synclint.fixers.apply import fix_text
from synclint.fixers.base import FixProposal

# The receiver is annotated: only known tensors get `non_blocking=True` (issue 12).
LOADER = "import torch\nfor x, y in loader:\n    x: torch.Tensor\n    x = x.to(device)\n"
LOADER_FIXED = "import torch\nfor x, y in loader:\n    x: torch.Tensor\n    x = x.to(device, non_blocking=True)\n"
SEGMENT = "import torch\ndef f(t: torch.Tensor):\n    t[torch.nonzero(t == 9, as_tuple=True)] = -1\n    return t\n"


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_a_fix_that_would_not_parse_is_not_applied(monkeypatch):
    def broken(rule, node):
        # A keyword is a valid identifier to libcst, so it renders, but it does not parse.
        return FixProposal("safe", "break it", {node: cst.Name("not")})

    monkeypatch.setitem(fixers._PROPOSERS, "SL401", [broken])
    assert fix_text(LOADER, unsafe=True) == (LOADER, 0)


def test_overlapping_proposals_never_corrupt_code(monkeypatch):
    """Two proposals replacing nested nodes: one per pass, each re-derived, never spliced."""
    def whole_line(rule, node):
        return FixProposal("safe", "a", {node: node.with_changes(args=[*node.args, cst.Arg(cst.Integer("1"))])})

    monkeypatch.setitem(fixers._PROPOSERS, "SL401", [whole_line])
    source = "import torch\nfor x, y in loader:\n    x = x.to(device).to(device)\n"
    fixed, applied = fix_text(source)
    cst.parse_module(fixed)
    assert applied >= 2 and fixed.count(", 1") >= 2


def test_fixed_point_and_idempotence():
    seed = "import torch\ndef f(target: torch.Tensor, pred: torch.Tensor):\n    loss = pred.mean()\n    unique = torch.unique(target)\n    n = torch.numel(unique)\n    if n < 2:\n        loss = 0.0 * loss\n    return loss\n"
    once, applied = fix_text(seed, unsafe=True)
    assert applied == 2  # the count, then (next pass) the `if`
    assert fix_text(once, unsafe=True) == (once, 0)


def test_fix_prints_a_diff_and_exits_1(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOADER)
    result = run("fix", str(path))
    assert result.exit_code == 1
    assert "+    x = x.to(device, non_blocking=True)" in result.output
    assert path.read_text() == LOADER  # nothing written without --apply
    assert run("fix", "--apply", str(path)).exit_code == 0
    assert path.read_text() == LOADER_FIXED
    assert run("fix", str(path)).exit_code == 0


def test_unsafe_fixes_need_the_flag(tmp_path):
    path = tmp_path / "m.py"
    source = "import torch\ndef f(x: torch.Tensor):\n    return x[x > 0].sum()\n"
    path.write_text(source)
    assert run("fix", "--apply", str(path)).exit_code == 0 and path.read_text() == source
    run("fix", "--apply", "--unsafe-fixes", str(path))
    assert "torch.where(x > 0, x, 0).sum()" in path.read_text()


def test_select_and_ignore_apply_to_fixes(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOADER + SEGMENT.replace("import torch\n", ""))
    run("fix", "--apply", "--ignore", "SL401", str(path))
    text = path.read_text()
    assert "non_blocking" not in text and "masked_fill_" in text
    run("fix", "--apply", "--select", "SL401", str(path))
    assert "non_blocking=True" in path.read_text()


def test_check_fix_is_fix_apply(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOADER)
    run("check", "--fix", str(path))
    assert path.read_text() == LOADER_FIXED


def test_check_marks_safe_and_unsafe_fixes(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOADER + "def g(x: torch.Tensor):\n    return x[x > 0].sum()\n")
    output = run("check", str(path)).output
    assert ":4:9: SL401 [*] " in output
    assert ":6:12: SL103 [~] " in output


def test_file_keeps_crlf_bom_mode_and_missing_final_newline(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbf" + LOADER.rstrip("\n").replace("\n", "\r\n").encode())
    os.chmod(path, 0o750)
    run("fix", "--apply", str(path))
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data[3:] == LOADER_FIXED.rstrip("\n").replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert not [p for p in tmp_path.iterdir() if p.name != "m.py"]  # no temp files left


def test_file_keeps_its_declared_encoding(tmp_path):
    path = tmp_path / "m.py"
    source = "# -*- coding: latin-1 -*-\n# café\n" + LOADER
    path.write_bytes(source.encode("latin-1"))
    run("fix", "--apply", str(path))
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + LOADER_FIXED).encode("latin-1")


def test_unparsable_file_is_reported_and_left_alone(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(:\n")
    result = run("fix", "--apply", str(path))
    assert result.exit_code == 2 and path.read_text() == "def f(:\n"


def test_fix_leaves_what_a_host_only_project_makes_cold(tmp_path):
    # The project trains and never names a device: `check` shows nothing (every finding is
    # cold for HOST_ONLY_PROJECT), so `fix` rewrites nothing either.
    source = ("import torch\n\n\ndef update(model, optimizer, batches):\n    total = 0.0\n"
              "    for obs, act in batches:\n        loss = model(obs).mean()\n        optimizer.zero_grad()\n"
              "        loss.backward()\n        optimizer.step()\n        total += loss.item()\n    print(total)\n")
    path = tmp_path / "train.py"
    path.write_text(source)
    assert run("check", "--no-cache", str(path)).exit_code == 0
    assert run("fix", "--apply", "--unsafe-fixes", str(path)).exit_code == 0
    assert path.read_text() == source
