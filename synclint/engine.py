"""Parse once, analyse in one traversal, turn reports into findings.

Data flows one way: source + the project's facts about it (synclint.project)
-> libcst module -> (imports, flow state, rules in a single traversal) ->
reports -> findings (positions resolved lazily, only when a file has something
to report; each with its context: hot, unknown or cold) -> suppression filter.

Notebooks are a source adapter above this module (synclint.notebook calls the
engine, never the reverse); the public ``synclint.check_source`` dispatches.
"""


from __future__ import annotations

import ast
import codecs
import dataclasses
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

import libcst as cst

from synclint.analysis.flow import FlowState
from synclint.analysis.imports import ImportMap, collect_imports, names_bound
from synclint.config import Settings
from synclint.finding import Edit, Finding, Fix, error_finding
from synclint.fixers.base import render
from synclint.fixers.imports import import_insertion
from synclint.guard import guarded_tree
from synclint.hidden_code import blank_hidden_functions
from synclint.legacy_syntax import old_python
from synclint.positions import positions_for
from synclint.prefilter import can_skip
from synclint.project import (
    AT_CALL_SITES, COLD, HOT, PROVEN_SYNC, TYPE_STUB, UNKNOWN, UNREACHED, Context, FileFacts, facts_for_source, is_hidden,
    is_type_stub, outside_the_program,
)
from synclint.pruning import Pruned, prune, statement_tokens
from synclint.rules import ALL_RULES
from synclint.rules.base import Report, Rule, RuleContext
from synclint.sources import python_encoding, source_lines
from synclint.suppression import audited, audits_suppressions, spans_suppressed, suppressions
from synclint.traversal import skipped_types, walk


class SourceError(Exception):
    """The file cannot be analysed; the message says why (reported as SL000). ``old_python``:
    why its syntax shows it was written for a Python no current PyTorch runs, if it does."""

    def __init__(self, message: str, line: int = 1, column: int = 1, old_python: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.old_python = old_python


_skip_by_hooks: dict[frozenset[str], frozenset[type]] = {}


class _Dispatcher(cst.CSTVisitor):
    """One traversal: keeps the flow state current and calls every rule's hooks."""

    def __init__(self, flow: FlowState, rules: Sequence[Rule]) -> None:
        super().__init__()
        self.flow = flow
        self.visits: dict[str, list] = {}
        self.leaves: dict[str, list] = {}
        for rule in rules:
            for attr, node_type in type(rule).hooks().items():
                table = self.visits if attr.startswith("visit_") else self.leaves
                table.setdefault(node_type, []).append(getattr(rule, attr))
        # Whitespace and punctuation matter to no one unless a rule hooks them.
        wanted = frozenset([*self.visits, *self.leaves])
        skip = _skip_by_hooks.get(wanted)
        if skip is None:
            skip = _skip_by_hooks[wanted] = skipped_types(self, also_wanted=wanted)
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.flow.enter(node)
        for hook in self.visits.get(type(node).__name__, ()):
            hook(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        for hook in self.leaves.get(type(original_node).__name__, ()):
            hook(original_node)
        self.flow.leave(original_node)


def decode_source(data: bytes) -> str:
    """Decode Python source honouring a BOM or a PEP 263 coding cookie."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        encoding = python_encoding(data)
    except SyntaxError as error:
        # tokenize refuses non-UTF-8 bytes in the first two lines without a cookie.
        raise SourceError(f"not valid utf-8 and no coding declaration (PEP 263): {error}") from error
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"not valid {encoding}: {error}") from error


def parse(source: str) -> cst.Module:
    _guard(source)
    return _parse_guarded(source)


def _guard(source: str) -> ast.Module | None:
    """CPython's tree of ``source``; SourceError for what would crash or stall libcst."""
    tree, reason = guarded_tree(source)
    if reason is not None:
        raise SourceError(f"cannot parse: {reason}")
    return tree


def _parse_guarded(source: str) -> cst.Module:
    """Parse ``source``, which the guard passed (or is part of one it passed)."""
    try:
        return _parse_unvalidated(source)
    except cst.ParserSyntaxError as error:
        raise _syntax_error(source, error) from error
    except (RecursionError, MemoryError) as error:  # pathological nesting
        raise SourceError(f"cannot parse: {type(error).__name__}") from error


def _parse_unvalidated(source: str) -> cst.Module:
    """``cst.parse_module`` without re-validating every node the native parser builds.

    Each libcst node checks its fields in ``__post_init__`` (libcst's own PERF
    note calls this wasted on parsing): the native parser only builds valid
    trees, and skipping the check saves ~15% of a parse. Nodes synclint builds
    itself (fixes) are still validated: the hook is restored before returning.
    """
    if _node_base is None:
        return cst.parse_module(source)
    saved = _node_base.__dict__["__post_init__"]
    _node_base.__post_init__ = _skip_validation
    try:
        return cst.parse_module(source)
    finally:
        _node_base.__post_init__ = saved


def _skip_validation(self) -> None:
    return None


try:  # a private module: if a libcst release moves it, parsing just validates again
    from libcst._nodes.base import CSTNode as _node_base

    if "__post_init__" not in _node_base.__dict__:
        _node_base = None
except ImportError:  # pragma: no cover
    _node_base = None


def _syntax_error(source: str, error: cst.ParserSyntaxError) -> SourceError:
    """Prefer CPython's location and wording, which users know; fall back to libcst's."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as python_error:
        return SourceError(
            f"syntax error: {python_error.msg}",
            line=python_error.lineno or 1,
            column=python_error.offset or 1,
            old_python=old_python(str(python_error.msg), python_error.text, python_error.offset),
        )
    except (RecursionError, MemoryError, ValueError):
        pass
    return SourceError(f"syntax error: {error.message}", line=error.raw_line, column=error.raw_column + 1)


def select_rules(settings: Settings | None, path: str | None = None) -> list[type[Rule]]:
    if settings is None:
        return list(ALL_RULES)
    return [rule for rule in ALL_RULES if settings.is_enabled(rule.code, path)]


def analyse(
    module: cst.Module,
    source: str,
    path: str,
    rules: Iterable[type[Rule]],
    tree: ast.Module | None = None,
    imports: ImportMap | None = None,
    facts: FileFacts | None = None,
    include_cold: bool = False,
) -> tuple[RuleContext, list[Report]]:
    """Run ``rules`` over ``module`` in one traversal; return their raw reports.

    ``tree``: CPython's tree of the code ``module`` was parsed from, when at hand;
    ``imports``: its import map, when already built; ``facts``: what the project
    index knows about this file; ``include_cold``: also the reports the traversal
    saw in cold code (error paths, constructors, the data pipeline).
    """
    if imports is None:
        imports = collect_imports(module, tree)
    if facts is None:  # no project around it: the source is its own project
        facts = facts_for_source(source, path, tree)
    if facts.star_imports:
        imports.add_star_imported(facts.star_imports, names_bound(module, tree))
    flow = FlowState(module, imports, path, facts)
    context = RuleContext(path, source, module, imports, flow)
    instances = [rule(context) for rule in rules]
    dispatcher = _Dispatcher(flow, instances)
    walk(module, dispatcher, dispatcher.skip)
    if not include_cold:
        return context, [report for report in context.reports if report.cold is None]
    return context, context.reports


def check_module(
    module: cst.Module,
    source: str,
    path: str,
    rules: Sequence[type[Rule]],
    facts: FileFacts | None = None,
    *,
    include_cold: bool = False,
) -> list[Finding]:
    """Findings for an already parsed module (cold ones only with ``include_cold``)."""
    if facts is None:
        facts = facts_for_source(source, path)
    findings = _check_parsed(module, source, path, rules, facts=facts)
    assert findings is not None  # only pruned sources can ask for the whole file
    return visible(findings, include_cold)


def _check_text(
    text: str, path: str, rules: Sequence[type[Rule]], facts: FileFacts | None = None, skip_hidden: bool = False
) -> list[Finding]:
    """Parse and check ``text``, leaving out the statements no rule can report on and,
    with ``skip_hidden``, the functions whose findings would all be hidden."""
    tree = _guard(text)
    if facts is None:  # no project around it: the file is its own project
        facts = facts_for_source(text, path, tree)
    blanked = blank_hidden_functions(text, tree, facts, tuple(rules)) if skip_hidden and tree is not None else None
    if blanked is not None:  # (with the whole module's imports: a left-out function's count)
        findings = _check_variant(text, path, rules, facts, *blanked)
        if findings is not None:
            return findings
    return _check_variant(text, path, rules, facts, text, tree)  # type: ignore[return-value]


def _check_variant(
    text: str,
    path: str,
    rules: Sequence[type[Rule]],
    facts: FileFacts,
    parsed: str,
    parsed_tree: ast.Module | None,
    imports: ImportMap | None = None,
) -> list[Finding] | None:
    """The findings of ``text`` from ``parsed``: ``text`` itself, or ``text`` with hidden
    functions blanked when ``imports`` (the whole module's) are given. Top-level statements
    are pruned when exact. None when a blanked variant cannot stand for the whole module."""
    pruned = prune(parsed, parsed_tree, statement_tokens(tuple(rules)), imports) if parsed_tree is not None else None
    if pruned is not None:
        try:
            module = _parse_guarded(pruned.source)
        except SourceError:
            module = None  # report the error as the whole file shows it
        if module is not None:
            findings = _check_parsed(module, text, path, rules, pruned.source, pruned.tree, pruned, facts)
            if findings is not None:
                return findings
    try:
        module = _parse_guarded(parsed)
    except SourceError:
        if imports is None:
            raise
        return None  # (the guard passed the whole file: report what it says)
    return _check_parsed(module, text, path, rules, parsed, parsed_tree, facts=facts, imports=imports)


def _check_parsed(
    module: cst.Module,
    source: str,
    path: str,
    rules: Sequence[type[Rule]],
    parsed_source: str | None = None,
    tree: ast.Module | None = None,
    pruned: Pruned | None = None,
    facts: FileFacts | None = None,
    imports: ImportMap | None = None,
) -> list[Finding] | None:
    """Findings for ``module``, parsed from ``parsed_source`` (``source`` with some
    top-level statements blanked when ``pruned``, hidden functions when ``imports``
    are given: those of all of ``source``); None when the pruning was not exact, or a
    fixer was asked about a finding outside the statements of functions (fixes there
    look for names across the whole module) in a source that is not all of the module."""
    facts = facts or FileFacts()
    context, reports = analyse(
        module, source, path, rules, tree, pruned.imports if pruned is not None else imports, facts, include_cold=True
    )
    partial = pruned is not None or imports is not None
    if pruned is not None and not pruned.is_exact(context.flow):
        return None
    if partial and any(r.fix_read_the_module for r in reports):
        return None
    if not reports:
        return []
    positions = positions_for(module, parsed_source or source, _nodes_to_place(reports), tree)
    placed = [positions[report.node] for report in reports]
    placed += [positions[report.silenced_with] for report in reports if report.silenced_with is not None]
    silenced = suppressions(source, {line for where in placed for line in (where.start.line, where.end.line)})
    lines = source_lines(source)
    findings = []
    for report in reports:
        where = positions[report.node]
        line, end_line = where.start.line, where.end.line
        also = positions[report.silenced_with] if report.silenced_with is not None else None
        if spans_suppressed(silenced, report.rule.code, where, also):
            continue
        where_context = _context(report, facts, line)
        if facts.synced_at_callers and not where_context.is_cold and _at_call_sites(
            facts, lines, line, where.start.column, report.rule.code
        ):
            where_context = Context(UNKNOWN, AT_CALL_SITES)
        findings.append(
            Finding(
                path=path,
                line=line,
                column=where.start.column + 1,
                end_line=end_line,
                end_column=where.end.column + 1,
                code=report.rule.code,
                name=report.rule.name,
                message=_with_chain(report.message, where_context),
                fix=_fix_record(report, positions, lines, source),
                source_line=lines[line - 1] if 0 < line <= len(lines) else "",
                context=where_context.kind,
                why=where_context.why,
                # Shown on the strength of the op alone: a note, not a warning of a per-step cost.
                severity="info" if where_context.why == PROVEN_SYNC else "warning",
            )
        )
    findings.sort(key=lambda f: f.sort_key)
    return findings


def _context(report: Report, facts: FileFacts, line: int) -> Context:
    """The finding's context.

    Rules about per-step costs (``hot_path_only``) take the context of the code
    they flag: cold when the traversal saw an error path, a constructor or the
    data pipeline, else what the project index says of the line. Rules whose
    hazard matters wherever the code runs (an unpinned DataLoader built in
    ``__init__``) are not cold there, but are in code outside the program's steps
    altogether (tests, benchmarks, export tools). Unknown code needs evidence in a
    project whose steps the index found (see docs/faq.md).
    """
    context = facts.context_at(line)
    if report.cold is not None:
        # Code outside the program (a test, an export tool) says more than the rule's reason.
        if not report.rule.hot_path_only and context.kind == COLD and outside_the_program(context.why):
            return context
        return Context(COLD, report.cold)
    if not report.rule.hot_path_only and not context.is_hot:
        if context.kind == COLD and outside_the_program(context.why):
            return context
        return Context(UNKNOWN, "")  # shown wherever it is: the rule is not about per-step cost
    if context.kind == UNKNOWN:
        if context.why:  # the index says why it is unreached (a class nothing names)
            return context
        if report.named_step:
            return Context(UNKNOWN, "in a function named like a step (forward, a loss, a training step)")
        if facts.whole_project:
            return Context(UNKNOWN, PROVEN_SYNC if report.proven else UNREACHED)
    return context


def _at_call_sites(facts: FileFacts, lines: list[str], line: int, column: int, code: str) -> bool:
    """A helper's sync on its parameter, which the index reports at the helper's calls
    (positions there are CPython's: 0-based UTF-8 offsets)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return (line, len(text[:column].encode("utf-8")), code) in facts.synced_at_callers


def _with_chain(message: str, context: Context) -> str:
    """Say how the sync is reached when a call chain (not its own name) makes the code hot."""
    if context.kind != HOT or context.depth < 1:
        return message
    return f"{message}; runs every step: {context.why}"


def _nodes_to_place(reports: list[Report]) -> list[cst.CSTNode]:
    nodes = [report.node for report in reports]
    nodes += [report.silenced_with for report in reports if report.silenced_with is not None]
    nodes += [original for report in reports if report.fix for original in report.fix.replacements]
    return nodes


def _fix_record(report: Report, positions, lines: list[str], source: str) -> Fix | None:
    proposal = report.fix
    if proposal is None:
        return None
    edits = []
    # The `import torch` line `fix` adds when the file binds no torch at run time.
    insertion = import_insertion(source, proposal.imports) if proposal.imports else None
    if insertion is not None:
        edits.append(Edit(line=insertion[0], column=1, end_line=insertion[0], end_column=1, content=insertion[1]))
    for original, replacement in proposal.replacements.items():
        where = positions.get(original)
        if where is None:
            continue
        if isinstance(original, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            # Whole lines: from the start of the first to the start of the next, so the
            # indentation and any trailing comment go with the statement.
            first = lines[where.start.line - 1] if where.start.line <= len(lines) else ""
            indent = first[: len(first) - len(first.lstrip())]
            edits.append(
                Edit(
                    line=where.start.line,
                    column=1,
                    end_line=where.end.line + 1,
                    end_column=1,
                    content=textwrap.indent(render(_without_leading_lines(replacement)), indent),
                )
            )
            continue
        edits.append(
            Edit(
                line=where.start.line,
                column=where.start.column + 1,
                end_line=where.end.line,
                end_column=where.end.column + 1,
                content=render(replacement),
            )
        )
    edits.sort(key=lambda e: (e.line, e.column))
    return Fix(proposal.applicability, proposal.message, tuple(edits))


def _without_leading_lines(node):
    """The comment lines above a statement are outside its range: do not repeat them
    (for several statements replacing one, the first carries them)."""
    if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return node.with_changes(leading_lines=())
    if isinstance(node, cst.FlattenSentinel) and node.nodes:
        return cst.FlattenSentinel([_without_leading_lines(node.nodes[0]), *node.nodes[1:]])
    return node


def visible(findings: list[Finding], include_cold: bool = False) -> list[Finding]:
    """The findings to show: cold ones only when asked for (``--include-cold``)."""
    if include_cold:
        return findings
    return [finding for finding in findings if not is_hidden(finding.context, finding.why)]


def check_source(
    source: str | bytes,
    path: str = "<string>",
    settings: Settings | None = None,
    *,
    facts: FileFacts | None = None,
    include_cold: bool = False,
) -> list[Finding]:
    """Findings for one Python module's source.

    ``facts``: what the project index knows about this file (without them, the
    source is its own project); cold findings are left out unless ``include_cold``.
    """
    return visible(_check_source(source, path, settings, facts), include_cold)


def _check_source(
    source: str | bytes, path: str, settings: Settings | None, facts: FileFacts | None, skip_hidden: bool = False
) -> list[Finding]:
    try:
        text = decode_source(source) if isinstance(source, bytes) else source
        if not text.strip():
            return []
        rules = select_rules(settings, path)
        if audits_suppressions(settings, path):  # SL002: which comments silence nothing
            # None: the prefilter skipped the file, which is then not judged.
            check = lambda: None if can_skip(text, rules) else _check_text(text, path, rules)  # noqa: E731
            return audited(text, path, settings, check)
        if can_skip(text, rules):
            return []
        return _check_text(text, path, rules, facts, skip_hidden)
    except SourceError as error:
        return [_unchecked(error_finding(path, str(error), error.line, error.column), facts, path, error.old_python)]
    except RecursionError:  # nesting the parser accepted but the analysis cannot walk
        return [error_finding(path, "cannot analyse: nested too deeply (RecursionError)")]


#: How large a file over the size limit is still read to see whether any rule could report
#: on it (the limit keeps libcst off huge files; a text search and the stdlib parser are cheap).
_SEARCHED_OVER_THE_LIMIT = 16 * 1024 * 1024


def nothing_to_find(path: Path, settings: Settings | None) -> bool:
    """Whether a file over the size limit holds nothing any selected rule could report:
    valid Python in which no rule's token appears (:func:`~synclint.prefilter.can_skip`, the
    test that lets a small file skip the parse), such as Detic's 1.4 MB
    ``lvis_22k_categories.py``, a list of dicts. Its "too large to check" notice would say
    nothing: no check would have found anything in it."""
    from synclint.sources import SourceReadError, read_source

    try:
        text = decode_source(read_source(path, _SEARCHED_OVER_THE_LIMIT))
    except (SourceReadError, SourceError):
        return False
    return can_skip(text, select_rules(settings, str(path)))


def _unchecked(finding: Finding, facts: FileFacts | None, path: str, old_python: str | None = None) -> Finding:
    """The SL000 of a file synclint could not check (over the size limit, not decodable,
    not parsable). In a file that is cold as a whole by its path (a type stub, test,
    benchmark, demo or export code) every finding would be cold, so the notice that they
    were not computed is cold too: hidden like them unless ``--include-cold`` (a Python 2
    test fixture; a demo notebook's shell cell). (The index never takes a file it could not
    read for a module nothing imports: it may be a training script in an older Python's
    syntax, whose notice stays. Stubs are not indexed, so their facts may be missing: the
    path says it.) ``old_python``: why the file's syntax shows it was written for a Python
    no current PyTorch runs (``print x``; see :mod:`synclint.legacy_syntax`), which makes
    its notice cold wherever it lives: it is no part of a program that runs today."""
    file_cold = facts.file_cold if facts is not None else TYPE_STUB if is_type_stub(path) else None
    if file_cold is not None:
        return dataclasses.replace(finding, context=COLD, why=f"{file_cold}: its findings would be cold")
    if old_python is not None:
        return dataclasses.replace(finding, context=COLD, why=old_python)
    return finding


def check_file(
    path: str | Path,
    settings: Settings | None = None,
    facts: FileFacts | None = None,
    include_cold: bool = False,
    skip_hidden: bool = False,
) -> list[Finding]:
    """Findings for one Python file (cold ones only with ``include_cold``);
    unreadable or unparsable files yield one SL000 entry. ``skip_hidden``: leave out
    of the analysis the functions whose findings would all be hidden (a default run's
    results, not ``--include-cold``'s)."""
    from synclint.sources import DEFAULT_MAX_FILE_SIZE, SourceReadError, SourceTooLarge, message_of, read_source

    path = Path(path)
    settings = settings.settings_for(path) if settings is not None else None
    try:
        data = read_source(path, settings.max_file_size if settings is not None else DEFAULT_MAX_FILE_SIZE)
    except SourceTooLarge as error:
        if nothing_to_find(path, settings):
            return []
        return visible([_unchecked(error_finding(str(path), message_of(error)), facts, str(path))], include_cold)
    except SourceReadError as error:  # unreadable, or not a regular file
        return [error_finding(str(path), message_of(error))]
    if not data.strip():
        return []
    return visible(_check_source(data, str(path), settings, facts, skip_hidden), include_cold)
