"""Which files to check: directories recursively, ``*.py`` (and ``*.ipynb``), minus excludes.

As in ruff:

* every directory is searched with the settings of its closest configuration
  file (``settings`` may be one :class:`~synclint.config.Settings` for all, or a
  :class:`~synclint.config.Configuration` that resolves them per path);
* what ``.gitignore`` files ignore is skipped (``respect-gitignore``), with
  git's rules: inside a git repository, ``.git/info/exclude`` and the
  ``.gitignore`` of each directory from the repository root down, the deepest
  match winning (outside a repository, as for git, none applies);
* files named on the command line are checked even when excluded, unless
  ``force-exclude`` is set (pre-commit names every staged file);
* only regular files are collected while searching (a FIFO named ``x.py``
  would block a reader forever). A non-regular path named explicitly is kept,
  so that reading it reports why it cannot be checked instead of skipping it
  silently.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from synclint.config import Settings

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


class MissingPathError(FileNotFoundError):
    """A path given on the command line does not exist (a usage error: exit 2)."""


def discover(paths: Iterable[str | Path], settings, suffixes=SOURCE_SUFFIXES) -> list[Path]:
    """Files to check, sorted and de-duplicated."""
    found: dict[Path, None] = {}
    ignores = _GitIgnores()
    for raw in paths:
        path = Path(raw)
        if not os.path.lexists(path):
            raise MissingPathError(f"{raw}: no such file or directory")
        if path.is_dir():
            for file in _walk(path, settings, suffixes, ignores):
                found[file] = None
            continue
        own = settings.settings_for(path)
        if own.force_exclude and (own.is_excluded(path) or (own.respect_gitignore and ignores.ignored(path, False))):
            continue
        found[path] = None
    return sorted(found)


def _walk(root: Path, settings, suffixes, ignores: _GitIgnores) -> Iterator[Path]:
    top = settings.settings_for(root)
    if top.force_exclude:
        if top.is_excluded(root) or (top.respect_gitignore and ignores.ignored(root, True)):
            return
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        own: Settings = settings.settings_for(base)
        kept = []
        for name in sorted(dirnames):
            child = base / name
            if own.is_excluded(child, ancestors=False):
                continue
            if own.respect_gitignore and ignores.ignored(child, True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(suffixes):
                continue
            file = base / name
            if own.is_excluded(file, ancestors=False) or (own.respect_gitignore and ignores.ignored(file, False)):
                continue
            if _is_regular(file):
                yield file


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)  # follows symlinks: a link to a file counts
    except OSError:
        return False


class _GitIgnores:
    """``.gitignore`` rules, loaded once per directory."""

    def __init__(self) -> None:
        self._specs: dict[Path, object | None] = {}
        self._roots: dict[Path, Path | None] = {}
        self._chains: dict[Path, list[tuple[str, object]]] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        decision: bool | None = None
        for directory, spec in self._chain(Path(os.path.dirname(absolute))):  # outermost first
            relative = absolute[len(directory) :].lstrip(os.sep).replace(os.sep, "/")
            result = spec.check_file(relative + ("/" if is_dir else ""))
            if result.include is not None:  # deeper files override
                decision = result.include
        return bool(decision)

    def _chain(self, directory: Path) -> list[tuple[str, object]]:
        """The (directory, rules) pairs that apply in ``directory``, from the repository root down."""
        chain = self._chains.get(directory)
        if chain is None:
            repository = self._repository(directory)
            if repository is None:  # as git: outside a repository, no .gitignore applies
                chain = []
            else:
                above = [] if directory == repository else self._chain(directory.parent)
                spec = self._spec(directory, repository)
                chain = above + ([(str(directory), spec)] if spec is not None else [])
            self._chains[directory] = chain
        return chain

    def _repository(self, directory: Path) -> Path | None:
        if directory not in self._roots:
            if (directory / ".git").exists():
                self._roots[directory] = directory
            elif directory.parent == directory:
                self._roots[directory] = None
            else:
                self._roots[directory] = self._repository(directory.parent)
        return self._roots[directory]

    def _spec(self, directory: Path, repository: Path | None):
        if directory not in self._specs:
            lines: list[str] = []
            sources = [directory / ".gitignore"]
            if directory == repository:
                sources.insert(0, directory / ".git" / "info" / "exclude")
            for source in sources:
                try:
                    lines += source.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
            self._specs[directory] = _compile(lines) if lines else None
        return self._specs[directory]


def _compile(lines: list[str]):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)
