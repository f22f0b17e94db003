"""``synclint run`` in the situations real programs create: the usual device idiom,
threads, SIGTERM, a missing script, no torch, budgets and allowed lines."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from synclint.runtime.cli import run_command  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "runtime"
REPO = Path(__file__).parent.parent
USUAL = FIXTURES / "usual_way.py"


def expected_lines(script: Path) -> dict[int, str]:
    return {
        number: match.group(1)
        for number, text in enumerate(script.read_text().splitlines(), start=1)
        if (match := re.search(r"# expect: (SL\d+)", text))
    }


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(run_command, [*args], catch_exceptions=False)
    return result.exit_code, result.output


def counted_lines(report: dict, script: Path) -> dict[int, str]:
    return {
        e["line"]: e["code"]
        for e in report["events"]
        if Path(e["path"]) == script.resolve() and not e["setup"] and not e["allowed"]
    }


def test_a_script_written_the_usual_way_shows_its_cuda_syncs_on_a_cpu(tmp_path) -> None:
    report = tmp_path / "r.json"
    code, output = run("--device", "cpu", "--no-static", "--report", str(report), str(USUAL))
    assert code == 0, output
    data = json.loads(report.read_text())
    assert counted_lines(data, USUAL) == expected_lines(USUAL)  # the worker thread's sync included
    assert data["steps"] == 2
    setup = [e for e in data["events"] if e["setup"]]
    assert [(e["line"], e["code"]) for e in setup] == [(12, "SL401")]  # model.to(device), once
    assert "not counted, setup (moving a module)" in output


def test_the_simulated_device_is_gone_after_the_run() -> None:
    import torch

    from synclint.runtime import simcuda

    real_cuda = torch.cuda.is_available
    run("--device", "cpu", "--no-static", str(USUAL))
    assert torch.cuda.is_available is real_cuda and not simcuda.active()
    if not real_cuda():  # on a GPU host a real CUDA tensor is fine
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(1, device="cuda")


def test_missing_script_is_a_clear_error_with_exit_2(tmp_path) -> None:
    code, output = run("--device", "cpu", str(tmp_path / "nope.py"))
    assert code == 2
    assert output.strip() == f"synclint run: no such script: {tmp_path / 'nope.py'}"


def test_without_torch_one_line_names_the_runtime_extra(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    completed = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['torch'] = None; "
         "from synclint.runtime.cli import run_command; run_command()", str(script)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip() == "synclint run needs PyTorch: pip install 'synclint[runtime]'"


def test_sigterm_still_writes_the_report(tmp_path) -> None:
    report = tmp_path / "r.json"
    process = subprocess.Popen(
        [sys.executable, "-c", "from synclint.runtime.cli import run_command; run_command()",
         "--device", "cpu", "--no-static", "--report", str(report), str(FIXTURES / "terminated.py")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    events = json.loads(report.read_text())["events"]
    assert [(e["line"], e["code"]) for e in events] == list(expected_lines(FIXTURES / "terminated.py").items())


def test_allow_moves_a_line_out_of_the_count(tmp_path) -> None:
    report = tmp_path / "r.json"
    code, output = run(
        "--device", "cpu", "--no-static", "--report", str(report), "--allow", f"{USUAL}:25", str(USUAL)
    )
    assert code == 0
    data = json.loads(report.read_text())
    assert 25 not in counted_lines(data, USUAL)
    assert [e["line"] for e in data["events"] if e["allowed"]] == [25]
    assert "not counted, allowed" in output


def test_malformed_allow_is_exit_2() -> None:
    code, output = run("--device", "cpu", "--allow", "no-line-number", str(USUAL))
    assert code == 2
    assert "--allow expects FILE:LINE" in output


def test_budget_ratchet_passes_equal_and_fails_a_new_site_with_a_diff(tmp_path) -> None:
    budget = tmp_path / "budget.json"
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "x = torch.arange(4, device='cuda')\n"
        "for _ in range(2):\n"
        "    x.nonzero()\n"
    )
    code, _ = run("--device", "cpu", "--no-static", "--write-budget", str(budget), str(script))
    assert code == 0
    sites = json.loads(budget.read_text())["sites"]
    assert [(s["function"], s["code"], s["count"], s["lines"]) for s in sites] == [("<module>", "SL101", 2, [4])]
    code, output = run("--device", "cpu", "--no-static", "--budget", str(budget), str(script))
    assert code == 0 and "within the sync budget" in output
    script.write_text(script.read_text() + "    x.sum().item()\n    x.nonzero()\n")
    code, output = run("--device", "cpu", "--no-static", "--budget", str(budget), str(script))
    assert code == 1
    assert "sync budget exceeded" in output
    assert re.search(r"> .*train\.py:4,6 <module>\(\) SL101: 4 syncs, budget 2", output)
    assert re.search(r"\+ .*train\.py:5 <module>\(\) SL201: 2 syncs \(new site\)", output)
    script.write_text("import torch\nx = torch.arange(4, device='cuda')\nx.nonzero()\n")
    code, output = run("--device", "cpu", "--no-static", "--budget", str(budget), str(script))
    assert code == 0
    assert re.search(r"- .*train\.py <module>\(\) SL101: 1 syncs, budget 2", output)


def test_missing_budget_file_is_exit_2(tmp_path) -> None:
    code, output = run("--device", "cpu", "--budget", str(tmp_path / "none.json"), str(USUAL))
    assert code == 2
    assert "no such budget file" in output


def test_trace_carries_one_instant_event_per_sync_with_the_user_frame(tmp_path) -> None:
    trace = tmp_path / "trace.json"
    code, _ = run("--device", "cpu", "--no-static", "--trace", str(trace), str(USUAL))
    assert code == 0
    markers = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "synclint"]
    assert {(m["args"]["line"], m["args"]["code"]) for m in markers if not m["args"]["allowed"]} >= set(
        expected_lines(USUAL).items()
    )
    assert all(m["ph"] == "i" and m["args"]["file"] == str(USUAL.resolve()) for m in markers)


def test_table_ranks_by_count_and_gives_syncs_per_step(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(2, 1).to('cuda')\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(2):\n"
        "    loss = model(torch.ones(1, 2, device='cuda')).sum()\n"
        "    loss.item()\n"
        "    for _ in range(3):\n"
        "        (loss > 0).nonzero()\n"
        "    loss.backward(); opt.step()\n"
    )
    code, output = run("--device", "cpu", "--no-static", str(script))
    assert code == 0
    lines = [line for line in output.splitlines() if "train.py:" in line and "not counted" not in line]
    assert re.search(r"train\.py:8 .* SL101\s+6\s+3\.00$", lines[0])
    assert re.search(r"train\.py:6 .* SL201\s+2\s+1\.00$", lines[1])
    assert "2 optimizer steps" in output


def test_a_sync_inside_a_compiled_function_is_flagged_as_a_graph_break(tmp_path) -> None:
    script = tmp_path / "compiled.py"
    script.write_text(
        "import torch\n"
        "@torch.compile(backend='eager')\n"
        "def step(x):\n"
        "    if x.sum().item() > 0:\n"
        "        return x * 2\n"
        "    return x\n"
        "x = torch.randn(4, device='cuda')\n"
        "step(x)\n"
        "x.sum().item()\n"
    )
    report = tmp_path / "r.json"
    code, output = run("--device", "cpu", "--no-static", "--report", str(report), str(script))
    assert code == 0, output
    flags = {e["line"]: e["graph_break"] for e in json.loads(report.read_text())["events"]}
    assert flags == {4: True, 9: False}
    assert "[graph break]" in output
