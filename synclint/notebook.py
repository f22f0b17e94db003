"""Jupyter notebooks: check and fix the code cells of ``.ipynb`` files.

The code cells are joined into one virtual module, so ``import torch`` in the
first cell resolves names in the fifth, as when the notebook runs top to
bottom. IPython syntax (``%timeit``, ``!pip``, ``x = !ls``, ``obj?``, and magics and shell
aliases without their ``%`` in a cell of one line, ``pip install ...``, ``ls data/``) is masked
line by line with a ``pass`` of the same indentation; cell magics (``%%bash``)
skip the whole cell. Findings are mapped back to 1-based cell numbers (counting
every cell, markdown included, as a notebook UI does) and cell-relative lines.
Fixes are split back into the cells they came from; outputs, metadata and
non-code cells are never touched.
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synclint.config import Settings
from synclint.finding import Finding, error_finding
from synclint.project.notebook_cells import CELL_MARKER

if TYPE_CHECKING:
    from synclint.project.facts import FileFacts

NOTEBOOK_SUFFIX = ".ipynb"

_HELP = re.compile(r"^(\?{1,2}[\w.]+|[\w.]+\?{1,2})$")  # ``obj?``, ``??obj``
_ASSIGNED_MAGIC = re.compile(r"^[\w.\[\], ]+=\s*[%!]")  # ``files = !ls``
#: IPython's line magics and shell aliases that automagic (on by default) runs without a
#: ``%``: ``pip install -r requirements.txt``, ``ls /content/checkpoints/``, ``cd ..``.
_AUTOMAGIC = frozenset({
    "alias", "autoawait", "autocall", "automagic", "autoreload", "aimport", "bookmark", "cat", "cd", "clear",
    "colors", "conda", "config", "cp", "debug", "dhist", "dirs", "doctest_mode", "ed", "edit", "env", "gui",
    "hist", "history", "killbgscripts", "ldir", "less", "lf", "lk", "ll", "load", "load_ext", "loadpy",
    "logoff", "logon", "logstart", "logstate", "logstop", "ls", "lsmagic", "lx", "macro", "magic", "man",
    "matplotlib", "mkdir", "more", "mv", "notebook", "page", "pastebin", "pdb", "pdef", "pdoc", "pfile",
    "pinfo", "pinfo2", "pip", "popd", "pprint", "precision", "prun", "psearch", "psource", "pushd", "pwd",
    "pycat", "pylab", "quickref", "recall", "rehashx", "reload_ext", "rep", "rerun", "reset",
    "reset_selective", "rm", "rmdir", "run", "save", "sc", "set_env", "store", "sx", "system", "tb", "time",
    "timeit", "unalias", "unload_ext", "who", "who_ls", "whos", "xdel", "xmode",
})
_PLACEHOLDER = "pass  # synclint-masked-ipython-{}"
_PLACEHOLDER_LINE = re.compile(r"^[ \t]*pass  # synclint-masked-ipython-(\d+)[ \t]*$")
_CELL_MARKER_LINE = re.compile("^" + re.escape(CELL_MARKER).replace(re.escape("{}"), r"(\d+)") + "$")


class NotebookError(ValueError):
    """The file is not a notebook synclint can read (reported as SL000)."""


def is_notebook(path: str | Path) -> bool:
    return str(path).endswith(NOTEBOOK_SUFFIX)


# -- the notebook file ----------------------------------------------------------------


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based position among all cells
    source: str


@dataclass
class Notebook:
    data: dict[str, Any]
    text: str

    @classmethod
    def from_text(cls, text: str | bytes) -> Notebook:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as error:
            raise NotebookError(f"not a valid notebook (JSON): {error}") from error
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("not a notebook in nbformat 4 (no `cells` list)")
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        return cls(data, text)

    @property
    def is_python(self) -> bool:
        metadata = _table(self.data.get("metadata"))
        language = _table(metadata.get("language_info")).get("name") or _table(metadata.get("kernelspec")).get(
            "language"
        )
        return language in (None, "python", "python3")

    def code_cells(self) -> list[CodeCell]:
        return [
            CodeCell(number, _join(cell.get("source", "")))
            for number, cell in enumerate(self.data["cells"], start=1)
            if isinstance(cell, dict) and cell.get("cell_type") == "code"
        ]

    def with_sources(self, sources: dict[int, str]) -> str:
        """The notebook's text with the given cells' sources replaced, formatted as it was."""
        data = json.loads(self.text)  # a fresh copy; outputs and metadata carried verbatim
        for number, source in sources.items():
            cell = data["cells"][number - 1]
            cell["source"] = source.splitlines(keepends=True) if isinstance(cell["source"], list) else source
        return _dumps_like(data, self.text)


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _join(source: Any) -> str:
    if isinstance(source, list):
        return "".join(line for line in source if isinstance(line, str))
    return source if isinstance(source, str) else ""


def _dumps_like(data: Any, original: str) -> str:
    """Serialise ``data`` the way ``original`` was written (nbformat uses indent 1)."""
    newline = "\n" if original.endswith("\n") else ""
    reference = json.loads(original)
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                options = dict(indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
                if json.dumps(reference, **options) + newline == original:
                    return json.dumps(data, **options) + newline
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


# -- IPython syntax ---------------------------------------------------------------------


def mask_ipython(source: str, originals: list[str]) -> str | None:
    """``source`` with IPython-only lines replaced by ``pass`` placeholders.

    The replaced lines are appended to ``originals`` (the placeholder holds the
    index). Returns None for a cell magic (``%%bash``): the cell is not Python.
    """
    lines = source.splitlines(keepends=True)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%"):
        return None
    masked: list[str] = []
    continued = False
    indent = ""
    # IPython's automagic (``pip install ...`` without ``%``) is a dynamic transformation it
    # applies to a cell of one line only (``InteractiveShell.transform_cell``): in a longer
    # cell such a line is a SyntaxError and none of the cell runs. (Blank lines aside.)
    single_line = sum(1 for line in lines if line.strip()) == 1
    for line in lines:
        body = line.rstrip("\r\n")
        stripped = body.strip()
        magic = _looks_like_ipython(stripped) or (single_line and _automagic(stripped))
        if continued or (magic and _starts_statement("".join(masked))):
            if not continued:  # a ``\`` continuation keeps its statement's indentation, not its own
                indent = body[: len(body) - len(body.lstrip())]
            masked.append(indent + _PLACEHOLDER.format(len(originals)) + line[len(body) :])
            originals.append(body)
            continued = body.endswith("\\")
        else:
            masked.append(line)
    return "".join(masked)


def _looks_like_ipython(stripped: str) -> bool:
    if stripped.startswith(("%", "!")) or _ASSIGNED_MAGIC.match(stripped):
        return True
    # Help: ``obj?``, ``??obj``, ``x.sum()?`` (a ``?`` in a comment or string is Python).
    return bool(_HELP.match(stripped)) or (stripped.endswith("?") and not any(c in stripped for c in "#'\""))


def _automagic(stripped: str) -> bool:
    """``pip install -r requirements.txt``, ``ls /content/checkpoints/``: a line magic or shell
    alias without its ``%``, which IPython runs (automagic): a word of :data:`_AUTOMAGIC` and
    then more, on a line that is no Python statement on its own but leaves no bracket or
    string open (``time = (`` begins a statement that goes on)."""
    word, _, rest = stripped.partition(" ")
    if word not in _AUTOMAGIC or not rest.strip() or not _starts_statement(stripped + "\n"):
        return False
    try:
        ast.parse(stripped)
    except SyntaxError:
        return True
    return False


def _starts_statement(prefix: str) -> bool:
    """Whether the next line begins a statement (not inside brackets, a string or a ``\\``)."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(prefix).readline):
            pass
    except tokenize.TokenError:
        return False
    except SyntaxError:  # IndentationError and friends: not ours to judge
        return True
    return True


def _unmask(source: str, originals: list[str]) -> str:
    def restore(line: str) -> str:
        body = line.rstrip("\r\n")
        match = _PLACEHOLDER_LINE.match(body)
        return originals[int(match.group(1))] + line[len(body) :] if match else line

    return "".join(restore(line) for line in source.splitlines(keepends=True))


# -- the virtual module -----------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    cell: CodeCell
    first_line: int  # virtual line of the cell's first line
    line_count: int


@dataclass(frozen=True)
class _MaskedCell:
    cell: CodeCell
    source: str  # IPython lines replaced by placeholders; ends with a newline


@dataclass
class VirtualModule:
    """The code cells joined into one module, each after a marker comment."""

    source: str = ""
    spans: list[_Span] = field(default_factory=list)
    originals: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, cells: list[_MaskedCell], originals: list[str]) -> VirtualModule:
        module = cls(originals=originals)
        parts: list[str] = []
        line = 1
        for masked in cells:
            parts.append(CELL_MARKER.format(masked.cell.number) + "\n" + masked.source)
            count = masked.source.count("\n")
            module.spans.append(_Span(masked.cell, line + 1, count))
            line += count + 1
        module.source = "".join(parts)
        return module

    def locate(self, line: int) -> tuple[CodeCell, int] | None:
        """(cell, cell-relative line) of a virtual line; None on a marker line."""
        for span in self.spans:
            if span.first_line <= line < span.first_line + span.line_count:
                return span.cell, line - span.first_line + 1
        return None

    def split(self, fixed: str) -> dict[int, str] | None:
        """Cell number -> source from a fixed virtual module; None if the markers moved."""
        sources: dict[int, list[str]] = {}
        leading: list[str] = []  # text a fix put above the first marker belongs to the first cell
        current = leading
        for line in fixed.splitlines(keepends=True):
            marker = _CELL_MARKER_LINE.match(line.rstrip("\r\n"))
            if marker:
                current = sources.setdefault(int(marker.group(1)), [])
                if leading:
                    current.extend(leading)
                    leading = []
            else:
                current.append(line)
        if sorted(sources) != [span.cell.number for span in self.spans]:
            return None
        return {number: _unmask("".join(lines), self.originals) for number, lines in sources.items()}


def _masked_cells(notebook: Notebook, originals: list[str]) -> list[_MaskedCell]:
    cells = []
    for cell in notebook.code_cells():
        masked = mask_ipython(cell.source, originals)
        if masked is None or not masked.strip():
            continue  # a cell magic, or nothing to check
        cells.append(_MaskedCell(cell, masked if masked.endswith("\n") else masked + "\n"))
    return cells


def _syntax_error(masked: _MaskedCell, path: str) -> Finding | None:
    """SL000 for a cell that does not parse on its own (stdlib parser: exact positions)."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        compile(masked.source, f"cell_{masked.cell.number}", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as error:
        where = error_finding(path, f"syntax error: {error.msg} (cell skipped)", error.lineno or 1, error.offset or 1)
    except (ValueError, RecursionError, MemoryError) as error:
        where = error_finding(path, f"cannot parse: {error} (cell skipped)")
    else:
        return None
    return replace(where, cell=masked.cell.number)


def _libcst_error(masked: _MaskedCell, path: str) -> Finding | None:
    from synclint.engine import SourceError, parse

    try:
        parse(masked.source)
    except SourceError as error:
        return replace(error_finding(path, f"{error} (cell skipped)"), cell=masked.cell.number)
    return None


def _parseable(notebook: Notebook, path: str) -> tuple[VirtualModule, list[Finding], Any]:
    """The virtual module of the cells that parse, its libcst module, and SL000 per bad cell.

    Bad cells are found with the stdlib parser (exact positions, fast); where
    libcst's grammar still disagrees, each cell is parsed by libcst alone.
    """
    from synclint.engine import SourceError, parse

    originals: list[str] = []
    errors: list[Finding] = []
    cells: list[_MaskedCell] = []
    for masked in _masked_cells(notebook, originals):
        failure = _syntax_error(masked, path)
        if failure is None:
            cells.append(masked)
        else:
            errors.append(failure)
    for attempt in range(2):
        virtual = VirtualModule.build(cells, originals)
        if not cells:
            return virtual, errors, None
        try:
            return virtual, errors, parse(virtual.source)
        except SourceError:
            if attempt == 0:
                failures = {m.cell.number: f for m in cells if (f := _libcst_error(m, path)) is not None}
                errors.extend(failures.values())
                cells = [m for m in cells if m.cell.number not in failures]
    errors.append(error_finding(path, "the code cells do not parse as one module"))
    return VirtualModule(originals=originals), errors, None


# -- checking ---------------------------------------------------------------------------


def check_notebook_source(
    data: str | bytes, path: str, settings: Settings | None = None, *, include_cold: bool = False,
    project: FileFacts | None = None,
) -> list[Finding]:
    """Findings for one notebook, with cell-relative positions (``Finding.cell``);
    findings in cold code only with ``include_cold``. The cells are their own project;
    ``project``: what the project around the notebook says of it, when there is one
    (:func:`synclint.project.facts.notebook_facts`)."""
    from synclint.engine import check_module, select_rules, visible
    from synclint.project import COLD
    from synclint.project.facts import in_project
    from synclint.project.store import facts_for_source

    try:
        notebook = Notebook.from_text(data)
    except NotebookError as error:
        return [error_finding(path, str(error))]
    if not notebook.is_python:
        return []
    virtual, errors, module = _parseable(notebook, path)
    findings: list[Finding] = []
    if module is not None:
        facts = in_project(facts_for_source(virtual.source, path), project)
        found = check_module(module, virtual.source, path, select_rules(settings, path), facts, include_cold=True)
        for finding in found:
            mapped = _to_cell(finding, virtual)
            if mapped is not None:
                findings.append(mapped)
    file_cold = project.file_cold if project is not None else None
    if file_cold is not None:  # a demo by its path in the project: cold as a whole, like a .py file there
        findings = [replace(finding, context=COLD, why=file_cold) for finding in findings]
        # A cell that does not parse (a shell command in a tutorial) hides what would be cold
        # anyway: its notice is cold too, as a .py file's there is (see engine._unchecked).
        errors = [replace(error, context=COLD, why=f"{file_cold}: its findings would be cold") for error in errors]
    findings = visible([*errors, *findings], include_cold)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def _to_cell(finding: Finding, virtual: VirtualModule) -> Finding | None:
    located = virtual.locate(finding.line)
    if located is None:
        return None
    cell, line = located
    shift = finding.line - line
    fix = finding.fix
    if fix is not None:
        edits = tuple(replace(e, line=e.line - shift, end_line=e.end_line - shift) for e in fix.edits)
        fix = replace(fix, edits=edits)
    return replace(
        finding,
        line=line,
        end_line=min(finding.end_line - shift, cell.source.count("\n") + 1),
        fix=fix,
        cell=cell.number,
    )


# -- fixing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NotebookFixResult:
    """Like ``fixers.apply.FixResult``; ``original``/``fixed`` are the notebook's JSON text."""

    path: str
    original: str
    fixed: str
    applied: int
    cells: tuple[tuple[int, str, str], ...] = ()  # (cell number, before, after) per changed cell

    @property
    def changed(self) -> bool:
        return self.original != self.fixed

    def diff_lines(self) -> Iterator[str]:
        """A unified diff per changed cell, headed ``a/nb.ipynb:cell_3``."""
        for number, before, after in self.cells:
            # Cells rarely end with a newline; give every diff line one.
            yield from difflib.unified_diff(
                [line + "\n" for line in before.splitlines()],
                [line + "\n" for line in after.splitlines()],
                fromfile=f"a/{self.path}:cell_{number}",
                tofile=f"b/{self.path}:cell_{number}",
            )


def fix_notebook(
    path: str | Path, settings: Settings | None = None, unsafe: bool = False, project: FileFacts | None = None,
    include_cold: bool = False,
) -> NotebookFixResult:
    """Fix one notebook in memory; raises ``engine.SourceError`` if it cannot be read.
    ``project``: as for :func:`check_notebook_source`; ``include_cold``: as for
    :func:`synclint.fixers.apply.fix_text`."""
    from synclint.engine import SourceError
    from synclint.fixers.apply import fix_text

    from synclint.sources import SourceReadError, message_of

    try:
        notebook = Notebook.from_text(_read_regular_file(path, settings))
    except SourceReadError as error:
        raise SourceError(message_of(error)) from error
    except NotebookError as error:
        raise SourceError(str(error)) from error
    unchanged = NotebookFixResult(str(path), notebook.text, notebook.text, 0)
    if not notebook.is_python:
        return unchanged
    virtual, _, module = _parseable(notebook, str(path))
    if module is None:
        return unchanged
    fixed, applied = fix_text(virtual.source, str(path), settings, unsafe, project, include_cold)
    sources = virtual.split(fixed) if applied else None
    if not sources:
        return unchanged
    before = {span.cell.number: span.cell.source for span in virtual.spans}
    changes = {}
    for number, after in sources.items():
        if not before[number].endswith("\n") and after.endswith("\n"):
            after = after[:-1]  # the newline the virtual module added
        if after != before[number]:
            changes[number] = after
    if not changes:
        return unchanged
    return NotebookFixResult(
        str(path),
        notebook.text,
        notebook.with_sources(changes),
        applied,
        tuple((number, before[number], after) for number, after in sorted(changes.items())),
    )


def _read_regular_file(path: str | Path, settings: Settings | None) -> bytes:
    """The notebook's bytes (regular files under the size limit only: see synclint.sources)."""
    from synclint.sources import DEFAULT_MAX_FILE_SIZE, read_source

    limit = settings.settings_for(path).max_file_size if settings is not None else DEFAULT_MAX_FILE_SIZE
    return read_source(path, limit)
