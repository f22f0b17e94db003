"""A DataLoader built and iterated in code that runs once is a one-off pass, not the training loader."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint.config import Settings
from synclint.engine import check_source
from synclint.rules.sl402_unpinned_loader import LEAVES, ONE_OFF
from synclint.runner import RunOptions, lint_paths

SOURCE = '''
import torch
from torch.utils.data import DataLoader


class Sampler(DataLoader):
    def __init__(self, data):
        self.norm, self.kept = self._compute_norm(), self.make()
        self.loader = DataLoader(data)
        stats = DataLoader(data)
        for batch in enumerate(stats):
            pass
        x = data.cuda(non_blocking=True)

    def _compute_norm(self):
        loader = torch.utils.data.DataLoader(self, batch_size=200)
        for b in loader:
            pass
        for b in DataLoader(self):
            pass
        return 1

    def make(self):
        kept = DataLoader(self)
        for b in kept:
            pass
        return kept
'''


def test_loaders_iterated_where_built_in_code_that_runs_once_are_cold():
    # Every loader's line is cold (it runs once); the reason tells the one-off passes from
    # the training loaders, whose batches are copied elsewhere.
    found = {(f.code, f.line, f.column): (f.context, f.why)
             for f in check_source(textwrap.dedent(SOURCE), "m.py", include_cold=True)}
    assert found == {
        ("SL402", 9, 23): ("cold", LEAVES),  # kept on the object: the training loader
        ("SL402", 10, 17): ("cold", ONE_OFF),  # iterated (through enumerate) in __init__ and nowhere else
        ("SL402", 16, 18): ("cold", ONE_OFF),  # a method called only from __init__
        ("SL402", 19, 18): ("cold", ONE_OFF),  # iterated directly
        ("SL402", 24, 16): ("cold", LEAVES),  # handed back to the caller (though only __init__ calls it)
    }


PROJECT = {
    "pyproject.toml": "[project]\nname = 'pkg'\n",
    "pkg/__init__.py": "",
    "pkg/train.py": """
        import torch
        from torch.utils.data import DataLoader

        def make_loader(data):
            return DataLoader(data, batch_size=8)

        def upload(array):
            return torch.from_numpy(array).to("cuda", non_blocking=True)
        """,
    "pkg/testing.py": """
        from torch.utils.data import DataLoader

        def tiny_loader(data):
            return DataLoader(data, batch_size=2)

        DEVICE = "cuda"
        """,
    "tests/test_train.py": """
        import torch
        from torch.utils.data import DataLoader
        from pkg.testing import tiny_loader

        def test_loader(data, array):
            loader = DataLoader(data)
            batch = torch.from_numpy(array).to("cuda", non_blocking=True)
            return loader, tiny_loader(data), batch
        """,
    "benchmarks/throughput.py": """
        from torch.utils.data import DataLoader

        def run(data):
            return DataLoader(data, batch_size=64)

        DEVICE = "cuda"
        """,
}


def test_loader_rules_are_quiet_in_tests_benchmarks_and_helpers_only_tests_call(tmp_path):
    # SL402 and SL404 are not about per-step cost (a loader built once, in __init__,
    # still copies every batch), so setup code does not hide them; but a loader that a
    # test, a benchmark or a test-only helper builds is no part of the training program.
    # (mosaicml/composer: 68 of its 85 SL402 findings were in tests/.)
    for name, text in PROJECT.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    settings = Settings(root=tmp_path)

    def found(include_cold: bool) -> list[tuple[str, int, int, str, str | None, str]]:
        findings = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False, include_cold=include_cold))
        return [(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.column, f.code, f.context, f.why)
                for f in findings]

    assert found(False) == [("pkg/train.py", 9, 12, "SL404", "unknown", "")]
    assert found(True) == [
        ("benchmarks/throughput.py", 5, 12, "SL402", "cold", "test or benchmark code"),
        ("pkg/testing.py", 5, 12, "SL402", "cold", "called only from test code"),
        ("pkg/train.py", 6, 12, "SL402", "cold", LEAVES),
        ("pkg/train.py", 9, 12, "SL404", "unknown", ""),
        ("tests/test_train.py", 7, 14, "SL402", "cold", "test code"),
        ("tests/test_train.py", 8, 13, "SL404", "cold", "test code"),
    ]


def test_a_loader_helper_that_training_setup_also_calls_is_part_of_the_program(tmp_path):
    # The helper's callers are all cold (a test, and the trainer's constructor), but only
    # one of them is outside the program: the loader the trainer keeps copies every batch.
    # (Which caller is seen first must not matter: `tests/` sorts before `train.py`.)
    files = {
        "pkg/__init__.py": "",
        "pkg/data.py": """
            from torch.utils.data import DataLoader

            def make_loader(data):
                return DataLoader(data, batch_size=32)

            DEVICE = "cuda"

            def upload(batch):
                return batch.to(DEVICE, non_blocking=True)
            """,
        "train.py": """
            from pkg.data import make_loader

            class Trainer:
                def __init__(self, data, model):
                    self.loader = make_loader(data)
                    self.model = model
            """,
        "tests/test_data.py": """
            from pkg.data import make_loader

            def test_make_loader():
                assert make_loader([1, 2])
            """,
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    # Cold as every loader's line is, not as test code: its batches are the trainer's.
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.column, f.code, f.context, f.why)
            for f in findings] == [("pkg/data.py", 5, 12, "SL402", "cold", LEAVES)]


UNUSED = '''
import torch
from torch.utils.data import DataLoader

train_loader = DataLoader(ds)


def main(args, ds_train, ds_val):
    data_loader_train = DataLoader(ds_train, batch_size=2)
    data_loader_val = DataLoader(ds_val, batch_size=2)
    unused_but_closed_over = DataLoader(ds_val)

    def later():
        return unused_but_closed_over

    evaluate(data_loader_val, torch.device("cuda"), non_blocking=True)
    return later
'''


def test_a_loader_its_function_never_reads_copies_nothing():
    # YOLOS's cocoval_gtclsjson_generation.py builds `data_loader_train` and only ever
    # passes `data_loader_val` on.
    found = {f.line: (f.context, f.why) for f in check_source(UNUSED, "predict.py", include_cold=True) if f.code == "SL402"}
    assert found[9] == ("cold", "a loader the code never uses (bound to a name its function never reads)")
    assert found[10] == ("cold", LEAVES)
    assert found[11] == ("cold", LEAVES)  # a nested function reads it
    assert found[5] == ("cold", LEAVES)  # module level: any function may read it


READ_WITHOUT_ITS_NAME = '''
import torch
from torch.utils.data import DataLoader

train_loader = None


def build(ds_train, ds_val):
    train_loader_ = DataLoader(ds_train, batch_size=2)
    val_loader = DataLoader(ds_val, batch_size=2)
    return dict(locals())


def make(ds):
    class Data:
        loader = DataLoader(ds, batch_size=2)
    return Data


def setup(ds):
    global train_loader
    train_loader = DataLoader(ds, batch_size=2)


def train(model):
    for x in train_loader:
        model(x.cuda(non_blocking=True))
'''


def test_a_loader_read_without_its_name_is_used():
    # `return locals()` hands every local on, a class body's name is the class's attribute
    # (`make(ds).loader`), and a `global` is read by other functions.
    found = {f.line: f.why for f in check_source(READ_WITHOUT_ITS_NAME, "train.py", include_cold=True)
             if f.code == "SL402"}
    assert sorted(found) == [9, 10, 16, 22]
    assert set(found.values()) == {LEAVES}  # never "never used"
