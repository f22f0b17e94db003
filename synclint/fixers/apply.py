"""Apply fix proposals to a module until nothing changes, and write files safely.

Guarantees (each tested):

* a fix is applied only if the fixed module parses;
* proposals whose edits overlap are never applied in the same pass (the
  later one is re-derived from the fixed code in the next pass);
* passes repeat to a fixed point (bounded), so the result is idempotent;
* files are written by :mod:`synclint.file_writing`: atomically, through
  symlinks, keeping hard links, owner, mode, encoding, BOM, line endings and
  the trailing newline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from synclint.config import Settings
from synclint.engine import SourceError, analyse, decode_source, nothing_to_find, parse, select_rules
from synclint.fixers.base import FixProposal, ReplaceNodes
from synclint.fixers.imports import ensure_imports
from synclint.project import FileFacts, facts_for_source
from synclint.project.facts import in_project
from synclint.suppression import spans_suppressed, suppressions

MAX_PASSES = 10


@dataclass(frozen=True)
class FixResult:
    path: str
    original: str
    fixed: str
    applied: int  # number of proposals applied

    @property
    def changed(self) -> bool:
        return self.original != self.fixed


def _overlaps(a: CodeRange, b: CodeRange) -> bool:
    return (a.start.line, a.start.column) < (b.end.line, b.end.column) and (
        b.start.line,
        b.start.column,
    ) < (a.end.line, a.end.column)


def _one_pass(source: str, path: str, settings: Settings | None, unsafe: bool,
              project: FileFacts | None, include_cold: bool) -> tuple[str, int]:
    module = parse(source)
    # The text is analysed on its own (a pass's fixes move its lines), with what its
    # project says of every file in it: the findings `check` shows are the ones fixed.
    facts = in_project(facts_for_source(source, path), project) if project is not None else None
    if facts is not None and facts.host_only and not include_cold:
        return source, 0  # (every finding of a project that runs on the host only is cold)
    _, reports = analyse(module, source, path, select_rules(settings, path), facts=facts, include_cold=include_cold)
    candidates = [r for r in reports if r.fix is not None and r.fix.replacements and (unsafe or r.fix.is_safe)]
    if not candidates:
        return source, 0
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    silenced = suppressions(source)
    accepted: list[FixProposal] = []
    taken: list[CodeRange] = []
    for report in candidates:
        # A comment on the finding's lines, or on the node it is silenced with (an unpinned
        # loader's line, for the copies of its batches), hides it from `check`: not fixed either.
        also = positions.get(report.silenced_with) if report.silenced_with is not None else None
        if spans_suppressed(silenced, report.rule.code, positions[report.node], also):
            continue
        ranges = [positions[node] for node in report.fix.replacements if node in positions]
        if len(ranges) != len(report.fix.replacements):
            continue
        if any(_overlaps(r, t) for r in ranges for t in taken):
            continue
        accepted.append(report.fix)
        taken.extend(ranges)
    if not accepted:
        return source, 0
    replacements: dict = {}
    imports: list[str] = []
    for proposal in accepted:
        replacements.update(proposal.replacements)
        imports.extend(proposal.imports)
    fixed = module.visit(ReplaceNodes(replacements))
    fixed = ensure_imports(fixed, imports)
    code = fixed.code
    try:
        parse(code)
    except SourceError:
        return source, 0  # never produce code that does not parse
    return code, len(accepted)


def fix_text(
    source: str, path: str = "<string>", settings: Settings | None = None, unsafe: bool = False,
    project: FileFacts | None = None, include_cold: bool = False,
) -> tuple[str, int]:
    """Fixed source and the number of fixes applied, iterating to a fixed point.
    ``project``: the facts its project gives the file (:func:`synclint.project.facts_for_files`),
    when it is one of a project's files. ``include_cold``: also fix the findings only
    ``check --include-cold`` shows (what runs once, or is cold for a rule's own reason)."""
    original, total = source, 0
    for _ in range(MAX_PASSES):
        fixed, applied = _one_pass(source, path, settings, unsafe, project, include_cold)
        if applied == 0 or fixed == source:
            break
        source, total = fixed, total + applied
    return _keep_final_line_ending(original, source), total


# -- files ---------------------------------------------------------------------------


def _read(path: Path, settings: Settings | None) -> str | None:
    """The decoded text of a source file; SourceError if it cannot be read or decoded. None
    for a file over the size limit that no selected rule could report on, which ``check``
    passes over in silence (see :func:`synclint.engine.nothing_to_find`): nothing to fix."""
    from synclint.sources import DEFAULT_MAX_FILE_SIZE, SourceReadError, SourceTooLarge, message_of, read_source

    own = settings.settings_for(path) if settings is not None else None
    limit = own.max_file_size if own is not None else DEFAULT_MAX_FILE_SIZE
    try:
        return decode_source(read_source(path, limit))
    except SourceTooLarge as error:
        if nothing_to_find(path, own):
            return None
        raise SourceError(message_of(error)) from error
    except SourceReadError as error:
        raise SourceError(message_of(error)) from error


def fix_file(
    path: str | Path, settings: Settings | None = None, unsafe: bool = False, project: FileFacts | None = None,
    include_cold: bool = False,
) -> FixResult:
    """Fix one file in memory (nothing is written); raises SourceError if it cannot be read.
    ``project``, ``include_cold``: as for :func:`fix_text`."""
    path = Path(path)
    text = _read(path, settings)
    if text is None:
        return FixResult(str(path), "", "", 0)
    # Parse with newline translation off: libcst keeps the file's line endings.
    fixed, applied = fix_text(text, str(path), settings, unsafe, project, include_cold)
    return FixResult(str(path), text, fixed, applied)


_LINE_ENDINGS = ("\r\n", "\r", "\n")


def _keep_final_line_ending(original: str, fixed: str) -> str:
    """libcst drops a CR-only file's last line ending when it prints a module: put it back."""
    if fixed == original or fixed.endswith(_LINE_ENDINGS):
        return fixed
    for ending in _LINE_ENDINGS:
        if original.endswith(ending):
            return fixed + ending
    return fixed


def write_atomically(path: str | Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` keeping its encoding, BOM, links, owner and mode.

    See :mod:`synclint.file_writing`; raises OSError (to report) if it cannot be written.
    """
    from synclint.file_writing import write_text_like

    write_text_like(path, text)
