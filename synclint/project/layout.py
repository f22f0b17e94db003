"""Where a project starts and what its modules are called.

The project of a file is found from the file alone (never from the working
directory or from which other files were named), so a file's findings do not
depend on how synclint was invoked:

* the nearest ancestor holding ``pyproject.toml``, ``setup.py``, ``setup.cfg``,
  ``synclint.toml`` or ``.git``;
* inside ``site-packages`` (an installed library), the top-level package;
* otherwise the directory above the top-level package (the chain of
  ``__init__.py`` directories), or the file's own directory.

A module has every name an import could use: relative to the project root,
relative to a ``src/`` directory, and relative to the parent of its top-level
package.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "synclint.toml", ".git")
_INSTALLED = ("site-packages", "dist-packages")
#: Directories never part of a project's own code.
_SKIPPED_DIRS = frozenset(
    {"__pycache__", "node_modules", "site-packages", "dist-packages", "build", "dist", ".tox", ".nox",
     ".venv", "venv", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".git", ".hg"}
)
#: A bigger tree is not indexed as one project: it is split into the directories
#: directly below it (recursively, toward the file), so that checking one
#: subpackage of a huge tree (torch's ``nn``) does not summarise all of it.
MAX_PROJECT_FILES = 1500


@lru_cache(maxsize=4096)
def project_root(directory: Path) -> Path:
    """The root of the project that files in ``directory`` (absolute, resolved) belong to.

    A project of more than :data:`MAX_PROJECT_FILES` files is split: the root
    becomes the directory below it that holds ``directory``, until it is small
    enough (a root whose own files are checked is then *shallow*: see
    :func:`project_files`).
    """
    root = natural_root(directory)
    while _file_count(root) > MAX_PROJECT_FILES and root != directory:
        root = root / directory.relative_to(root).parts[0]
    return root


def is_shallow(root: Path, directory: Path) -> bool:
    """A split project's root that holds files itself: only its own files are the project."""
    return root == directory and _file_count(root) > MAX_PROJECT_FILES


@lru_cache(maxsize=4096)
def parts_inside(key: str, root: Path) -> tuple[str, ...]:
    """``key``'s path inside ``root`` (a :func:`natural_root`), as parts; its name alone when
    it lies outside."""
    try:
        return Path(key).relative_to(root).parts
    except ValueError:
        return Path(key).parts[-1:]


def natural_root(directory: Path) -> Path:
    """The project root before splitting a huge tree (see :func:`project_root`)."""
    top = top_package(directory)
    for ancestor in (directory, *directory.parents):
        if ancestor.name in _INSTALLED:
            return top if top is not None else directory
        if any((ancestor / marker).exists() for marker in _MARKERS):
            return ancestor
    if top is not None:
        return top.parent
    return directory


@lru_cache(maxsize=1024)
def _file_count(root: Path) -> int:
    count = 0
    for _ in _walk_names(root):  # names, not paths: building a Path per file cost most of the count
        count += 1
        if count > MAX_PROJECT_FILES:
            break
    return count


def top_package(directory: Path) -> Path | None:
    """The outermost directory of the ``__init__.py`` chain holding ``directory``, or None."""
    top = None
    current = directory
    while (current / "__init__.py").exists():
        top = current
        if current.parent == current:
            break
        current = current.parent
    return top


def dotted_tails(name: str) -> list[str]:
    """``a.b.c``: ``a.b.c``, ``b.c``, ``c``: the names an import may give the module, from
    beside it or through a longer package path."""
    parts = name.split(".")
    return [".".join(parts[cut:]) for cut in range(len(parts))]


def module_names(file: Path, root: Path, tops: dict[Path, Path | None] | None = None) -> list[str]:
    """Every dotted name ``file`` can be imported as (first: the one relative imports use).
    ``tops``: :func:`top_package` of the directories asked so far (the files of one
    directory share it: a project's index asks it once per directory, not once per file)."""
    names: list[str] = []
    directory = file.parent
    if tops is None:
        top = top_package(directory)
    elif directory in tops:
        top = tops[directory]
    else:
        top = tops[directory] = top_package(directory)
    bases = [top.parent] if top is not None else []
    bases += [root, root / "src"]
    for base in bases:
        try:
            parts = list(file.relative_to(base).with_suffix("").parts)
        except ValueError:
            continue
        if parts and parts[-1] == "__init__":
            parts.pop()
        if parts and all(part.isidentifier() for part in parts):
            name = ".".join(parts)
            if name not in names:
                names.append(name)
    if not names:
        names.append(file.stem)
    return names


def is_package_init(file: Path) -> bool:
    return file.name == "__init__.py"


def project_files(root: Path, shallow: bool = False) -> list[Path]:
    """The Python files of the project under ``root``, sorted (virtualenvs and builds left out);
    ``shallow``: only the files directly in ``root``."""
    if shallow:
        return sorted(p for p in root.iterdir() if p.suffix == ".py" and p.is_file())
    return sorted(_walk(root))


#: Files other than Python that may name a class: configuration files, from which a
#: framework builds it (Hydra's ``_target_: pkg.losses.FocalLoss``), the shell scripts,
#: job scripts, Makefiles, Dockerfiles and notebooks that run the program (``--loss
#: APLoss``), and the documentation that tells users to (see
#: :mod:`synclint.project.unnamed_classes`); they pass command-line flags too
#: (:mod:`synclint.project.command_flags`). (Matched as the end of a file's name.)
NAMING_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh", ".bash", ".zsh", ".slurm", ".sbatch",
                   ".pbs", "Makefile", "Dockerfile", ".ipynb", ".md", ".rst")


#: Tables of ``pyproject.toml`` that make a project installable (a pip install, a build).
_INSTALLABLE_TABLES = re.compile(r"^\[(project|build-system|tool\.poetry|tool\.setuptools|tool\.flit|tool\.hatch)[\].]",
                                 re.MULTILINE)


#: The sections of a ``setup.cfg`` that describe a distribution (setuptools' declarative
#: configuration), not a tool's settings (``[flake8]``, ``[isort]``, ``[tool:pytest]``).
_INSTALLABLE_SECTIONS = re.compile(r"^\[(metadata|options)[\].]", re.MULTILINE)


def is_installable(root: Path) -> bool:
    """Whether the project at ``root`` can be installed (``setup.py``, a ``setup.cfg`` with
    a ``[metadata]`` or ``[options]`` section, or a ``pyproject.toml`` with a ``[project]``
    or build table): its packages are then a library, whose users import any of their
    modules (see :mod:`synclint.project.unimported_modules`). A ``pyproject.toml`` or a
    ``setup.cfg`` that only configures tools (``[tool.ruff]``; mt-dnn's ``[flake8]``,
    MONAI research-contributions' ``[isort]``) installs nothing."""
    if (root / "setup.py").is_file():
        return True
    for name, tables in (("setup.cfg", _INSTALLABLE_SECTIONS), ("pyproject.toml", _INSTALLABLE_TABLES)):
        try:
            text = (root / name).read_text(encoding="utf-8-sig", errors="replace")  # (a BOM is no text)
        except OSError:
            continue
        if tables.search(text) is not None:
            return True
    return False


def naming_files(root: Path) -> list[str]:
    """The files of the project under ``root`` that are not Python but may name a class
    (:data:`NAMING_SUFFIXES`), sorted, skipping the directories :func:`project_files` skips."""
    return sorted(os.path.join(directory, name) for directory, name in _walk_names(root, NAMING_SUFFIXES))


def _walk(root: Path) -> Iterator[Path]:
    for directory, name in _walk_names(root):
        yield Path(directory, name)


def _walk_names(root: Path, suffixes: str | tuple[str, ...] = ".py") -> Iterator[tuple[str, str]]:
    """(directory, file name) of each file of the project under ``root`` whose name ends
    with one of ``suffixes`` (Python files by default)."""
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d for d in dirnames
            if d not in _SKIPPED_DIRS and not d.startswith(".")
            and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
        ]
        for name in filenames:
            if name.endswith(suffixes):
                yield directory, name
