"""Apply fix proposals to a module until nothing changes, and write files safely.

Guarantees (each tested):

* a fix is applied only if the fixed module parses;
* proposals whose edits overlap are never applied in the same pass (the
  later one is re-derived from the fixed code in the next pass);
* passes repeat to a fixed point (bounded), so the result is idempotent;
* files are written atomically (temp file + ``os.replace``) with the original
  encoding, BOM, line endings, trailing newline and file mode.
"""

from __future__ import annotations

import codecs
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from synclint.config import Settings
from synclint.engine import SourceError, analyse, decode_source, parse, select_rules
from synclint.fixers.base import FixProposal, ReplaceNodes
from synclint.fixers.imports import ensure_imports
from synclint.suppression import is_suppressed, suppressions

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


def _one_pass(source: str, path: str, settings: Settings | None, unsafe: bool) -> tuple[str, int]:
    module = parse(source)
    _, reports = analyse(module, source, path, select_rules(settings, path))
    candidates = [r for r in reports if r.fix is not None and r.fix.replacements and (unsafe or r.fix.is_safe)]
    if not candidates:
        return source, 0
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    silenced = suppressions(source)
    accepted: list[FixProposal] = []
    taken: list[CodeRange] = []
    for report in candidates:
        where = positions[report.node]
        if is_suppressed(silenced, report.rule.code, range(where.start.line, where.end.line + 1)):
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
    source: str, path: str = "<string>", settings: Settings | None = None, unsafe: bool = False
) -> tuple[str, int]:
    """Fixed source and the number of fixes applied, iterating to a fixed point."""
    total = 0
    for _ in range(MAX_PASSES):
        fixed, applied = _one_pass(source, path, settings, unsafe)
        if applied == 0 or fixed == source:
            break
        source, total = fixed, total + applied
    return source, total


# -- files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Encoding:
    name: str
    bom: bool


def _read(path: Path) -> tuple[str, _Encoding]:
    data = path.read_bytes()
    bom = data.startswith(codecs.BOM_UTF8)
    text = decode_source(data)
    import io
    import tokenize

    name, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return text, _Encoding("utf-8" if name == "utf-8-sig" else name, bom)


def fix_file(path: str | Path, settings: Settings | None = None, unsafe: bool = False) -> FixResult:
    """Fix one file in memory (nothing is written); raises SourceError if it cannot be read."""
    path = Path(path)
    try:
        text, _ = _read(path)
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from error
    # Parse with newline translation off: libcst keeps the file's line endings.
    fixed, applied = fix_text(text, str(path), settings, unsafe)
    return FixResult(str(path), text, fixed, applied)


def write_atomically(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` in its original encoding, BOM and file mode."""
    path = Path(path)
    _, encoding = _read(path)
    data = text.encode(encoding.name)
    if encoding.bom:
        data = codecs.BOM_UTF8 + data
    mode = path.stat().st_mode
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".synclint")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
