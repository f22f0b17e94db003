"""Parallel runs, the results cache, positions and start-up stay correct."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.cache import ENTRIES, ResultCache, clear, content_hash
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
    source.write_text("import torch\ndef f(m):\n    return torch.nonzero(m)\n")
    settings = Settings(root=tmp_path)
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    cold = lint_paths([source], settings, options)
    entries = list((tmp_path / "cache" / ENTRIES).rglob("*.json"))
    assert len(entries) == 1
    assert lint_paths([source], settings, options) == cold
    assert [f.source_line for f in lint_paths([source], settings, options)] == [f.source_line for f in cold]
    source.write_text("import torch\n\ndef f(m):\n    return torch.nonzero(m)\n")  # content changed
    assert [f.line for f in lint_paths([source], settings, options)] == [4]
    assert lint_paths([source], Settings(root=tmp_path, ignore=("SL101",)), options) == []


def test_corrupt_entry_is_ignored(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\ndef f(m):\n    return torch.nonzero(m)\n")
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


_NESTED = """\
import torch  # header


# a comment above the class
@decorated(option=1)
class Outer(Base, metaclass=Meta):
    \"\"\"Doc.\"\"\"

    limit = torch.tensor(3)

    # above a method
    @staticmethod
    def helper(x, *, y=torch.zeros(1)): return x.item()

    def forward(self, x):  # trailing
        for row in x:
            if row.sum() > 0:
                print(row.item())
        return x.nonzero()

    class Inner:
      def deep(self, t):
            return [v.item() for v in t]

    async def later(self):
        a = 1; b = self.limit.tolist()
        return a, b
x = Outer().forward(torch.ones(2))
"""


def test_positions_inside_classes_and_functions_equal_libcst_positions(monkeypatch):
    """Nodes in a method are placed by regenerating that method alone (inside its
    class's indentation), never the whole module; each equals libcst's own position."""
    import libcst as cst

    import synclint.positions

    for source in (_NESTED, _NESTED.replace("\n", "\r\n")):
        module = parse(source)
        full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        wanted = [
            node for node in full
            if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement, cst.BaseStatement, cst.Param))
        ]
        monkeypatch.setattr(synclint.positions, "_whole_module", lambda module: {})
        for node in wanted:
            assert positions_for(module, source, [node])[node] == full[node], node
        monkeypatch.undo()


def test_check_imports_neither_torch_nor_heavy_modules(tmp_path):
    target = tmp_path / "one.py"
    target.write_text("import torch\ndef f(m):\n    return torch.nonzero(m)\n")
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
    source.write_text("import torch\ndef f(m):\n    return torch.nonzero(m)\n")
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


def test_a_check_leaves_no_cycle_holding_the_files_tree(tmp_path):
    """A check runs with the cyclic collector paused: its tree must be freed by reference
    counting, or the first collection afterwards traverses every node of it."""
    import gc

    import libcst

    from synclint.runner import check_one

    source = tmp_path / "model.py"
    source.write_text(
        "import torch\n\nclass Head(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale = 1.0\n\n    def forward(self, x):\n"
        "        if self.scale > 0:\n            x = x * self.scale\n        return x.nonzero()\n",
        encoding="utf-8",
    )
    settings = Settings(root=tmp_path)
    assert [f.code for f in check_one(str(source), settings)] == ["SL101"]
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        check_one(str(source), settings)
        gc.collect()
        left_to_the_collector = [o for o in gc.garbage if isinstance(o, libcst.CSTNode)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left_to_the_collector == []


def _cached_entry(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\ndef f(x: torch.Tensor):\n    idx = torch.nonzero(x)\n    return idx.item()\n")
    settings = Settings(root=tmp_path)
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    cold = lint_paths([source], settings, options)
    (entry,) = (tmp_path / "cache" / ENTRIES).rglob("*.json")
    return source, settings, options, cold, entry


def test_an_entry_replaced_by_an_empty_list_is_recomputed_and_rewritten(tmp_path):
    source, settings, options, cold, entry = _cached_entry(tmp_path)
    assert [f.code for f in cold] == ["SL101", "SL201"]
    good = entry.read_bytes()
    entry.write_bytes(b"[]")
    assert lint_paths([source], settings, options) == cold
    assert entry.read_bytes() == good  # the bad entry did not persist


def test_every_single_byte_corruption_is_detected(tmp_path):
    source, settings, _, cold, entry = _cached_entry(tmp_path)
    good = entry.read_bytes()
    digest = content_hash(source.read_bytes())
    cache = ResultCache(settings, tmp_path / "cache")
    wrong = []
    for position in range(len(good)):
        for flip in (0x01, 0x20):
            corrupted = bytearray(good)
            corrupted[position] ^= flip
            entry.write_bytes(bytes(corrupted))
            got = cache.get(str(source), digest)
            if got is not None and got != cold:
                wrong.append((position, flip, bytes(corrupted[max(0, position - 10) : position + 10])))
    assert not wrong, wrong[:5]


def test_an_entry_written_for_other_settings_is_not_used(tmp_path):
    source, settings, options, cold, entry = _cached_entry(tmp_path)
    other = Settings(root=tmp_path, ignore=("SL101",))
    other_cache = ResultCache(other, tmp_path / "cache")
    digest = content_hash(source.read_bytes())
    # Plant this entry (valid for the default settings) where the other settings look.
    planted = other_cache._entry(other_cache._key(str(source), digest))
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(entry.read_bytes())
    assert other_cache.get(str(source), digest) is None
    assert [f.code for f in lint_paths([source], other, options)] == ["SL201"]
