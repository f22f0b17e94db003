"""``synclint server``: a real LSP exchange over stdio, driven by a pure-Python client
(always runs) and by Neovim's built-in client (skipped where ``nvim`` is absent)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synclint.fixers.apply import fix_text
from tests.lsp_client import LspClient, apply_text_edits

LOADER = "import torch\nfor x, y in loader:\n    x: torch.Tensor  # a proven tensor: the safe fix needs one\n    x = x.to(device)\n    n = x.nonzero()\n"
FIXED = "import torch\nfor x, y in loader:\n    x: torch.Tensor  # a proven tensor: the safe fix needs one\n    x = x.to(device, non_blocking=True)\n    n = x.nonzero()\n"


@pytest.fixture
def client(tmp_path: Path):
    env = {**os.environ, "SYNCLINT_CACHE_DIR": str(tmp_path / "cache")}
    client = LspClient(sys.executable, "-m", "synclint", "server", cwd=str(tmp_path), env=env)
    result = client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
    assert result["serverInfo"]["name"] == "synclint"
    assert result["capabilities"]["hoverProvider"] and result["capabilities"]["codeActionProvider"]
    assert result["capabilities"]["textDocumentSync"]["change"] == 1  # full
    client.notify("initialized", {})
    yield client
    assert client.close() == 0


def _open(client: LspClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}},
    )
    return uri


def test_open_code_action_applies_what_fix_writes(client: LspClient, tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(LOADER)
    uri = _open(client, path, LOADER)
    diagnostics = client.diagnostics(uri)
    assert [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in diagnostics] == [
        ("SL401", 3, 8), ("SL101", 4, 8),
    ]
    assert all(d["source"] == "synclint" for d in diagnostics)
    upload = diagnostics[0]
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": upload["range"], "context": {"diagnostics": [upload]}},
    )
    quick = [a for a in actions if a["kind"] == "quickfix" and a.get("isPreferred")]
    assert [a["title"] for a in quick] == ["synclint (SL401): Pass `non_blocking=True`"]
    fixed = apply_text_edits(LOADER, quick[0]["edit"]["changes"][uri])
    assert fixed == FIXED == fix_text(LOADER, str(path))[0]
    # The fix-all source action writes exactly what `synclint check --fix` writes.
    fix_all = [a for a in actions if a["kind"] == "source.fixAll.synclint"]
    assert apply_text_edits(LOADER, fix_all[0]["edit"]["changes"][uri]) == FIXED
    subprocess.run([sys.executable, "-m", "synclint", "check", "--fix", "--no-cache", str(path)], capture_output=True)
    assert path.read_text() == FIXED


def test_change_and_save_publish_fresh_diagnostics(client: LspClient, tmp_path: Path):
    path = tmp_path / "m.py"
    uri = _open(client, path, LOADER)
    assert len(client.diagnostics(uri)) == 2
    client.notify(  # the server asks for full text sync: each change carries the whole text
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": LOADER.replace("    n = x.nonzero()\n", "")}]},
    )
    assert [d["code"] for d in client.diagnostics(uri)] == ["SL401"]
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in client.diagnostics(uri)] == ["SL401"]


def test_unsafe_fix_is_offered_labelled_and_not_preferred(client: LspClient, tmp_path: Path):
    text = "import torch\n\n\ndef g(x: torch.Tensor):\n    return x[x > 0].sum()\n"
    uri = _open(client, tmp_path / "m.py", text)
    (diagnostic,) = client.diagnostics(uri)
    assert diagnostic["code"] == "SL103" and diagnostic["data"] == {"fix": "unsafe"}
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}},
    )
    unsafe = [a for a in actions if a["title"].endswith("(unsafe fix)")]
    assert len(unsafe) == 1 and not unsafe[0].get("isPreferred")
    assert apply_text_edits(text, unsafe[0]["edit"]["changes"][uri]) == fix_text(text, "m.py", unsafe=True)[0]
    assert not [a for a in actions if a["kind"] == "source.fixAll.synclint"]  # no safe fix: no fix-all
    silence = [a for a in actions if a["title"] == "synclint: silence SL103 on this line"]
    assert apply_text_edits(text, silence[0]["edit"]["changes"][uri]).splitlines()[4] == (
        "    return x[x > 0].sum()  # synclint: ignore[SL103]"
    )


def test_hover_shows_the_rule_docs(client: LspClient, tmp_path: Path):
    uri = _open(client, tmp_path / "m.py", LOADER)
    client.diagnostics(uri)
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 10}})
    assert hover["contents"]["kind"] == "markdown"
    assert hover["contents"]["value"].startswith("# nonzero (SL101)") and "## What it does" in hover["contents"]["value"]
    nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert nothing is None


def test_project_config_is_honoured(client: LspClient, tmp_path: Path):
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SL101"]\nper-file-ignores = { "tests/*" = ["SL401"] }\n')
    uri = _open(client, project / "src.py", LOADER)
    assert [d["code"] for d in client.diagnostics(uri)] == ["SL401"]
    uri = _open(client, project / "tests" / "t.py", LOADER)
    assert client.diagnostics(uri) == []


def test_positions_are_utf16_after_wide_characters(client: LspClient, tmp_path: Path):
    text = 'import torch\n\n\ndef f(x: torch.Tensor):\n    return "𝔸", x.nonzero()\n'
    uri = _open(client, tmp_path / "m.py", text)
    (diagnostic,) = client.diagnostics(uri)
    # "𝔸" is one code point but two UTF-16 units: the span starts one unit later.
    assert diagnostic["range"]["start"] == {"line": 4, "character": 17}


def test_the_server_never_imports_torch(tmp_path: Path):
    probe = (
        "import sys\n"
        "from synclint.server.app import create_server\n"
        "from synclint.engine import check_source\n"
        "server = create_server()\n"
        "check_source('import torch\\nx = torch.zeros(3).nonzero()\\n', 'm.py')\n"
        "from synclint.rules import RULES_BY_CODE\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


NVIM_SCRIPT = r"""
local out = {}
local root = vim.fn.getcwd()
local id = vim.lsp.start_client({
  name = 'synclint',
  cmd = { PYTHON, '-m', 'synclint', 'server' },
  root_dir = root,
})
vim.cmd('edit ' .. FILE)
vim.lsp.buf_attach_client(0, id)
local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) >= 2 end, 50)
out.codes = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out.codes, { d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code), d.lnum, d.col })
end
local params = {
  textDocument = { uri = vim.uri_from_bufnr(0) },
  range = { start = { line = 3, character = 8 }, ['end'] = { line = 3, character = 8 } },
  context = { diagnostics = {} },
}
local responses = vim.lsp.buf_request_sync(0, 'textDocument/codeAction', params, 60000) or {}
out.titles = {}
for _, response in pairs(responses) do
  for _, action in ipairs(response.result or {}) do
    table.insert(out.titles, action.title)
    if action.isPreferred then
      vim.lsp.util.apply_workspace_edit(action.edit, 'utf-16')
    end
  end
end
vim.cmd('write')
local hover = vim.lsp.buf_request_sync(0, 'textDocument/hover',
  { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 4, character = 10 } }, 60000) or {}
for _, response in pairs(hover) do
  if response.result then out.hover = response.result.contents.value:sub(1, 40) end
end
vim.fn.writefile({ vim.fn.json_encode(out) }, OUT)
vim.lsp.stop_client(id)
vim.cmd('qall!')
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (`nvim`) is not installed")
def test_neovim_lsp_client_gets_diagnostics_and_applies_the_fix(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(LOADER)
    out = tmp_path / "out.json"
    script = tmp_path / "drive.lua"
    script.write_text(
        f"PYTHON = {json.dumps(sys.executable)}\nFILE = {json.dumps(str(path))}\nOUT = {json.dumps(str(out))}\n"
        + NVIM_SCRIPT
    )
    env = {**os.environ, "SYNCLINT_CACHE_DIR": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    subprocess.run(
        ["nvim", "--headless", "-n", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
        cwd=tmp_path, env=env, timeout=120, check=True, capture_output=True,
    )
    result = json.loads(out.read_text())
    assert result["codes"] == [["SL401", 3, 8], ["SL101", 4, 8]]
    assert "synclint (SL401): Pass `non_blocking=True`" in result["titles"]
    assert path.read_text() == FIXED
    assert result["hover"].startswith("# nonzero (SL101)")


def test_a_broken_config_is_shown_once_and_defaults_apply(client: LspClient, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.synclint]\nselect = ["SL999"]\n')
    uri = _open(client, project / "m.py", LOADER)
    message = client.wait_for(lambda m: m.get("method") == "window/showMessage")
    assert message["params"]["type"] == 1 and "SL999" in message["params"]["message"]
    assert [d["code"] for d in client.diagnostics(uri)] == ["SL401", "SL101"]


def test_excluded_files_get_no_diagnostics(client: LspClient, tmp_path: Path):
    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.synclint]\nextend-exclude = ["generated"]\n')
    uri = _open(client, project / "generated" / "m.py", LOADER)
    assert client.diagnostics(uri) == []


def test_a_burst_of_edits_is_checked_once_at_its_last_version(client: LspClient, tmp_path: Path):
    uri = _open(client, tmp_path / "m.py", LOADER)
    assert len(client.diagnostics(uri)) == 2
    text = LOADER
    for version in range(2, 7):  # five edits in a row, each appending a hazard line
        text += f"    z{version} = x.nonzero()\n"
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )
    message = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    assert message["params"]["version"] == 6  # no diagnostics for the intermediate texts
    assert [d["code"] for d in message["params"]["diagnostics"]] == ["SL401"] + ["SL101"] * 6


def test_lines_are_counted_as_python_and_lsp_count_them(client: LspClient, tmp_path: Path):
    # A form feed ends a line for str.splitlines, not for Python or LSP.
    text = "import torch\n\x0c\n\n# \x0c section\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
    uri = _open(client, tmp_path / "m.py", text)
    (diagnostic,) = client.diagnostics(uri)
    assert diagnostic["range"]["start"] == {"line": 5, "character": 11}


def test_an_internal_error_becomes_one_sl000_diagnostic(monkeypatch, tmp_path: Path):
    from synclint.server import app

    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr("synclint.engine.check_source", broken)
    (finding,) = app._check_text(LOADER, str(tmp_path / "m.py"), app.Settings(root=tmp_path))
    assert (finding.code, finding.message) == ("SL000", "internal error while checking: ValueError: boom")
