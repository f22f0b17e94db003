"""The Language Server: documents in, diagnostics, code actions and hovers out."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from synclint import __version__
from synclint.config import ConfigError, Settings, load_settings
from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.server.convert import (
    SOURCE,
    contains,
    finding_range,
    overlaps,
    to_diagnostic,
    to_text_edits,
    whole_text_edit,
)
from synclint.suppression import UNUSED_SUPPRESSION_CODE

FIX_ALL_KIND = f"{lsp.CodeActionKind.SourceFixAll.value}.{SOURCE}"

log = logging.getLogger(__name__)


class SynclintServer(LanguageServer):
    #: Seconds of quiet after an edit before the document is checked again: a burst of
    #: keystrokes costs one check, not one per key (a 2,000-line file takes seconds).
    change_delay = 0.25

    def __init__(self) -> None:
        # Full sync: pygls applies incremental edits by ``str.splitlines`` lines, which differ from
        # LSP's lines in files with form feeds (common in older Python); full text cannot drift.
        super().__init__("synclint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        #: uri -> (document version, findings): what code actions and hovers answer from.
        self.results: dict[str, tuple[int | None, list[Finding]]] = {}
        #: uri -> the pending (debounced) check of that document.
        self.pending: dict[str, asyncio.Task] = {}
        #: config files whose error was already shown (shown once, not on every keystroke).
        self.reported_config_errors: set[str] = set()
        # All analysis runs in this one thread: the event loop stays free to take the next
        # edit, and the engine (which is not written for concurrent use) never runs twice at once.
        self.engine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synclint-engine")

    # -- checking ----------------------------------------------------------------------------

    def settings_for(self, document: TextDocument) -> Settings | None:
        """The settings of the closest config above the document; None (not checked) when
        the document is excluded, defaults with an error message when the config is broken."""
        path = Path(document.path)
        try:
            settings = load_settings(None, path.parent if path.parent.is_dir() else Path.cwd())
        except ConfigError as error:
            if str(error) not in self.reported_config_errors:
                self.reported_config_errors.add(str(error))
                self.window_show_message(
                    lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"synclint: {error}")
                )
            return Settings(root=path.parent)
        if settings.is_excluded(path):
            return None
        return settings

    async def in_engine(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self.engine, function, *args)

    async def check(self, uri: str) -> list[Finding] | None:
        """Check the document as it is now and publish the result; None, and nothing
        published, when it changed meanwhile (the check scheduled by that change publishes)."""
        document = self.workspace.get_text_document(uri)
        version, source = document.version, document.source
        settings = self.settings_for(document)
        findings = [] if settings is None else await self.in_engine(_check_text, source, document.path, settings)
        if document.version != version or uri not in self.workspace.text_documents:
            return None  # stale: never publish positions for text the editor no longer shows
        self.results[uri] = (version, findings)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri,
                version=version,
                diagnostics=[to_diagnostic(document, finding) for finding in findings],
            )
        )
        return findings

    def check_soon(self, uri: str, delay: float = 0.0) -> None:
        """(Re)schedule the check of ``uri``: a newer request replaces a pending one."""
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()

        async def later() -> None:
            if delay:
                await asyncio.sleep(delay)
            try:
                await self.check(uri)
            finally:
                if self.pending.get(uri) is task:
                    del self.pending[uri]

        task = asyncio.get_running_loop().create_task(later())
        self.pending[uri] = task

    async def findings(self, uri: str) -> list[Finding]:
        """The findings of the document's current version (checked now if not yet)."""
        document = self.workspace.get_text_document(uri)
        for _ in range(3):  # an edit may land during the check: try the newer text
            version, findings = self.results.get(uri, (None, None))
            if findings is not None and version == document.version:
                return findings
            findings = await self.check(uri)
            if findings is not None:
                return findings
        return []  # still being edited: nothing reliable to offer yet


def create_server() -> SynclintServer:
    server = SynclintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: SynclintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: SynclintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri, ls.change_delay)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: SynclintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.check_soon(params.text_document.uri)  # a config may have changed meanwhile

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: SynclintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = ls.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.results.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: SynclintServer, params: lsp.DidChangeConfigurationParams) -> None:
        for uri in list(ls.results):
            ls.check_soon(uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
            resolve_provider=False,
        ),
    )
    async def code_action(ls: SynclintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        findings = await ls.findings(uri)
        wanted = params.context.only
        actions: list[lsp.CodeAction] = []
        if not wanted or any(kind.startswith(lsp.CodeActionKind.QuickFix) for kind in wanted):
            for finding in findings:
                where = finding_range(document, finding)
                if overlaps(where, params.range):
                    actions.extend(_quick_fixes(document, finding))
        if not wanted or any(FIX_ALL_KIND.startswith(kind) for kind in wanted):
            fix_all = await _fix_all(ls, document, findings)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: SynclintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        for finding in await ls.findings(params.text_document.uri):
            where = finding_range(document, finding)
            if contains(where, params.position):
                return lsp.Hover(
                    contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=_docs(finding)),
                    range=where,
                )
        return None

    return server


def _check_text(source: str, path: str, settings: Settings) -> list[Finding]:
    """The document's findings; a bug in synclint becomes one SL000 diagnostic, as in
    ``synclint check``, instead of a silent handler error and stale diagnostics."""
    from synclint.engine import check_source
    from synclint.finding import error_finding

    try:
        return check_source(source, path, settings)
    except Exception as error:
        log.exception("checking %s failed", path)
        return [error_finding(path, f"internal error while checking: {type(error).__name__}: {error}")]


def _quick_fixes(document: TextDocument, finding: Finding) -> list[lsp.CodeAction]:
    actions = []
    diagnostic = to_diagnostic(document, finding)
    if finding.fix is not None and finding.fix.edits:
        unsafe = finding.fix.applicability == "unsafe"
        actions.append(
            lsp.CodeAction(
                title=f"synclint ({finding.code}): {finding.fix.message}" + (" (unsafe fix)" if unsafe else ""),
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=not unsafe,
                edit=lsp.WorkspaceEdit(changes={document.uri: to_text_edits(document, finding.fix.edits)}),
            )
        )
    if finding.code not in (PARSE_ERROR_CODE, UNUSED_SUPPRESSION_CODE) and finding.cell is None:
        from synclint.suppression import add_directives

        silenced, added, _ = add_directives(document.source, [(finding.line, finding.end_line, finding.code)])
        if added:
            actions.append(
                lsp.CodeAction(
                    title=f"synclint: silence {finding.code} on this line",
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=lsp.WorkspaceEdit(changes={document.uri: [whole_text_edit(document, silenced)]}),
                )
            )
    return actions


async def _fix_all(ls: SynclintServer, document: TextDocument, findings: list[Finding]) -> lsp.CodeAction | None:
    """``source.fixAll.synclint``: the safe fixes, exactly what ``synclint check --fix`` writes."""
    if not any(f.fix is not None and f.fix.applicability == "safe" for f in findings):
        return None
    from synclint.engine import SourceError
    from synclint.fixers.apply import fix_text

    settings = ls.settings_for(document)
    if settings is None:
        return None
    source = document.source
    try:
        fixed, applied = await ls.in_engine(fix_text, source, document.path, settings, False)
    except SourceError:
        return None
    if document.source != source:  # edited meanwhile: the editor asks again
        return None
    if not applied or fixed == source:
        return None
    return lsp.CodeAction(
        title="synclint: fix all safely fixable hazards",
        kind=FIX_ALL_KIND,
        edit=lsp.WorkspaceEdit(changes={document.uri: [whole_text_edit(document, fixed)]}),
    )


def _docs(finding: Finding) -> str:
    from synclint.rules import RULES_BY_CODE

    from synclint.suppression import UNUSED_SUPPRESSION_DOCS

    if finding.code == UNUSED_SUPPRESSION_CODE:
        return f"# {finding.name} ({finding.code})\n\n{UNUSED_SUPPRESSION_DOCS}"
    rule = RULES_BY_CODE.get(finding.code)
    if rule is None:
        return f"**{finding.code}** {finding.name}\n\n{finding.message}"
    return f"# {rule.name} ({rule.code})\n\n{rule.documentation()}"
