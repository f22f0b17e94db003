"""The engine's contract: bad input becomes one SL000 entry, suppression, positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.engine import SourceError, check_file, check_source

HAZARD = "import torch\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"


def test_finding_carries_exact_span_and_message():
    (finding,) = check_source(HAZARD, "m.py")
    assert (finding.code, finding.name) == ("SL101", "nonzero")
    assert (finding.line, finding.column, finding.end_line, finding.end_column) == (3, 12, 3, 23)
    assert "`.nonzero()`" in finding.message and "torch.where" in finding.message
    assert finding.source_line == "    return x.nonzero()"


def test_syntax_error_is_one_sl000_with_its_location():
    (finding,) = check_source("def f(:\n    pass\n", "bad.py")
    assert finding.code == "SL000" and finding.severity == "error"
    assert finding.line == 1 and "syntax error" in finding.message


def test_non_utf8_file_is_sl000(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (finding,) = check_file(path)
    assert finding.code == "SL000" and "utf-8" in finding.message


def test_coding_cookie_is_honoured(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes("# -*- coding: latin-1 -*-\nimport torch\nx = 'caf\xe9'\ndef f(m):\n    return torch.nonzero(m)\n".encode("latin-1"))
    assert [(f.code, f.line) for f in check_file(path)] == [("SL101", 5)]


def test_a_codec_python_does_not_know_reads_as_utf8(tmp_path):
    # FCGF's `# -*- coding: future_fstrings -*-`: the future-fstrings package registers the
    # codec at start-up to rewrite f-strings for old Pythons; the text is UTF-8.
    path = tmp_path / "trainer.py"
    path.write_bytes("# -*- coding: future_fstrings -*-\nimport torch\nx = f'caf\xe9'\ndef f(m):\n    return torch.nonzero(m)\n".encode())
    assert [(f.code, f.line) for f in check_file(path)] == [("SL101", 5)]
    path.write_bytes(b"# -*- coding: future_fstrings -*-\nx = 'caf\xe9'\n")  # (latin-1 bytes: not UTF-8)
    (finding,) = check_file(path)
    assert finding.code == "SL000" and "utf-8" in finding.message


def test_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbf" + HAZARD.encode())
    assert [(f.code, f.line, f.column) for f in check_file(path)] == [("SL101", 3, 12)]


def test_unreadable_file_is_sl000(tmp_path):
    path = tmp_path / "gone.py"
    (finding,) = check_file(path)
    assert finding.code == "SL000" and "cannot read" in finding.message


def test_empty_and_whitespace_files_have_no_findings(tmp_path):
    # Empty __init__.py files are everywhere; they are valid Python, not errors.
    for text in ("", "\n\n", "   \n"):
        path = tmp_path / "empty.py"
        path.write_text(text)
        assert check_file(path) == []


def test_crlf_source_positions():
    (finding,) = check_source(HAZARD.replace("\n", "\r\n"), "crlf.py")
    assert (finding.line, finding.column) == (3, 12)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_lines_are_counted_as_python_counts_them(end):
    # A form feed is whitespace inside a Python line, and a lone CR ends one: the finding's
    # source line, its suppression comment and the one `--add-noqa` writes all follow
    # Python's numbering (``str.splitlines`` splits at form feeds and showed line 4).
    from synclint.suppression import add_directives

    source = end.join(["import torch", "\x0c", "def f(x: torch.Tensor):", "    a = 1 \x0c", "    return x.item()", ""])
    (finding,) = check_source(source, "ff.py")
    assert (finding.line, finding.column, finding.source_line) == (5, 12, "    return x.item()")
    assert check_source(source.replace("x.item()", "x.item()  # noqa: SL201"), "ff.py") == []
    assert add_directives(source, [(5, 5, "SL201")]) == (
        source.replace("x.item()", "x.item()  # synclint: ignore[SL201]"), 1, []
    )


@pytest.mark.parametrize(
    "comment",
    ["# synclint: ignore[SL101]", "# synclint: ignore", "# noqa: SL101", "# noqa", "# noqa: E501, SL101"],
)
def test_suppression_comments(comment):
    source = f"import torch\ndef f(x: torch.Tensor):\n    return x.nonzero()  {comment}\n"
    assert check_source(source) == []


@pytest.mark.parametrize("comment", ["# synclint: ignore[SL201]", "# noqa: E501", "# nosynclint"])
def test_suppression_of_other_codes_keeps_the_finding(comment):
    source = f"import torch\ndef f(x: torch.Tensor):\n    return x.nonzero()  {comment}\n"
    assert [f.code for f in check_source(source)] == ["SL101"]


def test_suppression_on_last_line_of_multiline_node():
    source = "import torch\ndef f(m):\n    return torch.nonzero(\n        m\n    )  # synclint: ignore[SL101]\n"
    assert check_source(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "x = 1  # noqa: SL201\ny = 2\n",
        "x = 1\r\ny = 2  # synclint: ignore[SL101]\r\nz = 3\r\n",
        "a = 1\rb = 2  # noqa: SL201\nc = 3  # noqa\n",  # a lone CR ends a line, as in Python
        's = """\n# noqa: SL201\n"""\nt = "# synclint: ignore"  # noqa: SL101\n',  # text in strings is no comment
        "x = [\n    1,  # synclint: ignore[SL101, SL201]\n]  # noqa\n",
        "def f():\n\treturn 1  # NOQA:SL201\n# synclint: ignore",
    ],
)
def test_suppressions_asked_for_some_lines_equal_all_of_them_there(source):
    """Only the lines asked about are read for directives before tokenizing: never a
    different answer on those lines."""
    from synclint.suppression import suppressions

    every = suppressions(source)
    assert every  # each source has a directive somewhere
    for line in range(1, source.count("\n") + 3):
        assert suppressions(source, {line}).get(line) == every.get(line), line


def test_all_rules_in_one_file_are_sorted_by_position():
    source = (
        "import torch\n"
        "def loss_fn(x: torch.Tensor):\n"
        "    u = torch.unique(x)\n"
        "    n = x.nonzero()\n"
        "    if x.sum() > 0:\n"
        "        return x.item()\n"
    )
    found = [(f.line, f.code) for f in check_source(source)]
    assert found == [(3, "SL102"), (4, "SL101"), (5, "SL202"), (6, "SL201")]


def test_messages_name_the_loop_and_hot_function():
    source = (
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        for i in range(3):\n"
        "            x = x[x > 0]\n"
        "        return x\n"
    )
    (finding,) = check_source(source)
    assert finding.message.endswith("(inside a loop in `Net.forward`)")


def test_static_checker_never_imports_torch():
    import subprocess
    import sys

    code = (
        "import sys, synclint.cli, synclint.engine;"
        "from synclint.engine import check_source;"
        "check_source('import torch\\nx = torch.nonzero(m)\\n');"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _codes_at(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(source)]


def test_with_bodies_always_run_so_cpu_results_are_host_tensors():
    source = (
        "import torch\n"
        "def evaluate(model, x):\n"
        "    with torch.no_grad():\n"
        "        out = model(x).cpu()\n"
        "        return out.numpy(), out.tolist()\n"
    )
    assert _codes_at(source) == [("SL201", 4)]  # only the copy itself


def test_host_tensor_in_one_match_arm_proves_nothing():
    source = (
        "import torch\n"
        "def step(x: torch.Tensor, flag: int):\n"
        "    match flag:\n"
        "        case 1:\n"
        "            x = x.cpu()\n"
        "    return x.item()\n"
    )
    assert ("SL201", 6) in _codes_at(source)


def test_comprehension_variables_do_not_leak_host_ness():
    source = (
        "import torch\n"
        "def step(x: torch.Tensor):\n"
        "    a = [x for x in torch.tensor([1, 2])]\n"
        "    return x.item()\n"
    )
    assert _codes_at(source) == [("SL201", 4)]


def test_helpers_returning_host_tensors_keep_their_results_on_the_host():
    source = (
        "import torch\n"
        "def get_params(n):\n"
        "    return torch.randperm(n)\n"
        "def on_device(x: torch.Tensor):\n"
        "    return x * 2\n"
        "def apply(x: torch.Tensor):\n"
        "    order = get_params(4)\n"
        "    if order[0] == 0:\n"
        "        x = x + 1\n"
        "    if on_device(x).sum() > 0:\n"
        "        return x\n"
    )
    assert _codes_at(source) == [("SL202", 10)]


def test_unvalidated_parse_builds_the_same_tree_and_leaves_validation_on():
    import libcst as cst

    from synclint.engine import parse

    source = (Path(__file__).parent.parent / "examples" / "seed_segmentation.py").read_text(encoding="utf-8")
    assert parse(source).deep_equals(cst.parse_module(source))
    with pytest.raises(cst.CSTValidationError):  # nodes built after a parse are checked again
        cst.Name("1x")
    with pytest.raises(SourceError):
        parse("def (:\n")
    with pytest.raises(cst.CSTValidationError):  # ...also after a parse that failed
        cst.Name("1x")
