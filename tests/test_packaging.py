"""`python -m build` makes an sdist and a wheel that install and work in a fresh virtual environment."""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = sorted(p.name for p in (ROOT / "cuda_ext").iterdir() if p.suffix in (".h", ".cpp", ".cu"))
HAZARD = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Without isolation: the build backend (setuptools) comes from this environment, so
    # the test needs no network. `python -m build` builds the wheel from the sdist.
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


@pytest.mark.slow
def test_the_sdist_carries_the_sources_the_wheel_is_built_from(dist):
    from synclint import __version__

    (sdist,) = dist.glob("synclint-*.tar.gz")
    assert sdist.name == f"synclint-{__version__}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = {Path(*Path(m.name).parts[1:]).as_posix(): m for m in archive.getmembers()}
    for name in ["LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "setup.py", *(f"cuda_ext/{k}" for k in KERNELS)]:
        assert name in names and names[name].isfile(), name
    assert not any(m.issym() or m.islnk() for m in names.values())


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_with_the_kernel_sources(dist, tmp_path):
    from synclint import __version__

    (wheel,) = dist.glob("synclint-*.whl")
    assert wheel.name.startswith(f"synclint-{__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for kernel in KERNELS:
            inside = archive.read(f"synclint/ops/csrc/{kernel}")
            assert inside == (ROOT / "cuda_ext" / kernel).read_bytes(), kernel
        assert f"synclint-{__version__}.dist-info/licenses/LICENSE" in names
        metadata = archive.read(f"synclint-{__version__}.dist-info/METADATA").decode()
    assert f"Version: {__version__}" in metadata and "License-Expression: Apache-2.0" in metadata

    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)
    python = fresh / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # Without PYTHONPATH: a checkout on it (PYTHONPATH=.) shows pip the checkout's
    # synclint.egg-info, and pip then calls the wheel "already satisfied" and skips it.
    outside = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300, env=outside,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    # The dependencies (libcst, click, ...) come from this environment; synclint from the wheel.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(site.getsitepackages())}
    work = tmp_path / "work"
    work.mkdir()
    (work / "m.py").write_text(HAZARD)
    # Where the kernel build looks for its sources (it needs torch), or, without torch,
    # where the wheel put them: the checker itself runs either way.
    locate = ("import synclint.ops._build as b; src = b.source_dir(); " if importlib.util.find_spec("torch")
              else "src = pathlib.Path(synclint.__file__).parent / 'ops' / 'csrc'; ")
    probe = (
        "import pathlib, synclint; " + locate +
        "print(pathlib.Path(synclint.__file__).parent.parent.name, synclint.__version__, src.name, "
        "src.is_symlink(), sorted(p.name for p in src.iterdir()))"
    )
    shown = subprocess.run([str(python), "-c", probe], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert shown.stdout.split(" ", 4) == ["site-packages", __version__, "csrc", "False", f"{KERNELS}\n"]
    checked = subprocess.run(
        [str(python), "-m", "synclint", "check", "--no-cache", "m.py"], cwd=work, env=env, capture_output=True,
        text=True, timeout=300,
    )
    assert checked.returncode == 1 and "m.py:5:12: SL101" in checked.stdout, checked.stdout + checked.stderr
