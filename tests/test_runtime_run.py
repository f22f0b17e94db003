"""``synclint run``: scripts and modules as __main__, the table, the report, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from synclint.runtime.cli import run_command  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "runtime"
REPO = Path(__file__).parent.parent


def expected_lines(script: Path) -> dict[int, str]:
    """``{line: code}`` from the fixture's ``# expect: CODE`` comments."""
    found = {}
    for number, text in enumerate(script.read_text().splitlines(), start=1):
        match = re.search(r"# expect: (SL\d+)", text)
        if match:
            found[number] = match.group(1)
    return found


def run(*args: str) -> tuple[int, str, dict | None]:
    """Invoke the click command in-process; return (exit code, output, report)."""
    report = None
    result = CliRunner().invoke(run_command, [*args], catch_exceptions=False)
    for arg_index, arg in enumerate(args):
        if arg == "--report":
            path = args[arg_index + 1]
            if os.path.exists(path):
                report = json.loads(Path(path).read_text())
    return result.exit_code, result.output, report


def event_lines(report: dict, script: Path) -> dict[int, str]:
    return {
        event["line"]: event["code"]
        for event in report["events"]
        if Path(event["path"]) == script.resolve()
    }


def test_seed_model_before_its_fix_syncs_exactly_at_the_marked_lines(tmp_path) -> None:
    script = FIXTURES / "segloss_before.py"
    code, output, report = run("--device", "cpu", "--report", str(tmp_path / "r.json"), str(script), "--", "--steps", "3")
    assert code == 0
    assert "ran 3 steps" in output
    assert report["device"] == "cpu-simulated"
    assert event_lines(report, script) == expected_lines(script)
    assert {event["count"] for event in report["events"]} == {3}  # once per step
    assert set(report["events"][0]) >= {"path", "line", "function", "op", "count", "blocked_ms"}


def test_seed_model_after_its_fix_does_not_sync(tmp_path) -> None:
    code, output, report = run(
        "--device", "cpu", "--report", str(tmp_path / "r.json"), str(FIXTURES / "segloss_after.py")
    )
    assert code == 0
    assert report["events"] == []
    assert "no syncs observed" in output


def test_table_lists_sites_with_function_op_and_count(tmp_path) -> None:
    code, output, _ = run("--device", "cpu", "--no-static", str(FIXTURES / "segloss_before.py"))
    assert code == 0
    assert re.search(r"segloss_before\.py:29\s+ignore_background\s+aten\.nonzero\.default\s+SL101\s+2", output)


def test_failing_script_passes_its_exit_code_and_still_writes_the_report(tmp_path) -> None:
    script = FIXTURES / "fails_after_sync.py"
    code, output, report = run("--device", "cpu", "--report", str(tmp_path / "r.json"), str(script))
    assert code == 1
    assert "ValueError: boom after the sync" in output
    assert event_lines(report, script) == expected_lines(script)


def test_interrupted_script_still_writes_the_report(tmp_path) -> None:
    script = FIXTURES / "interrupted.py"
    code, _, report = run("--device", "cpu", "--report", str(tmp_path / "r.json"), str(script))
    assert code == 130
    assert event_lines(report, script) == expected_lines(script)


def test_module_mode_passes_arguments_and_exit_code(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES)
    code, output, report = run("--device", "cpu", "--report", str(tmp_path / "r.json"), "-m", "pkg.readback", "1", "2")
    assert "argv=['1', '2'] total=3.0" in output
    assert code == 3
    module = FIXTURES / "pkg" / "readback.py"
    assert event_lines(report, module) == expected_lines(module)
    assert report["events"][0]["count"] == 2


def test_each_rank_writes_its_own_report_and_the_table_names_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    code, output, _ = run("--device", "cpu", "--report", str(tmp_path / "r.json"), str(FIXTURES / "segloss_after.py"))
    assert code == 0
    assert not (tmp_path / "r.json").exists()
    assert json.loads((tmp_path / "r.rank1.json").read_text())["rank"] == 1
    assert "rank 1" in output


def test_trace_is_exported(tmp_path) -> None:
    trace = tmp_path / "trace.json"
    code, _, _ = run("--device", "cpu", "--no-static", "--trace", str(trace), str(FIXTURES / "segloss_after.py"))
    assert code == 0
    assert "traceEvents" in json.loads(trace.read_text())


def test_script_sees_itself_as_main_with_its_directory_on_sys_path(tmp_path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    script = tmp_path / "main.py"
    script.write_text(
        "import sys, helper\n"
        "assert __name__ == '__main__'\n"
        "print('argv', sys.argv, helper.VALUE)\n"
    )
    code, output, _ = run("--device", "cpu", "--no-static", str(script), "a", "--flag")
    assert code == 0
    assert f"argv ['{script}', 'a', '--flag'] 7" in output


def test_exit_code_passes_through_a_real_process(tmp_path) -> None:
    script = tmp_path / "exits.py"
    script.write_text("import sys, torch\ntorch.ones((), device='cuda').item()\nsys.exit(5)\n")
    report = tmp_path / "r.json"
    completed = subprocess.run(
        [sys.executable, "-c", "from synclint.runtime.cli import run_command; run_command()",
         "--device", "cpu", "--report", str(report), str(script)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 5, completed.stderr
    assert json.loads(report.read_text())["events"][0]["line"] == 2


def test_cli_module_does_not_import_torch() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "import sys, synclint, synclint.runtime.cli, synclint.pytest_plugin; "
         "print('torch' in sys.modules)"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert completed.stdout.strip() == "False", completed.stderr


def test_module_entry_file_is_found_from_the_working_directory(monkeypatch) -> None:
    from synclint.runtime.runner import _entry_file

    monkeypatch.chdir(FIXTURES)
    assert _entry_file("pkg.readback", module=True) == str(FIXTURES / "pkg" / "readback.py")
    assert _entry_file("no.such.module", module=True) is None
