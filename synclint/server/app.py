"""The Language Server: documents in, diagnostics, code actions and hovers out."""

from __future__ import annotations

import logging
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
    def __init__(self) -> None:
        super().__init__("synclint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        #: uri -> (document version, findings): what code actions and hovers answer from.
        self.results: dict[str, tuple[int | None, list[Finding]]] = {}
        #: config files whose error was already shown (shown once, not on every keystroke).
        self.reported_config_errors: set[str] = set()

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

    def check(self, uri: str) -> list[Finding]:
        from synclint.engine import check_source

        document = self.workspace.get_text_document(uri)
        settings = self.settings_for(document)
        findings = [] if settings is None else check_source(document.source, document.path, settings)
        self.results[uri] = (document.version, findings)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri,
                version=document.version,
                diagnostics=[to_diagnostic(document, finding) for finding in findings],
            )
        )
        return findings

    def findings(self, uri: str) -> list[Finding]:
        document = self.workspace.get_text_document(uri)
        version, findings = self.results.get(uri, (None, None))
        if findings is None or version != document.version:
            findings = self.check(uri)
        return findings


def create_server() -> SynclintServer:
    server = SynclintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SynclintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SynclintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: SynclintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.check(params.text_document.uri)  # a config may have changed meanwhile

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SynclintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.results.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: SynclintServer, params: lsp.DidChangeConfigurationParams) -> None:
        for uri in list(ls.results):
            ls.check(uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
            resolve_provider=False,
        ),
    )
    def code_action(ls: SynclintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        findings = ls.findings(uri)
        wanted = params.context.only
        actions: list[lsp.CodeAction] = []
        if not wanted or any(kind.startswith(lsp.CodeActionKind.QuickFix) for kind in wanted):
            for finding in findings:
                where = finding_range(document, finding)
                if overlaps(where, params.range):
                    actions.extend(_quick_fixes(document, finding))
        if not wanted or any(FIX_ALL_KIND.startswith(kind) for kind in wanted):
            fix_all = _fix_all(ls, document, findings)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: SynclintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        for finding in ls.findings(params.text_document.uri):
            where = finding_range(document, finding)
            if contains(where, params.position):
                return lsp.Hover(
                    contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=_docs(finding)),
                    range=where,
                )
        return None

    return server


def _diagnostic_for(document: TextDocument, finding: Finding) -> lsp.Diagnostic:
    return to_diagnostic(document, finding)


def _quick_fixes(document: TextDocument, finding: Finding) -> list[lsp.CodeAction]:
    actions = []
    diagnostic = _diagnostic_for(document, finding)
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


def _fix_all(ls: SynclintServer, document: TextDocument, findings: list[Finding]) -> lsp.CodeAction | None:
    """``source.fixAll.synclint``: the safe fixes, exactly what ``synclint check --fix`` writes."""
    if not any(f.fix is not None and f.fix.applicability == "safe" for f in findings):
        return None
    from synclint.engine import SourceError
    from synclint.fixers.apply import fix_text

    settings = ls.settings_for(document)
    if settings is None:
        return None
    try:
        fixed, applied = fix_text(document.source, document.path, settings, unsafe=False)
    except SourceError:
        return None
    if not applied or fixed == document.source:
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
