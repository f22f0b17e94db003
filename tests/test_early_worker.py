"""The early worker: a forked process that loads the checker while the index is built,
then checks the one file a re-check has to (synclint.early_worker, synclint.runner)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.early_worker import EarlyWorker, can_start
from synclint.runner import _check_all, check_one

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the early worker forks on Linux only")


def _nothing() -> None:
    pass


def _slow() -> None:
    time.sleep(60)


def _die() -> None:
    os._exit(3)


def _pid_and_double(value: int) -> tuple[int, int]:
    return os.getpid(), 2 * value


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_worker_runs_each_item_in_its_own_process_in_order():
    worker = EarlyWorker(_nothing)
    try:
        results = worker.check_all(_pid_and_double, [(1,), (5,), (-2,)])
    finally:
        worker.close()
    assert [double for _pid, double in results] == [2, 10, -4]
    pids = {pid for pid, _double in results}
    assert len(pids) == 1 and os.getpid() not in pids
    assert worker.closed and not _alive(next(iter(pids)))


def test_closing_a_worker_still_preparing_ends_it_and_reaps_it():
    worker = EarlyWorker(_slow)
    pid = worker._pid
    assert _alive(pid)
    worker.close()
    assert not _alive(pid)  # killed and reaped (a zombie would still answer signal 0)
    worker.close()  # (twice is harmless)


def test_a_worker_that_dies_leaves_its_items_unfinished_and_closes():
    worker = EarlyWorker(_die)
    done = []
    assert worker.check_all(_pid_and_double, [(1,), (2,)], lambda: done.append(1)) == [None, None]
    assert worker.closed and done == []


def test_a_file_the_worker_could_not_check_is_checked_in_a_fresh_process(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\ndef forward(m):\n    return torch.nonzero(m)\n")
    work = [(str(source), Settings(root=tmp_path), None, False)]
    done = []
    [result] = _check_all(work, 2, lambda: done.append(1), EarlyWorker(_die))
    assert result == check_one(*work[0])
    assert [(f.code, f.line, f.column) for f in result] == [("SL101", 3, 12)]
    assert done == [1]


def test_a_file_is_checked_by_the_worker_as_it_would_be_here(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import torch\ndef forward(m):\n    return torch.nonzero(m)\n")
    work = [(str(source), Settings(root=tmp_path), None, False)]
    worker = EarlyWorker(_nothing)
    assert _check_all(work, 2, None, worker) == [check_one(*work[0])]
    assert worker.closed


def test_no_worker_in_a_process_that_has_loaded_the_checker():
    import synclint.engine  # noqa: F401

    assert not can_start("synclint.engine")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    package = project / "pkg"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x[torch.nonzero(x > 0)]\n"
    )
    (package / "train.py").write_text(
        "import torch\nfrom pkg.model import Net\n\n\ndef train(loader):\n    net = Net().cuda()\n"
        "    for batch in loader:\n        loss = net(batch.cuda()).sum()\n        print(loss.item())\n"
    )
    return project


_RUN = (
    "import json, sys\nfrom pathlib import Path\n"
    "from synclint.config import Settings\n"
    "from synclint.runner import RunOptions, lint_paths\n"
    "findings = lint_paths([sys.argv[1]], Settings(root=sys.argv[1]), RunOptions(jobs=2, cache_dir=Path(sys.argv[2])))\n"
    "print(json.dumps([[f.path.rsplit('/', 1)[-1], f.code, f.line, f.column] for f in findings] +"
    " ['synclint.engine' in sys.modules, 'libcst' in sys.modules]))\n"
)


def test_a_recheck_after_an_edit_checks_the_file_in_the_worker_with_the_same_findings(tmp_path):
    """The main process of a re-check that has one file to check never loads the checker,
    and the findings are those of a run without the cache."""
    project = _project(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(cache: Path) -> list:
        output = subprocess.run([sys.executable, "-c", _RUN, str(project), str(cache)],
                                capture_output=True, text=True, env=env, check=True)
        return json.loads(output.stdout)

    first = run(tmp_path / "cache")
    assert first[:-2] == [["model.py", "SL101", 6, 18], ["train.py", "SL401", 8, 20], ["train.py", "SL201", 9, 15]]
    model = project / "pkg" / "model.py"
    model.write_text("_EDITED = 1\n" + model.read_text())
    again = run(tmp_path / "cache")
    assert again[-2:] == [False, False]  # checked in the worker
    assert again[:-2] == [["model.py", "SL101", 7, 18], ["train.py", "SL401", 8, 20], ["train.py", "SL201", 9, 15]]
    assert again[:-2] == run(tmp_path / "fresh-cache")[:-2]


def test_a_run_that_cannot_fork_checks_in_its_own_process(tmp_path, monkeypatch):
    """No process to spare (``fork`` fails): no worker, no descriptor left open, and the
    run's findings are the usual ones."""
    from synclint import early_worker
    from synclint.runner import RunOptions, _early_worker

    def refuse():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(early_worker.os, "fork", refuse)
    monkeypatch.setattr(early_worker, "can_start", lambda loaded: True)
    assert _early_worker(RunOptions(jobs=2, cache_dir=tmp_path / "cache")) is None
    assert set(os.listdir("/proc/self/fd")) == before


def test_no_worker_in_a_process_that_has_loaded_torch(monkeypatch):
    # (torch's native thread pools are threads Python does not count: no fork beside them)
    monkeypatch.setitem(sys.modules, "torch", object())
    assert not can_start("a module nobody loads")
    monkeypatch.delitem(sys.modules, "torch")
    assert can_start("a module nobody loads") == (threading.active_count() == 1)
