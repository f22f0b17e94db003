"""Joining runtime sites with static findings (hand-made findings: no static engine needed)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

from synclint.finding import Finding, error_finding
from synclint.runtime.events import SyncSite
from synclint.runtime.join import JoinRow, files_involved, join, static_findings


def finding(path: str, line: int, code: str) -> Finding:
    return Finding(path, line, 1, line, 2, code, "name", "message")


def site(path: str, line: int, code: str) -> SyncSite:
    return SyncSite(path, line, "f", "op", code, count=1)


def test_same_line_is_confirmed_others_are_one_sided(tmp_path) -> None:
    script = str(tmp_path / "train.py")
    rows = join(
        [site(script, 10, "SL103"), site(script, 30, "SL201")],
        [finding(script, 10, "SL103"), finding(script, 20, "SL102")],
    )
    assert rows == [
        JoinRow(script, 10, "SL103", "confirmed"),
        JoinRow(script, 20, "SL102", "static-only"),
        JoinRow(script, 30, "SL201", "runtime-only"),
    ]


def test_relative_and_absolute_paths_meet(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = join([site(str(tmp_path / "a.py"), 3, "SL101")], [finding("a.py", 3, "SL101")])
    assert [row.status for row in rows] == ["confirmed"]


def test_confirmation_needs_the_same_code(tmp_path) -> None:
    script = str(tmp_path / "a.py")
    assert join([site(script, 5, "SL202")], [finding(script, 5, "SL202")]) == [JoinRow(script, 5, "SL202", "confirmed")]
    rows = join([site(script, 5, "SL201")], [finding(script, 5, "SL202")])
    assert sorted(row.status for row in rows) == ["runtime-only", "static-only"]


def test_a_statement_split_over_lines_is_one_span(tmp_path) -> None:
    script = tmp_path / "a.py"
    script.write_text(
        "import torch\n"
        "def f(x):\n"
        "    y = torch.nonzero(\n"
        "        x\n"
        "    ).sum(\n"
        "    )\n"
        "    if x.sum() > 0:\n"
        "        torch.nonzero(x)\n"
    )
    path = str(script)
    rows = join([site(path, 5, "SL101"), site(path, 8, "SL101")], [finding(path, 3, "SL101"), finding(path, 7, "SL101")])
    assert [(row.line, row.status) for row in rows] == [
        (3, "confirmed"),  # the event's line 5 is inside the statement of lines 3-6
        (7, "static-only"),  # an `if` header does not cover its body
        (8, "runtime-only"),
    ]


def test_same_line_in_another_file_does_not_confirm(tmp_path) -> None:
    rows = join([site(str(tmp_path / "a.py"), 5, "SL101")], [finding(str(tmp_path / "b.py"), 5, "SL101")])
    assert sorted(row.status for row in rows) == ["runtime-only", "static-only"]


def test_parse_errors_are_not_joined(tmp_path) -> None:
    assert join([], [error_finding(str(tmp_path / "a.py"), "bad syntax")]) == []


def test_static_findings_uses_the_engine_check_file(monkeypatch, tmp_path) -> None:
    checked = []
    engine = types.ModuleType("synclint.engine")
    engine.check_file = lambda path: checked.append(path) or [finding(path, 1, "SL101")]
    monkeypatch.setitem(sys.modules, "synclint.engine", engine)
    paths = [str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    assert [f.path for f in static_findings(paths)] == paths
    assert checked == paths


def test_static_findings_without_the_engine_is_empty(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "synclint.engine", None)  # import fails
    assert static_findings(["a.py"]) == []
    assert "static checker unavailable" in capsys.readouterr().err


def test_files_involved_are_entry_event_files_and_local_modules(tmp_path) -> None:
    entry, helper, lib = tmp_path / "main.py", tmp_path / "helper.py", tmp_path / "other" / "lib.py"
    for path in (entry, helper, lib):
        path.parent.mkdir(exist_ok=True)
        path.write_text("")
    modules = [types.SimpleNamespace(__file__=str(helper)), types.SimpleNamespace(__file__=str(lib)), sys]
    files = files_involved(str(entry), [site(str(lib), 1, "SL101")], modules, [str(tmp_path / "x")])
    assert files == sorted([str(entry), str(lib)])  # helper is outside the roots
    files = files_involved(str(entry), [], modules, [str(tmp_path)])
    assert files == sorted([str(entry), str(helper), str(lib)])


def test_join_through_synclint_run_with_a_fake_engine(monkeypatch, tmp_path) -> None:
    import pytest

    pytest.importorskip("torch")
    from synclint.runtime.runner import run_program

    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.arange(3, device='cuda')\nx.nonzero()\nx.unique()\n")
    engine = types.ModuleType("synclint.engine")
    engine.check_file = lambda path: [finding(path, 3, "SL101"), finding(path, 2, "SL403")] if Path(path) == script else []
    monkeypatch.setitem(sys.modules, "synclint.engine", engine)
    result = run_program(str(script), device="cpu")
    assert [(row.line, row.code, row.status) for row in result.join] == [
        (2, "SL403", "static-only"),
        (3, "SL101", "confirmed"),
        (4, "SL102", "runtime-only"),
    ]
