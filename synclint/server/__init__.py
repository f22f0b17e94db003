"""``synclint server``: a Language Server (LSP over stdio) built on pygls.

Diagnostics on open, change and save; quick fixes for each finding with a fix
(safe ones preferred, unsafe ones labelled), ``source.fixAll.synclint`` (what
``synclint check --fix`` writes), a comment that silences one finding, and the
rule's documentation on hover. Each document is checked with the settings of
the closest config above it. Never imports torch.
"""

from __future__ import annotations


def serve() -> None:
    from synclint.server.app import create_server

    create_server().start_io()
