"""Odd files never stop a run: each yields findings or exactly one SL000."""

from __future__ import annotations

import codecs
import subprocess
import sys
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

TORCH_BODY = "import torch\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"


def _odd_files() -> dict[str, bytes]:
    return {
        "latin1_cookie.py": b"# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\ndef f(m):\n    return torch.nonzero(m)\n",
        "utf16_no_cookie.py": "import torch\nidx = torch.nonzero(m)\n".encode("utf-16"),
        "utf8_bom.py": codecs.BOM_UTF8 + TORCH_BODY.encode(),
        "bom_and_cookie_mismatch.py": codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n",
        "crlf.py": TORCH_BODY.replace("\n", "\r\n").encode(),
        "lone_cr.py": TORCH_BODY.replace("\n", "\r").encode(),
        "tabs.py": b"import torch\ndef f(x: torch.Tensor):\n\tif x:\n\t\treturn x.item()\n",
        "mixed_tabs_spaces.py": b"def f():\n\tif x:\n        pass\n",
        "form_feed.py": b"import torch\n\x0c\ndef f(x: torch.Tensor):\n    return x.nonzero()\n",
        "long_line.py": b"import torch\nx = [" + b"1, " * 50_000 + b"]\ndef f(z):\n    return torch.nonzero(z)\n",
        "nested_500_parens.py": b"import torch\nx = " + b"(" * 500 + b"1" + b")" * 500 + b"\n",
        "nested_2000_brackets.py": b"import torch\nx = " + b"[" * 2000 + b"]" * 2000 + b"\n",
        "deep_operators.py": b"import torch\nx = " + b" + ".join([b"a"] * 3000) + b"\n",
        "deep_unary.py": b"import torch\nx = " + b"-" * 20_000 + b"y\n",
        "deep_indent.py": b"import torch\n" + b"".join(b" " * i + b"if x:\n" for i in range(120)) + b" " * 120 + b"pass\n",
        "nested_defs.py": b"import torch\n" + b"".join(b"    " * i + b"def f%d(x):\n" % i for i in range(90)) + b"    " * 90 + b"return x.item()\n",
        "binary_junk.py": bytes(range(256)) * 40,
        "null_bytes.py": b"import torch\nx = 1\x00\n",
        "not_python.py": b"<html><body>This is not Python</body></html>\n",
        "json_named_py.py": b'{"a": [1, 2, {"b": null}]}\n',
        "python2.py": b"print 'hello'\nexec 'x = 1'\n",
        "empty.py": b"",
        "only_comments.py": b"# nothing here\n\n",
        # A codec a package registers at start-up (future-fstrings) reads as UTF-8...
        "unknown_cookie.py": b"# -*- coding: future_fstrings -*-\nimport torch\ndef f(m):\n    return torch.nonzero(m)\n",
        # ... bytes that are not UTF-8 under it do not.
        "bad_cookie.py": b"# -*- coding: no-such-codec -*-\nx = '\xe9'\n",
        "invalid_utf8.py": b"import torch\nx = '\xff\xfe'\n",
        "trailing_backslash.py": b"import torch\nx = 1 + \\\n",
        "unterminated_string.py": b'import torch\nx = """never closed\n',
    }


def _deep_operators_outcomes() -> tuple[list[str] | None, ...]:
    """What checking deep_operators.py (a 3,000-term chain, no sync) may give on this Python.

    CPython 3.11 and 3.12.1 refuse to compile the chain (their compiler counts
    the recursion limit), so the guard reports SL000. 3.12.3 and 3.13 compile it:
    the file reaches libcst, and the analysis either runs out of recursion
    ("cannot analyse", SL000) or has nothing to report.
    """
    source = _odd_files()["deep_operators.py"].decode()
    try:
        compile(source, "<deep_operators>", "exec", dont_inherit=True)
    except (RecursionError, SyntaxError, MemoryError):
        return (["SL000"],)
    return (["SL000"], None, [])


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("odd")
    for name, data in _odd_files().items():
        (root / name).write_bytes(data)
    return root


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_odd_file_yields_findings_or_one_sl000(odd_tree, jobs):
    findings = lint_paths([odd_tree], Settings(root=odd_tree), RunOptions(jobs=jobs, use_cache=False))
    by_file: dict[str, list[str]] = {}
    for finding in findings:
        by_file.setdefault(Path(finding.path).name, []).append(finding.code)
    for name, codes in by_file.items():
        if "SL000" in codes:
            assert codes == ["SL000"], (name, codes)
    expected_errors = {
        "utf16_no_cookie.py", "binary_junk.py", "not_python.py", "bad_cookie.py",
        "nested_2000_brackets.py", "deep_unary.py", "deep_indent.py",
        "trailing_backslash.py", "unterminated_string.py", "mixed_tabs_spaces.py", "null_bytes.py",
        "invalid_utf8.py",
    }
    for name in expected_errors:
        assert by_file.get(name) == ["SL000"], (name, by_file.get(name))
    assert by_file.get("deep_operators.py") in _deep_operators_outcomes(), by_file.get("deep_operators.py")
    for name in ("latin1_cookie.py", "unknown_cookie.py", "utf8_bom.py", "crlf.py", "tabs.py", "form_feed.py",
                 "long_line.py"):
        assert by_file.get(name) and "SL000" not in by_file[name], (name, by_file.get(name))
    assert "json_named_py.py" not in by_file and "empty.py" not in by_file
    # Python 2 runs with no current PyTorch: its SL000 is cold (see tests/test_legacy_syntax.py).
    assert "python2.py" not in by_file


def test_crlf_positions_match_lf_positions(odd_tree):
    settings = Settings(root=odd_tree)
    options = RunOptions(jobs=1, use_cache=False)
    crlf = lint_paths([odd_tree / "crlf.py"], settings, options)
    bom = lint_paths([odd_tree / "utf8_bom.py"], settings, options)
    assert [(f.line, f.column, f.code) for f in crlf] == [(f.line, f.column, f.code) for f in bom]


# -- the nesting guard does not depend on the caller -----------------------------------
# Each case runs in a child process: before the guard was fixed, they segfaulted.

_RAISED_LIMIT = """
import sys
sys.setrecursionlimit(50000)
from synclint.engine import check_source
source = "import torch\\ndef f(a):\\n    return torch.nonzero(" + " + ".join(["a"] * {terms}) + ")\\n"
print([(f.code, f.line) for f in check_source(source, "m.py")])
"""

_NEWER_SYNTAX_THEN_DEEP = 'import torch\nx = f"{"a"}"\ny = ' + "-" * 12_000 + "z\n"


def _child(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args] if args else [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=300,
    )


@pytest.mark.parametrize("terms", [10_000, 50_000])
def test_guard_ignores_a_raised_recursion_limit(terms):
    result = _child(_RAISED_LIMIT.format(terms=terms))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[('SL000', 1)]"


def test_guard_scans_what_this_python_cannot_parse():
    code = f"from synclint.engine import check_source\nprint([f.code for f in check_source({_NEWER_SYNTAX_THEN_DEEP!r}, 'm.py')])"
    result = _child(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "['SL000']"


def test_cli_jobs_1_survives_newer_syntax_then_deep_nesting(tmp_path):
    target = tmp_path / "deep_fstring.py"
    target.write_text(_NEWER_SYNTAX_THEN_DEEP)
    result = _child("", "-m", "synclint", "check", "--jobs", "1", "--no-cache", str(target))
    assert result.returncode == 1, result.stderr[-2000:]
    assert "SL000" in result.stdout


def test_deep_operators_file_is_sl000_after_a_library_raised_the_limit(odd_tree):
    """TorchInductor raises the recursion limit on a cold cache; test order must not matter."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        findings = lint_paths([odd_tree / "deep_operators.py"], Settings(root=odd_tree), RunOptions(jobs=1, use_cache=False))
    finally:
        sys.setrecursionlimit(saved)
    assert [f.code for f in findings] in _deep_operators_outcomes()


def test_lexical_scan_keeps_ordinary_code():
    from synclint.guard import lexical_nesting_problem

    ordinary = "x = [" + ", ".join(["-1"] * 5000) + "]\n" + "y = {" + ", ".join(f"'k{i}': a + b" for i in range(3000)) + "}\n"
    assert lexical_nesting_problem(ordinary) is None
    assert lexical_nesting_problem("x = " + "(" * 201 + ")" * 201 + "\n") is not None
    assert lexical_nesting_problem("x = a" + ".b" * 1001 + "\n") is not None
