"""``[tool.synclint]`` settings: which rules run on which files.

Keys (all optional): ``select``, ``ignore``, ``extend-select``,
``per-file-ignores``, ``exclude``, ``extend-exclude``, ``respect-gitignore``,
``force-exclude``, ``max-file-size``. Codes may be given as
prefixes (``"SL1"`` selects SL101-SL105; ``"ALL"`` selects everything), as in ruff.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any

from synclint.sources import DEFAULT_MAX_FILE_SIZE, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    "node_modules", ".eggs", "*.egg-info", ".ipynb_checkpoints",
    # Editors' folders: VS Code's Local History keeps a timestamped copy of every file
    # saved (DeepRobust commits its `.history/`), whose findings repeat the real ones.
    ".history", ".vscode", ".idea",
)

#: Every key ``[tool.synclint]`` understands (docs/configuration.md lists them all).
KNOWN_KEYS = frozenset(
    {
        "select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
        "respect-gitignore", "force-exclude", "max-file-size",
    }
)


class ConfigError(ValueError):
    """The configuration cannot be used (malformed TOML, unknown key, bad type, unreadable file).

    ``str()`` gives ``file:line:column: message`` when the file (and line) are known.
    """

    def __init__(
        self, message: str, path: Path | None = None, line: int | None = None, column: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message, self.path, self.line, self.column, self.key = message, path, line, column, key
        where = [str(path)] if path is not None else []
        if path is not None and line is not None:
            where.append(str(line))
            if column is not None:
                where.append(str(column))
        super().__init__(": ".join([":".join(where), message]) if where else message)


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
    #: Skip what ``.gitignore`` files (and ``.git/info/exclude``) ignore when searching directories.
    respect_gitignore: bool = True
    #: Apply the excludes (and ``.gitignore``) to files named explicitly too (for pre-commit).
    force_exclude: bool = False
    #: Files larger than this many bytes get one SL000 instead of a check (0: no limit).
    max_file_size: int = DEFAULT_MAX_FILE_SIZE

    def settings_for(self, path: str | Path) -> Settings:
        """These settings apply to every path (the interface :class:`Configuration` shares)."""
        return self

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

    def is_excluded(self, path: Path, *, ancestors: bool = True) -> bool:
        """Whether ``path`` matches ``exclude`` / ``extend-exclude``.

        A bare name (``build``) matches any directory between the root and the
        path (``ancestors``), or only the path's own name: a directory search
        tests each entry as it reaches it, and never the directories above
        where it started.
        """
        return _PathForms(str(path), self.root, ancestors).match_any(self.exclude + self.extend_exclude)

    def fingerprint(self) -> str:
        """A stable text identifying the settings that change results (for caches)."""
        return repr(
            (self.select, self.ignore, self.extend_select, sorted(self.per_file_ignores.items()), self.max_file_size)
        )


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


def _path_matches(path: str, pattern: str, root: Path, ancestors: bool = True) -> bool:
    return _PathForms(path, root, ancestors).match(pattern)


class _PathForms:
    """The forms of one path that patterns are matched against (computed once for all patterns).

    Relative paths are taken from the working directory, so that the result
    does not depend on where synclint runs from. A bare name (``build``,
    ``*.egg-info``) matches a path component below the root (never the
    directories above it, which the configuration does not own).
    """

    __slots__ = ("absolute", "relative", "parts")

    def __init__(self, path: str, root: Path, ancestors: bool) -> None:
        absolute = os.path.abspath(path)
        root_text = str(root)
        prefix = root_text if root_text.endswith(os.sep) else root_text + os.sep
        inside = absolute.startswith(prefix)
        self.absolute = PurePath(absolute).as_posix()
        self.relative = PurePath(absolute[len(prefix) :]).as_posix() if inside else self.absolute
        name = os.path.basename(absolute)
        self.parts = tuple(self.relative.split("/")) if ancestors and inside else (name,)

    def match(self, pattern: str) -> bool:
        return self.match_any((pattern,))

    def match_any(self, patterns: tuple[str, ...]) -> bool:
        """Whether any of ``patterns`` matches (``fnmatch``'s rules, as one regular expression:
        discovery asks every file and directory about every default exclude)."""
        anywhere, bare = _compiled_patterns(patterns)
        if anywhere is None:
            return False
        if anywhere.match(os.path.normcase(self.relative)) or anywhere.match(os.path.normcase(self.absolute)):
            return True
        return bare is not None and any(bare.match(os.path.normcase(part)) for part in self.parts)


@lru_cache(maxsize=64)
def _compiled_patterns(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """``patterns`` as two expressions: all of them (matched against the whole path), and
    those without a ``/`` (matched against each part too); None for none. As
    ``fnmatch.fnmatch``, case folded where the platform folds it (``os.path.normcase``)."""

    def one(chosen: list[str]) -> re.Pattern[str] | None:
        if not chosen:
            return None
        return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(pattern))})" for pattern in chosen))

    return one(list(patterns)), one([pattern for pattern in patterns if "/" not in pattern])


#: Configuration files, in the order they win within one directory (as ruff's
#: ``.ruff.toml`` > ``ruff.toml`` > ``pyproject.toml``). A ``pyproject.toml`` counts
#: only when it has a ``[tool.synclint]`` table; the other two always count.
CONFIG_FILES = (".synclint.toml", "synclint.toml", "pyproject.toml")


def _read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; ConfigError with the file, line and column if malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read: {getattr(error, 'strerror', None) or error}", path) from error
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        where = re.search(r" \(at line (\d+), column (\d+)\)$", message)
        if where:
            message = message[: where.start()]
            raise ConfigError(message, path, int(where.group(1)), int(where.group(2))) from error
        if message.endswith(" (at end of document)"):
            lines = text.split("\n")
            message = message[: -len(" (at end of document)")] + " at the end of the file"
            raise ConfigError(message, path, len(lines), len(lines[-1]) + 1) from error
        raise ConfigError(message, path) from error


def _synclint_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """The synclint settings in a parsed config file (None: a pyproject without them)."""
    tool = data.get("tool")
    if isinstance(tool, dict) and "synclint" in tool:
        table = tool["synclint"]
    elif path.name == "pyproject.toml":
        return None
    else:  # synclint.toml: the keys at the top level
        table = data
    if not isinstance(table, dict):
        raise ConfigError("[tool.synclint] must be a table", path, _line_of(path, "synclint"))
    return table


def config_in(directory: Path) -> Path | None:
    """The configuration file of ``directory`` itself, if it has one."""
    for name in CONFIG_FILES:
        candidate = directory / name
        if candidate.is_file():
            if name != "pyproject.toml" or _synclint_table(candidate, _read_toml(candidate)) is not None:
                return candidate
    return None


def find_config(start: Path) -> Path | None:
    """The closest configuration file at or above ``start`` (a directory, or a file's directory)."""
    start = Path(os.path.abspath(start))
    for directory in [start, *start.parents] if start.is_dir() else start.parents:
        found = config_in(directory)
        if found is not None:
            return found
    return None


def load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from ``config`` (a pyproject.toml or synclint.toml) or the closest one above ``start``."""
    path = config if config is not None else find_config(start or Path.cwd())
    if path is None:
        return Settings(root=Path(os.path.abspath(start or Path.cwd())))
    path = Path(path)
    table = _synclint_table(path, _read_toml(path))
    try:
        return settings_from_table(table or {}, root=Path(os.path.abspath(path)).parent)
    except ConfigError as error:
        if error.path is None:
            raise ConfigError(error.message, path, _line_of(path, error.key)) from error
        raise


def _line_of(path: Path, key: str | None) -> int | None:
    """The line that sets ``key`` in ``path`` (for error messages; best effort)."""
    if not key:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    pattern = re.compile(rf"""^\s*(\[\s*)?(tool\.synclint\.)?["']?{re.escape(key)}["']?\s*(=|\])""")
    for number, line in enumerate(lines, 1):
        if pattern.search(line):
            return number
    return None


@dataclass(frozen=True)
class Overrides:
    """Command-line rule selection, applied on top of every configuration file's settings."""

    select: tuple[str, ...] | None = None  # replaces the file's select
    ignore: tuple[str, ...] = ()  # added to the file's ignore
    extend_select: tuple[str, ...] = ()  # added to the file's extend-select
    #: Other Settings fields the command line sets outright (e.g. respect_gitignore).
    fields: tuple[tuple[str, Any], ...] = ()

    def apply(self, settings: Settings) -> Settings:
        return replace(
            settings,
            select=self.select if self.select is not None else settings.select,
            ignore=settings.ignore + self.ignore,
            extend_select=settings.extend_select + self.extend_select,
            **dict(self.fields),
        )


class Configuration:
    """The settings of every file: those of the closest configuration file above it.

    As in ruff, a file takes the configuration file closest to it (no merging
    with those further up), whatever the order of the paths on the command line
    or the working directory; relative patterns are anchored at that file's
    directory. With ``config`` given, that one file applies everywhere. Files
    with no configuration above them get the defaults, anchored at ``cwd``.
    ``overrides`` (the command line) apply on top in every case.
    """

    def __init__(self, overrides: Overrides | None = None, config: Path | None = None, cwd: Path | None = None):
        self.overrides = overrides or Overrides()
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self._fixed = self.overrides.apply(load_settings(config)) if config is not None else None
        self._by_directory: dict[Path, Settings] = {}
        self._by_config: dict[Path | None, Settings] = {}

    def settings_for(self, path: str | Path) -> Settings:
        """The settings for the file (or directory) ``path``."""
        if self._fixed is not None:
            return self._fixed
        absolute = Path(os.path.abspath(path))
        return self._for_directory(absolute if absolute.is_dir() else absolute.parent)

    def _for_directory(self, directory: Path) -> Settings:
        known = self._by_directory.get(directory)
        if known is not None:
            return known
        config = config_in(directory)
        if config is not None:
            settings = self._settings_of(config)
        elif directory.parent == directory:
            settings = self._settings_of(None)
        else:
            settings = self._for_directory(directory.parent)
        self._by_directory[directory] = settings
        return settings

    def _settings_of(self, config: Path | None) -> Settings:
        if config not in self._by_config:
            base = load_settings(config) if config is not None else Settings(root=self.cwd)
            self._by_config[config] = self.overrides.apply(base)
        return self._by_config[config]

    # The Settings interface, answered per path, for code handed a Configuration.
    def is_enabled(self, code: str, path: str | None = None) -> bool:
        return self.settings_for(path if path is not None else self.cwd).is_enabled(code, path)

    def is_excluded(self, path: Path, *, ancestors: bool = True) -> bool:
        return self.settings_for(Path(path).parent).is_excluded(path, ancestors=ancestors)


def settings_from_table(table: dict[str, Any], root: Path) -> Settings:
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        first = sorted(unknown)[0]
        raise ConfigError(f"unknown [tool.synclint] key(s): {', '.join(sorted(unknown))}", key=first)

    def strings(key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"[tool.synclint] {key} must be a list of strings", key=_key_of(key))
        return tuple(value)

    def patterns(key: str) -> tuple[str, ...] | None:
        return None if table.get(key) is None else strings(key, table[key])

    def codes(key: str) -> tuple[str, ...] | None:
        return None if table.get(key) is None else validate_selectors(key, strings(key, table[key]))

    def flag(key: str) -> bool | None:
        value = table.get(key)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"[tool.synclint] {key} must be true or false", key=key)
        return value

    max_file_size = None
    if table.get("max-file-size") is not None:
        try:
            max_file_size = parse_size(table["max-file-size"])
        except ValueError as error:
            raise ConfigError(f"[tool.synclint] max-file-size: {error}", key="max-file-size") from error

    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError("[tool.synclint] per-file-ignores must be a table", key="per-file-ignores")
    settings = Settings(root=root).with_overrides(
        select=codes("select"),
        ignore=codes("ignore"),
        extend_select=codes("extend-select"),
        exclude=patterns("exclude"),
        extend_exclude=patterns("extend-exclude"),
        respect_gitignore=flag("respect-gitignore"),
        force_exclude=flag("force-exclude"),
        max_file_size=max_file_size,
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
        raise ConfigError(
            f"[tool.synclint] {where}: unknown rule selector(s): {', '.join(unknown)}", key=_key_of(where)
        )
    return normalised


def _key_of(where: str) -> str:
    """The TOML key an error is about: ``per-file-ignores['tests/*']`` -> ``tests/*``."""
    match = re.fullmatch(r"per-file-ignores\[(['\"])(.*)\1\]", where)
    return match.group(2) if match else where
