"""``[tool.synclint]`` settings: which rules run on which files.

Keys (all optional): ``select``, ``ignore``, ``extend-select``,
``per-file-ignores``, ``exclude``, ``extend-exclude``. Codes may be given as
prefixes (``"SL1"`` selects SL101-SL105; ``"ALL"`` selects everything), as in ruff.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    "node_modules", ".eggs", "*.egg-info", ".ipynb_checkpoints",
)

#: Every key ``[tool.synclint]`` understands (docs/configuration.md lists them all).
KNOWN_KEYS = frozenset(
    {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude"}
)


class ConfigError(ValueError):
    """The configuration cannot be used (unknown key, bad type, unreadable file)."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    #: Directory that relative patterns (excludes, per-file-ignores) are anchored at.
    root: Path = field(default_factory=Path.cwd)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    # -- rule selection --------------------------------------------------------------
    def is_enabled(self, code: str, path: str | None = None) -> bool:
        selected = _matches(code, self.select + self.extend_select)
        if not selected:
            return False
        ignored = _longest_match(code, self.ignore)
        chosen = _longest_match(code, self.select + self.extend_select)
        # A more specific select beats a broader ignore (ruff semantics).
        if ignored is not None and (chosen is None or len(ignored) >= len(chosen)):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores.items():
                if _path_matches(path, pattern, self.root) and _matches(code, codes):
                    return False
        return True

    def is_excluded(self, path: Path) -> bool:
        return any(_path_matches(str(path), p, self.root) for p in self.exclude + self.extend_exclude)

    def fingerprint(self) -> str:
        """A stable text identifying the settings that change results (for caches)."""
        return repr((self.select, self.ignore, self.extend_select, sorted(self.per_file_ignores.items())))


def _matches(code: str, selectors: tuple[str, ...]) -> bool:
    return _longest_match(code, selectors) is not None


def _longest_match(code: str, selectors: tuple[str, ...]) -> str | None:
    best: str | None = None
    for selector in selectors:
        if selector == "ALL" or code.startswith(selector):
            candidate = "" if selector == "ALL" else selector
            if best is None or len(candidate) > len(best):
                best = candidate
    return best


def _path_matches(path: str, pattern: str, root: Path) -> bool:
    pure = PurePath(path)
    try:
        relative = pure.relative_to(root) if pure.is_absolute() else pure
    except ValueError:
        relative = pure
    text = relative.as_posix()
    if fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(pure.as_posix(), pattern):
        return True
    # A bare name (``build``, ``*.egg-info``) matches any path component.
    if "/" not in pattern:
        return any(fnmatch.fnmatch(part, pattern) for part in relative.parts)
    return False


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.synclint]`` table, upwards from ``start``."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if "synclint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from ``config`` (a pyproject.toml or synclint.toml) or the nearest pyproject."""
    path = config if config is not None else find_config(start or Path.cwd())
    if path is None:
        return Settings(root=(start or Path.cwd()).resolve())
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    table = data.get("tool", {}).get("synclint", data if Path(path).name != "pyproject.toml" else {})
    return settings_from_table(table, root=Path(path).resolve().parent)


def settings_from_table(table: dict[str, Any], root: Path) -> Settings:
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"unknown [tool.synclint] key(s): {', '.join(sorted(unknown))}")

    def strings(key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"[tool.synclint] {key} must be a list of strings")
        return tuple(value)

    def patterns(key: str) -> tuple[str, ...] | None:
        return None if table.get(key) is None else strings(key, table[key])

    def codes(key: str) -> tuple[str, ...] | None:
        return None if table.get(key) is None else validate_selectors(key, strings(key, table[key]))

    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError("[tool.synclint] per-file-ignores must be a table")
    settings = Settings(root=root).with_overrides(
        select=codes("select"),
        ignore=codes("ignore"),
        extend_select=codes("extend-select"),
        exclude=patterns("exclude"),
        extend_exclude=patterns("extend-exclude"),
    )
    return replace(
        settings,
        per_file_ignores={
            pattern: validate_selectors(f"per-file-ignores[{pattern!r}]", strings(f"per-file-ignores[{pattern!r}]", value))
            for pattern, value in per_file.items()
        },
    )


def validate_selectors(where: str, selectors: tuple[str, ...]) -> tuple[str, ...]:
    """Upper-cased selectors; an unknown one is an error, never a silently empty selection."""
    from synclint.codes import is_known_selector

    normalised = tuple(s.strip().upper() for s in selectors)
    unknown = [s for s in normalised if not is_known_selector(s)]
    if unknown:
        raise ConfigError(f"[tool.synclint] {where}: unknown rule selector(s): {', '.join(unknown)}")
    return normalised
