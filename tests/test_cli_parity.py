"""ruff parity of the command line (issue 13): formats, stdin, fix reporting, markers,
carets, colours, --add-noqa, unused suppressions (SL002), --show-*, --watch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from synclint.cli import cli

HAZARD = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
LOADER = "import torch\nfor x, y in loader:\n    x: torch.Tensor  # a proven tensor: the safe fix needs one\n    x = x.to(device)\n"
# A safe fix (SL401), an unsafe one (SL103) and one without a fix (SL101).
MIXED = LOADER + "def g(x: torch.Tensor):\n    return x[x > 0].sum()\n" + "def h(x: torch.Tensor):\n    return x.nonzero()\n"


def run(*args: str, input: str | bytes | None = None, env: dict | None = None, cwd: Path | None = None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture(autouse=True)
def _no_color_env(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


# -- check --fix ---------------------------------------------------------------------------


def test_check_fix_reports_what_remains_and_exits_1(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(MIXED)
    result = run("check", "--fix", "--no-cache", "--output-format", "concise", str(path))
    assert result.exit_code == 1  # was 0, with nothing printed
    lines = result.output.splitlines()
    assert [line.split(": ")[1].split()[0] for line in lines[:2]] == ["SL103", "SL101"]
    assert ":6:12: SL103 [~] " in lines[0]
    assert "Found 3 sync hazards (1 fixed, 2 remaining)." in lines
    assert "non_blocking=True" in path.read_text()


def test_check_fix_exits_0_when_everything_was_fixed_unless_asked(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(LOADER)
    result = run("check", "--fix", "--no-cache", str(path))
    assert (result.exit_code, result.output) == (0, "Found 1 sync hazard (1 fixed, 0 remaining).\n")
    path.write_text(LOADER)
    assert run("check", "--fix", "--no-cache", "--exit-non-zero-on-fix", str(path)).exit_code == 1
    assert run("check", "--fix", "--no-cache", "--exit-non-zero-on-fix", str(path)).exit_code == 0  # nothing left


def test_show_fixes_lists_what_was_fixed(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(MIXED)
    result = run("check", "--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", str(path))
    assert result.output.endswith(f"Fixed 2 hazards:\n- {path}:\n    1 × SL103\n    1 × SL401\n")
    assert "Found 3 sync hazards (2 fixed, 1 remaining)." in result.output


# -- one marker for fixes ------------------------------------------------------------------


def test_one_marker_for_safe_and_one_for_unsafe_fixes_everywhere(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(MIXED)
    check = run("check", "--no-cache", "--output-format", "concise", str(path)).output
    assert ":4:9: SL401 [*] " in check and ":6:12: SL103 [~] " in check and ":8:12: SL101 `" in check
    stats = run("check", "--no-cache", "--statistics", str(path)).output.splitlines()
    assert stats[:3] == ["    1\tSL101\t    nonzero", "    1\tSL103\t[~] boolean-mask", "    1\tSL401\t[*] blocking-transfer"]
    rules = {line.split()[0]: line.split()[1] for line in run("rules").output.splitlines()}
    assert rules["SL401"] == "[*]" and rules["SL103"] == "[~]"
    assert run("rule", "SL103").output.splitlines()[2].startswith("[~] ")
    assert run("rule", "SL401").output.splitlines()[2].startswith("[*] ")
    assert "[unsafe fix]" not in check + "".join(stats)


# -- carets --------------------------------------------------------------------------------


def _carets(source: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "m.py"
    path.write_text(source)
    lines = run("check", "--no-cache", str(path)).output.splitlines()
    return lines[2:4]


def test_caret_under_the_span_on_a_tab_indented_line(tmp_path: Path):
    source = "import torch\n\n\ndef f(x: torch.Tensor):\n\treturn x.nonzero()\n"
    code, carets = _carets(source, tmp_path)
    assert code == "5 |     return x.nonzero()"  # the tab shown as spaces, so the caret can line up
    assert carets == "  |            ^^^^^^^^^^^"


def test_caret_under_the_span_after_wide_characters(tmp_path: Path):
    source = 'import torch\n\n\ndef f(x: torch.Tensor):\n    return "日本", x.nonzero()\n'
    code, carets = _carets(source, tmp_path)
    assert code == '5 |     return "日本", x.nonzero()'
    # "日本" takes four terminal columns: the caret starts four, not two, columns later.
    assert carets == "  |" + " " * 20 + "^" * 11


# -- output formats ------------------------------------------------------------------------


@pytest.fixture
def findings_dir(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(MIXED)
    (tmp_path / "broken.py").write_text("def f(:\n")
    return tmp_path


def test_json_lines_holds_the_json_objects_one_per_line(findings_dir: Path):
    as_json = json.loads(run("check", "--no-cache", "--output-format", "json", str(findings_dir)).output)
    lines = run("check", "--no-cache", "--output-format", "json-lines", str(findings_dir)).output.splitlines()
    assert [json.loads(line) for line in lines] == as_json and len(lines) == 4


def test_pylint_format(findings_dir: Path):
    lines = run("check", "--no-cache", "--output-format", "pylint", str(findings_dir)).output.splitlines()
    assert [line.split(" ")[0] + " " + line.split(" ")[1] for line in lines] == [
        f"{findings_dir / 'broken.py'}:1: [SL000]",
        f"{findings_dir / 'm.py'}:4: [SL401]",
        f"{findings_dir / 'm.py'}:6: [SL103]",
        f"{findings_dir / 'm.py'}:8: [SL101]",
    ]


def test_junit_format(findings_dir: Path):
    root = ElementTree.fromstring(run("check", "--no-cache", "--output-format", "junit", str(findings_dir)).output)
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "4", "4")
    cases = [(s.get("name"), c.get("name"), c.get("line")) for s in root for c in s]
    m = str(findings_dir / "m.py")
    assert cases[1:] == [(m, "synclint.SL401", "4"), (m, "synclint.SL103", "6"), (m, "synclint.SL101", "8")]
    assert all(c.find("failure") is not None for s in root for c in s)
    (findings_dir / "none.py").write_text("x = 1\n")
    clean = ElementTree.fromstring(run("check", "--no-cache", "--output-format", "junit", str(findings_dir / "none.py")).output)
    assert clean.get("tests") == "0" and [c.get("name") for s in clean for c in s] == ["No sync hazards found"]


def test_gitlab_format(findings_dir: Path):
    report = json.loads(run("check", "--no-cache", "--output-format", "gitlab", str(findings_dir), cwd=findings_dir).output)
    assert [(r["check_name"], r["location"]["path"], r["location"]["lines"]["begin"], r["severity"]) for r in report] == [
        ("SL000", "broken.py", 1, "critical"), ("SL401", "m.py", 4, "major"), ("SL103", "m.py", 6, "major"),
        ("SL101", "m.py", 8, "major"),
    ]
    assert len({r["fingerprint"] for r in report}) == 4
    again = json.loads(run("check", "--no-cache", "--output-format", "gitlab", str(findings_dir), cwd=findings_dir).output)
    assert [r["fingerprint"] for r in again] == [r["fingerprint"] for r in report]


def test_rdjson_format_carries_fixes_as_suggestions(findings_dir: Path):
    document = json.loads(run("check", "--no-cache", "--output-format", "rdjson", str(findings_dir)).output)
    assert document["source"]["name"] == "synclint"
    by_code = {d["code"]["value"]: d for d in document["diagnostics"]}
    assert by_code["SL000"]["severity"] == "ERROR"
    assert by_code["SL401"]["location"]["range"] == {"start": {"line": 4, "column": 9}, "end": {"line": 4, "column": 21}}
    assert by_code["SL401"]["suggestions"] == [
        {"range": {"start": {"line": 4, "column": 9}, "end": {"line": 4, "column": 21}},
         "text": "x.to(device, non_blocking=True)"}
    ]
    assert "suggestions" not in by_code["SL101"]


def test_output_file_gets_the_report_and_stdout_stays_empty(findings_dir: Path):
    target = findings_dir / "out" / "report.json"
    result = run("check", "--no-cache", "--output-format", "json", "--output-file", str(target), str(findings_dir))
    assert result.exit_code == 1 and result.output == ""
    assert len(json.loads(target.read_text())) == 4


# -- colours -------------------------------------------------------------------------------


def test_colours_only_when_forced_or_on_a_terminal(findings_dir: Path):
    path = str(findings_dir / "m.py")
    assert "\x1b[" not in run("check", "--no-cache", path).output  # not a terminal
    forced = run("check", "--no-cache", path, env={"FORCE_COLOR": "1"}).output
    assert "\x1b[" in forced and "\x1b[0m" in forced
    assert "\x1b[" not in run("check", "--no-cache", path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).output
    assert "\x1b[" not in run("check", "--no-cache", "--output-format", "json", path, env={"FORCE_COLOR": "1"}).output
    target = findings_dir / "report.txt"
    run("check", "--no-cache", "-o", str(target), path, env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in target.read_text()


def test_wants_color_rules():
    from synclint.reporters.style import wants_color

    class Tty:
        def isatty(self):
            return True

    assert wants_color(Tty(), {}) is True
    assert wants_color(Tty(), {"NO_COLOR": "1"}) is False
    assert wants_color(Tty(), {"TERM": "dumb"}) is False
    assert wants_color(None, {"FORCE_COLOR": "1"}) is True
    assert wants_color(Tty(), {"NO_COLOR": ""}) is True  # empty means unset (no-color.org)


# -- stdin ---------------------------------------------------------------------------------


def test_stdin_is_checked_under_its_stdin_filename(tmp_path: Path):
    result = run("check", "--no-cache", "--output-format", "concise", "-", input=HAZARD)
    assert result.exit_code == 1 and result.output.startswith("-:5:12: SL101 ")
    named = run("check", "--output-format", "concise", "--stdin-filename", "pkg/model.py", "-", input=HAZARD)
    assert named.output.startswith("pkg/model.py:5:12: SL101 ")
    assert run("check", "--stdin-filename", "pkg/model.py", input=HAZARD).exit_code == 1  # no `-` needed
    assert run("check", "-", input="x = 1\n").exit_code == 0


def test_stdin_honours_the_config_of_its_filename(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nper-file-ignores = { "tests/*" = ["SL101"] }\n')
    (tmp_path / "tests").mkdir()
    assert run("check", "--stdin-filename", "tests/t.py", "-", input=HAZARD, cwd=tmp_path).exit_code == 0
    assert run("check", "--stdin-filename", "src.py", "-", input=HAZARD, cwd=tmp_path).exit_code == 1


def test_stdin_fix_writes_the_fixed_source_to_stdout():
    result = run("check", "--fix", "-", input=LOADER)
    assert result.exit_code == 0
    assert result.stdout == LOADER.replace("x.to(device)", "x.to(device, non_blocking=True)")
    broken = run("check", "--fix", "-", input="def f(:\n")
    assert broken.exit_code == 2 and broken.stdout == "def f(:\n"  # nothing lost


def test_stdin_cannot_be_mixed_with_paths(tmp_path: Path):
    assert run("check", "-", str(tmp_path)).exit_code == 2


# -- --show-settings / --show-files ----------------------------------------------------------


def test_show_files_lists_what_would_be_checked(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("x = 1\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "c.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("")
    result = run("check", "--show-files", str(tmp_path))
    assert result.exit_code == 0
    assert result.output.splitlines() == [str(tmp_path / "a.py"), str(tmp_path / "sub" / "b.py")]


def test_show_settings_prints_the_resolved_settings(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SL201"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run("check", "--show-settings", "--extend-select", "SL002", str(tmp_path / "a.py"))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert f"Settings path: {tmp_path / 'pyproject.toml'}" in lines
    assert 'ignore = ["SL201"]' in lines and 'extend-select = ["SL002"]' in lines


# -- --add-noqa ----------------------------------------------------------------------------


def test_add_noqa_silences_every_finding_and_keeps_the_code(tmp_path: Path):
    path = tmp_path / "m.py"
    source = MIXED.replace("x.nonzero()", "x.nonzero()  # a comment")
    path.write_text(source)
    result = run("check", "--add-noqa", "--no-cache", str(path))
    assert result.exit_code == 0 and "Added 3 synclint: ignore directives." in result.output
    text = path.read_text()
    assert "    x = x.to(device)  # synclint: ignore[SL401]\n" in text
    assert "    return x.nonzero()  # a comment  # synclint: ignore[SL101]\n" in text
    assert run("check", "--no-cache", str(path)).exit_code == 0
    assert run("check", "--add-noqa", "--no-cache", str(path)).output.startswith("Added 0 ")
    assert path.read_text() == text


def test_add_noqa_merges_codes_and_avoids_continuation_lines(tmp_path: Path):
    from synclint.suppression import add_directives

    source = "a = x.cpu()  # synclint: ignore[SL101]\nb = x.cpu() + \\\n    y.item()\ns = '''\n'''\n"
    new, added, skipped = add_directives(source, [(1, 1, "SL201"), (2, 3, "SL201"), (4, 5, "SL999")])
    assert new.splitlines()[:3] == [
        "a = x.cpu()  # synclint: ignore[SL101, SL201]",
        "b = x.cpu() + \\",
        "    y.item()  # synclint: ignore[SL201]",  # the last line: a comment after `\` is a syntax error
    ]
    assert (added, skipped) == (3, [])
    assert new.splitlines()[4] == "'''  # synclint: ignore[SL999]"


# -- unused suppressions (SL002) ------------------------------------------------------------


SUPPRESSED = (
    "import torch\n\n\n"
    "def f(x: torch.Tensor):\n"
    "    a = x.nonzero()  # synclint: ignore[SL101]\n"  # used
    "    b = x.cpu()  # synclint: ignore[SL101, SL201]\n"  # SL101 unused
    "    c = x + 1  # noqa: SL201, E501\n"  # SL201 unused; E501 is another tool's
    "    d = x + 2  # noqa\n"  # bare noqa: other tools' business
    "    e = x + 3  # synclint: ignore\n"  # bare, silences nothing
    "    g = x + 4  # synclint: ignore[SL999]\n"  # not a rule
    "    return a, b, c, d, e, g\n"
)


def _codes_at(output: str) -> list[tuple[int, str]]:
    return [(int(line.split(":")[1]), line.split(": ")[1].split()[0]) for line in output.splitlines() if ": SL" in line]


def test_unused_suppressions_are_reported_only_when_selected(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(SUPPRESSED)
    assert _codes_at(run("check", "--no-cache", "--output-format", "concise", str(path)).output) == []
    output = run("check", "--no-cache", "--extend-select", "SL002", "--output-format", "concise", str(path)).output
    assert _codes_at(output) == [(6, "SL002"), (7, "SL002"), (9, "SL002"), (10, "SL002")]
    assert "(unused: SL101)" in output and "(unused: SL201)" in output and "not synclint rules: SL999" in output
    assert "4 suppression comments silence nothing (SL002)." in output


def test_a_suppression_of_a_disabled_rule_is_not_judged(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(SUPPRESSED)
    output = run("check", "--no-cache", "--extend-select", "SL002", "--ignore", "SL1", "--output-format", "concise",
                 str(path)).output
    # SL101 is off: line 5's directive is not "unused", line 6 keeps only its SL201 (used);
    # the bare ignore on line 9 is not judged while some rule is off.
    assert _codes_at(output) == [(7, "SL002"), (10, "SL002")]


def test_no_suppression_is_judged_in_a_file_that_could_not_be_analysed(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(SUPPRESSED + "def broken(:\n")
    output = run("check", "--no-cache", "--extend-select", "SL002", "--output-format", "concise", str(path)).output
    assert [code for _, code in _codes_at(output)] == ["SL000"]


def test_sl002_is_a_known_selector():
    assert run("check", "--select", "SL002", "--show-settings").exit_code == 0


# -- --watch -------------------------------------------------------------------------------


def test_watch_checks_again_after_each_batch_of_changes(tmp_path: Path, capsys):
    from synclint import cli as cli_module

    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    runs = []

    def changes():
        path.write_text(HAZARD)
        yield {str(path)}
        path.write_text("x = 1\n")
        yield {str(path)}

    def once():
        output = run("check", "--no-cache", "--output-format", "concise", str(path)).output
        runs.append(output)

    cli_module._watch((str(tmp_path),), once, changes())
    assert [("SL101" in r) for r in runs] == [False, True, False]
    assert "File change detected" in capsys.readouterr().err


def test_watch_loads_the_checker_once_after_its_first_run(tmp_path: Path, monkeypatch):
    # Later runs then check in this process: an early worker for each would import libcst again.
    import synclint.runner
    from synclint import cli as cli_module

    events = []
    monkeypatch.setattr(synclint.runner, "load_checker", lambda: events.append("load"))
    cli_module._watch((str(tmp_path),), lambda: events.append("run"), iter([{"a.py"}, {"b.py"}]))
    assert events == ["run", "load", "run", "run"]


# -- progress ------------------------------------------------------------------------------


def test_progress_line_only_after_the_delay_and_erased_at_the_end():
    import io

    from synclint.progress import Progress

    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, delay=0.5, interval=0.1, clock=lambda: now[0])
    progress(1, 3)
    assert stream.getvalue() == ""  # a fast run stays silent
    now[0] = 0.6
    progress(2, 3)
    now[0] = 0.65
    progress(2, 3)  # throttled
    now[0] = 0.7
    progress(3, 3)
    progress.close()
    assert stream.getvalue() == "\rChecked 2/3 files\rChecked 3/3 files\r" + " " * 17 + "\r"
    assert Progress.for_terminal(io.StringIO()) is None  # not a terminal: no progress at all


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_runner_reports_every_file_done(tmp_path: Path, jobs: int):
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(HAZARD)
    seen = []
    options = RunOptions(jobs=jobs, use_cache=False, progress=lambda done, total: seen.append((done, total)))
    assert len(lint_paths([tmp_path], Settings(root=tmp_path), options)) == 3
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path):
    (tmp_path / "m.py").write_text(HAZARD)
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(tmp_path)])
    assert "Checked" not in result.stderr


# -- synclint run without torch ----------------------------------------------------------------


def test_run_without_torch_names_the_extra_in_one_line(tmp_path: Path):
    import subprocess
    import sys

    (tmp_path / "s.py").write_text("print(1)\n")
    probe = (
        "import sys; sys.modules['torch'] = None\n"
        "from synclint.cli import main; sys.argv = ['synclint', 'run', 's.py']; main()\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "synclint[runtime]" in result.stderr and "Traceback" not in result.stderr


def test_watch_in_a_real_process_sees_a_file_change(tmp_path: Path):
    import queue
    import subprocess
    import sys
    import threading
    import time

    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "synclint", "check", "--watch", "--no-cache", "--output-format", "concise", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()

    def wait_for(text: str, seconds: float = 60) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if text in lines.get(timeout=1):
                    return True
            except queue.Empty:
                continue
        return False

    try:
        assert wait_for("All checks passed!"), "no first report from the watcher"
        # The watcher starts listening after its first run; on a loaded machine a write made
        # before that is missed, so write again (a fresh change each time) until it reports.
        for attempt in range(6):
            path.write_text(HAZARD + f"# change {attempt}\n")
            if wait_for(":5:12: SL101 ", seconds=10):
                break
        else:
            raise AssertionError("the watcher never reported the change")
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_fix_reads_stdin_too():
    diff = run("fix", "-", input=LOADER)
    assert diff.exit_code == 1 and "+    x = x.to(device, non_blocking=True)" in diff.stdout
    applied = run("fix", "--apply", "--stdin-filename", "train.py", input=LOADER)
    assert applied.stdout == LOADER.replace("x.to(device)", "x.to(device, non_blocking=True)")


def test_stdin_fix_keeps_the_encoding_bom_and_line_endings():
    source = "\ufeff# -*- coding: utf-8 -*-\r\n" + LOADER.replace("\n", "\r\n") + "s = 'é'\r\n"
    result = run("check", "--fix", "-", input=source.encode("utf-8"))
    assert result.stdout_bytes == source.replace("x.to(device)", "x.to(device, non_blocking=True)").encode("utf-8")


def test_check_fix_with_a_broken_file_lists_it_once_and_exits_2(tmp_path: Path):
    (tmp_path / "m.py").write_text(LOADER)
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = CliRunner().invoke(cli, ["check", "--fix", "--no-cache", "--output-format", "concise", str(tmp_path)])
    assert result.exit_code == 2
    assert (result.stdout + result.stderr).count("SL000") == 2  # the finding line and the summary's "(SL000)"
    assert "non_blocking=True" in (tmp_path / "m.py").read_text()


def test_rule_sl002_prints_its_docs():
    result = run("rule", "SL002")
    assert result.exit_code == 0 and result.output.startswith("# unused-suppression (SL002)")
    assert "## When it runs" in result.output


def test_a_clean_check_says_so(tmp_path: Path):
    (tmp_path / "m.py").write_text("x = 1\n")
    assert run("check", "--no-cache", str(tmp_path)).output == "All checks passed!\n"
    assert run("check", "--no-cache", "--output-format", "json", str(tmp_path)).output == "[]\n"


def test_words_after_a_noqa_are_not_taken_for_unknown_codes(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()  # noqa: SL101 slow path\n")
    output = run("check", "--no-cache", "--extend-select", "SL002", str(path)).output
    assert output == "All checks passed!\n"


def test_no_suppression_is_judged_in_a_file_the_prefilter_skipped(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return x.item()  # synclint: ignore[SL201]\n")  # nothing points at torch
    output = run("check", "--no-cache", "--extend-select", "SL002", str(path)).output
    assert output == "All checks passed!\n"
