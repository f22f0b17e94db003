"""Parallel runs, the results cache, positions and start-up stay correct."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.cache import ENTRIES, ResultCache, clear
from synclint.config import Settings
from synclint.engine import parse
from synclint.positions import positions_for
from synclint.rules import ALL_RULES
from synclint.runner import RunOptions, lint_paths

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_output_does_not_depend_on_jobs():
    settings = Settings(root=ROOT)
    serial = lint_paths([EXAMPLES], settings, RunOptions(jobs=1, use_cache=False))
    parallel = lint_paths([EXAMPLES], settings, RunOptions(jobs=3, use_cache=False))
    assert serial and serial == parallel


def test_cache_round_trip_and_invalidation(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\nidx = torch.nonzero(m)\n")
    settings = Settings(root=tmp_path)
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    cold = lint_paths([source], settings, options)
    entries = list((tmp_path / "cache" / ENTRIES).rglob("*.json"))
    assert len(entries) == 1
    assert lint_paths([source], settings, options) == cold
    assert [f.source_line for f in lint_paths([source], settings, options)] == [f.source_line for f in cold]
    source.write_text("import torch\n\nidx = torch.nonzero(m)\n")  # content changed
    assert [f.line for f in lint_paths([source], settings, options)] == [3]
    assert lint_paths([source], Settings(root=tmp_path, ignore=("SL101",)), options) == []


def test_corrupt_entry_is_ignored(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\nidx = torch.nonzero(m)\n")
    settings = Settings(root=tmp_path)
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    cold = lint_paths([source], settings, options)
    for entry in (tmp_path / "cache" / ENTRIES).rglob("*.json"):
        entry.write_bytes(b'[["truncated')
    assert lint_paths([source], settings, options) == cold


def test_clean_removes_only_synclint_entries(tmp_path):
    cache = ResultCache(Settings(root=tmp_path), tmp_path)
    cache.put("a.py", "0" * 40, [])
    (tmp_path / "unrelated.txt").write_text("keep me")
    assert clear(tmp_path) == tmp_path
    assert not (tmp_path / ENTRIES).exists() and (tmp_path / "unrelated.txt").exists()


def test_statement_positions_equal_libcst_positions():
    for path in sorted(EXAMPLES.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        module = parse(source)
        full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        wanted = [node for node in full if node is not module][::7]
        partial = positions_for(module, source, wanted)
        assert all(partial[node] == full[node] for node in wanted), path


def test_positions_of_rule_examples_equal_libcst_positions():
    for rule in ALL_RULES:
        for example in rule.INVALID:
            module = parse(example.code)
            full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            wanted = [node for node in full if node is not module]
            partial = positions_for(module, example.code, wanted)
            assert all(partial[node] == full[node] for node in wanted), example.code


def test_check_imports_neither_torch_nor_heavy_modules(tmp_path):
    target = tmp_path / "one.py"
    target.write_text("import torch\nidx = torch.nonzero(m)\n")
    program = (
        "import sys, json\n"
        "from click.testing import CliRunner\n"
        "from synclint.cli import cli\n"
        f"result = CliRunner().invoke(cli, ['check', '--no-cache', {str(target)!r}])\n"
        "heavy = [m for m in ('torch', 'numpy', 'pandas', 'hypothesis') if m in sys.modules]\n"
        "print(json.dumps([result.exit_code, heavy, result.output]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    output = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True)
    exit_code, heavy, text = json.loads(output.stdout)
    assert exit_code == 1 and "SL101" in text
    assert heavy == []


def test_internal_errors_are_not_cached(tmp_path, monkeypatch):
    import synclint.engine

    source = tmp_path / "m.py"
    source.write_text("import torch\ny = torch.nonzero(m)\n")
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    real = synclint.engine.check_file

    def broken(path, settings=None):
        raise RuntimeError("flaky")

    monkeypatch.setattr(synclint.engine, "check_file", broken)
    (first,) = lint_paths([source], Settings(root=tmp_path), options)
    assert first.code == "SL000" and "internal error" in first.message
    monkeypatch.setattr(synclint.engine, "check_file", real)
    assert [f.code for f in lint_paths([source], Settings(root=tmp_path), options)] == ["SL101"]


def test_checking_a_file_leaves_the_garbage_collector_as_it_was(tmp_path):
    import gc

    from synclint.runner import check_one

    source = tmp_path / "step.py"
    source.write_text("import torch\ndef f(x: torch.Tensor):\n    return x.nonzero()\n", encoding="utf-8")
    assert gc.isenabled()
    assert [f.code for f in check_one(str(source), Settings(root=tmp_path))] == ["SL101"]
    assert gc.isenabled()
    gc.disable()
    try:
        check_one(str(source), Settings(root=tmp_path))
        assert not gc.isenabled()
    finally:
        gc.enable()
