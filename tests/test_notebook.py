"""Notebooks: cell-relative findings, IPython syntax, fixes written back into the JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from synclint.cli import cli
from synclint import check_source
from synclint.notebook import check_notebook_source, mask_ipython


def code(source: str, outputs=None) -> dict:
    return {
        "cell_type": "code",
        "execution_count": 3,
        "metadata": {"tags": ["keep-me"]},
        "outputs": outputs or [],
        "source": source.splitlines(keepends=True),
    }


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(keepends=True)}


def notebook(*cells: dict, **metadata) -> str:
    document = {"cells": list(cells), "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


#: A flagged op in a function a cell defines (a cell's own code outside a loop runs once: cold).
IN_A_FUNCTION = "def f(m):\n    return torch.nonzero(m)\n"


def positions(text: str) -> list[tuple[str, int | None, int, int]]:
    return [(f.code, f.cell, f.line, f.column) for f in check_source(text, "nb.ipynb")]


def test_imports_in_an_earlier_cell_resolve_and_locations_are_cell_relative():
    text = notebook(markdown("# Title"), code("import torch as T\n"), code("x = 1\ndef f(m):\n    return T.nonzero(m)"))
    assert positions(text) == [("SL101", 3, 3, 12)]


@pytest.mark.parametrize(
    "line",
    ["%timeit f()", "!pip install torch", "files = !ls", "x = %env HOME", "T.nonzero?", "??T.nonzero", "x.sum()?"],
)
def test_line_magics_are_skipped_and_the_rest_of_the_cell_is_checked(line):
    text = notebook(code("import torch as T\n"), code(f"for i in r:\n    {line}\n    y = T.nonzero(m)\n"))
    assert positions(text) == [("SL101", 2, 3, 9)]


@pytest.mark.parametrize(
    "line", ["pip install -r requirements.txt", "ls /content/checkpoints/", "cd ..", "time f(x)", "load_ext autoreload"],
)
def test_magics_and_shell_aliases_without_percent_are_ipython(line):
    # IPython's automagic runs them (vissl's tutorial lists its checkpoints with `ls`).
    text = notebook(code("import torch as T\n"), code(f"{line}\n\n"), code("for i in r:\n    y = T.nonzero(m)\n"))
    assert positions(text) == [("SL101", 3, 2, 9)]


@pytest.mark.parametrize(
    "source",
    ["pip install -r requirements.txt\nfor i in r:\n    y = T.nonzero(m)\n",
     "for i in r:\n    ls /content/checkpoints/\n    y = T.nonzero(m)\n",
     "# checkpoints\nls /content/checkpoints/\nfor i in r:\n    y = T.nonzero(m)\n"],
)
def test_magics_without_percent_in_a_cell_of_several_lines_are_no_ipython(source):
    # IPython applies automagic to a cell of one line only (InteractiveShell.transform_cell:
    # "only applied for single line commands"): in a longer cell the line is a SyntaxError
    # and nothing of the cell runs, so its code is not checked as if it did.
    text = notebook(code("import torch as T\n"), code(source))
    assert [(code, cell) for code, cell, _line, _column in positions(text)] == [("SL000", 2)]


@pytest.mark.parametrize("source", ["time = (1,\n        2)\n", "ls = [1]\n", "pip.main()\n", "run(x)\n", "cd\n"])
def test_python_that_begins_with_a_magic_s_name_stays_python(source):
    originals: list[str] = []
    assert mask_ipython(source, originals) == source


def test_cell_magics_skip_the_whole_cell():
    text = notebook(code("import torch\n"), code("%%bash\necho $((1 + 2))\n"), code(IN_A_FUNCTION))
    assert positions(text) == [("SL101", 3, 2, 12)]


def test_percent_and_bang_continuing_an_expression_stay_python():
    source = "s = ('%d'\n     % 3)\nok = (a\n  != b)\n"
    originals: list[str] = []
    assert mask_ipython(source, originals) == source
    assert originals == []


def test_a_shell_command_continued_on_indented_lines_is_masked_whole():
    # nerf_pl's extract_mesh.ipynb: `!python extract_color_mesh.py \` then `    --root_dir $ROOT_DIR \`.
    cell = "import torch\nfor m in ms:\n    !python run.py \\\n        --root $ROOT \\\n  --n 3\n    y = torch.nonzero(m)\n"
    assert positions(notebook(code(cell))) == [("SL101", 1, 6, 9)]
    originals: list[str] = []
    masked = mask_ipython(cell, originals).splitlines()
    assert originals == ["    !python run.py \\", "        --root $ROOT \\", "  --n 3"]
    assert [line[: len(line) - len(line.lstrip())] for line in masked[2:5]] == ["    "] * 3


def test_a_cell_that_does_not_parse_is_reported_and_the_others_are_checked():
    text = notebook(code("import torch\n"), code("def f(:\n    pass\n"), code(IN_A_FUNCTION))
    assert positions(text) == [("SL000", 2, 1, 7), ("SL101", 3, 2, 12)]


def test_invalid_json_and_other_languages():
    assert [f.code for f in check_source("{not json", "nb.ipynb")] == ["SL000"]
    r_notebook = notebook(code("x <- nonzero(m)\n"), language_info={"name": "R"})
    assert check_notebook_source(r_notebook, "nb.ipynb") == []


def test_json_output_has_the_cell_and_text_output_the_cell_location(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook(code("import torch\n"), code(IN_A_FUNCTION)))
    runner = CliRunner()
    result = runner.invoke(cli, ["check", "--output-format", "json", str(path)])
    assert result.exit_code == 1
    [entry] = json.loads(result.output)
    assert (entry["cell"], entry["line"], entry["column"]) == (2, 2, 12)
    text = runner.invoke(cli, ["check", str(path)])
    assert f"{path}:cell_2:2:12: SL101" in text.output


def test_directories_include_notebooks(tmp_path):
    (tmp_path / "nb.ipynb").write_text(notebook(code("import torch\n" + IN_A_FUNCTION)))
    result = CliRunner().invoke(cli, ["check", "--output-format", "json", str(tmp_path)])
    assert [e["path"].endswith("nb.ipynb") for e in json.loads(result.output)] == [True]


FIXABLE = "import torch\nfrom torch.utils.data import DataLoader\n%matplotlib inline\n"
LOADER = "loader = DataLoader(ds)\n!nvidia-smi\nfor batch in loader: batch.cuda(non_blocking=True)"


def test_fix_rewrites_only_the_changed_cell_source(tmp_path):
    outputs = [{"name": "stdout", "output_type": "stream", "text": ["DataLoader(ds)\n"]}]
    original = notebook(code(FIXABLE), markdown("DataLoader(ds)"), code(LOADER, outputs), kernelspec={"name": "python3"})
    path = tmp_path / "nb.ipynb"
    path.write_text(original)

    diff = CliRunner().invoke(cli, ["fix", str(path)])
    assert diff.exit_code == 1
    assert f"+++ b/{path}:cell_3" in diff.output
    assert "+loader = DataLoader(ds, pin_memory=True)" in diff.output
    assert path.read_text() == original  # a diff writes nothing

    applied = CliRunner().invoke(cli, ["fix", "--apply", str(path)])
    assert applied.exit_code == 0, applied.output
    fixed = json.loads(path.read_text())
    before = json.loads(original)
    assert fixed["cells"][2]["source"] == [
        "loader = DataLoader(ds, pin_memory=True)\n",
        "!nvidia-smi\n",
        "for batch in loader: batch.cuda(non_blocking=True)",
    ]
    fixed["cells"][2]["source"] = before["cells"][2]["source"]
    assert fixed == before  # outputs, metadata, other cells untouched
    # Formatting kept: only the fixed line differs in the file's text.
    changed = [line for line in path.read_text().splitlines() if line not in original.splitlines()]
    assert changed == ['    "loader = DataLoader(ds, pin_memory=True)\\n",']
    again = CliRunner().invoke(cli, ["fix", str(path)])
    assert again.exit_code == 0 and again.output == ""


@pytest.mark.parametrize(
    "document",
    [
        {"cells": [{"cell_type": "code", "source": None}], "metadata": []},
        {"cells": [{"cell_type": "code"}, "not a cell", {"cell_type": "code", "source": [1, "x = 1"]}]},
        {"cells": [], "metadata": {"language_info": "python"}},
        {"worksheets": []},
        [],
    ],
)
def test_malformed_notebooks_never_crash(document):
    findings = check_source(json.dumps(document), "nb.ipynb")
    assert all(f.code == "SL000" for f in findings)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("%!?x=( )\n\t'\"#:.")), max_size=40), max_size=4))
def test_any_cell_text_is_handled(cells):
    text = notebook(code("import torch\n"), *(code(source) for source in cells))
    for finding in check_source(text, "nb.ipynb"):
        assert finding.cell is not None


def test_text_a_fix_puts_above_the_first_cell_marker_goes_into_the_first_cell():
    from synclint.notebook import Notebook, VirtualModule, _masked_cells

    originals: list[str] = []
    nb = Notebook.from_text(notebook(code("x = 1\n"), code("%ls\ny = 2")))
    virtual = VirtualModule.build(_masked_cells(nb, originals), originals)
    assert virtual.split("import torch\n" + virtual.source) == {1: "import torch\nx = 1\n", 2: "%ls\ny = 2\n"}
