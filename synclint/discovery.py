"""Which files to check: directories recursively, ``*.py`` (and ``*.ipynb``), minus excludes."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from synclint.config import Settings

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


class MissingPathError(FileNotFoundError):
    """A path given on the command line does not exist (a usage error: exit 2)."""


def discover(paths: Iterable[str | Path], settings: Settings, suffixes=SOURCE_SUFFIXES) -> list[Path]:
    """Files to check, sorted and de-duplicated. Explicit files are always included."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise MissingPathError(f"{raw}: no such file or directory")
        if path.is_file():
            found[path] = None
            continue
        for file in _walk(path, settings, suffixes):
            found[file] = None
    return sorted(found)


def _walk(root: Path, settings: Settings, suffixes) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(base / d))
        for name in sorted(filenames):
            if name.endswith(suffixes):
                file = base / name
                if not settings.is_excluded(file):
                    yield file
