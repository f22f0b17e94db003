"""Only what pyproject.toml cannot say: copy the GIoU kernel sources into the built package.

The sources live once, in ``cuda_ext/``. A wheel (built from a checkout or from
the sdist, which carries ``cuda_ext/``) gets real copies in
``synclint/ops/csrc/``, so nothing depends on a symbolic link (which Windows
checkouts and some archivers do not keep). Editable installs need no copy:
``synclint.ops._build.source_dir`` falls back to the checkout's ``cuda_ext/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KERNEL_SOURCES = Path(__file__).resolve().parent / "cuda_ext"
KERNEL_SUFFIXES = (".h", ".cpp", ".cu")


class BuildPyWithKernelSources(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "synclint" / "ops" / "csrc"
        target.mkdir(parents=True, exist_ok=True)
        copied = 0
        for source in sorted(KERNEL_SOURCES.iterdir()):
            if source.suffix in KERNEL_SUFFIXES and source.is_file():
                shutil.copyfile(source, target / source.name)
                copied += 1
        if not copied:
            raise RuntimeError(f"no GIoU kernel sources in {KERNEL_SOURCES}")


setup(cmdclass={"build_py": BuildPyWithKernelSources})
