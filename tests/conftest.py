"""Session set-up shared by every test module.

The CPU GIoU kernel's first build takes minutes on a small machine (``giou.cpp`` at -O3:
three minutes on 2 cores), and a cold CI run always pays it. When the session collects the
kernel's tests, that build starts in a background process (niced, so the tests keep their
core) while the tests before them run; the first test that needs the kernel then waits on
the build's file lock for what is left of it, or loads the finished library
(:func:`synclint.ops._build.ensure_kernel`). A build that fails there is retried, and
reported, by the test process itself: the background build only warms the cache.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

#: Test files that build the CPU kernel.
_KERNEL_TESTS = ("test_ops_giou.py",)

_BUILD = "from synclint.ops import _build; _build.ensure_kernel('cpu')"

_background: subprocess.Popen | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    global _background
    if _background is not None or os.environ.get("SYNCLINT_OPS_KERNELS") == "0":
        return
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":  # one build is enough (xdist: the first worker's)
        return
    if os.name != "posix" or shutil.which(os.environ.get("CXX", "c++")) is None:
        return
    if not any(item.path.name in _KERNEL_TESTS for item in session.items):
        return
    _background = subprocess.Popen(
        [sys.executable, "-c", _BUILD],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the compilers go with it
        preexec_fn=lambda: os.nice(10),
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A session that ended before the build did (a failed first test, -x) does not wait
    # for it; a build cut short leaves no "complete" marker, so the next one starts over.
    if _background is not None and _background.poll() is None:
        try:
            os.killpg(_background.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        _background.wait()
