"""``check --watch``: batches of changed Python files and configs under the checked paths."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb")
WATCHED_NAMES = ("pyproject.toml", "synclint.toml", ".synclint.toml", ".gitignore")


def is_watched(path: str) -> bool:
    name = Path(path).name
    return name.endswith(WATCHED_SUFFIXES) or name in WATCHED_NAMES


def python_changes(paths: Iterable[str]) -> Iterator[set[str]]:
    """Yield the set of changed paths after each debounced batch of file events."""
    try:
        from watchfiles import watch
    except ImportError as error:  # pragma: no cover - a dependency; a broken install
        raise SystemExit("synclint: --watch needs the `watchfiles` package (pip install watchfiles)") from error
    roots = [str(Path(p).resolve()) for p in paths]
    for changes in watch(*roots, watch_filter=lambda _change, path: is_watched(path)):
        yield {path for _change, path in changes}
