"""The project index: per-file summaries, the call graph, hotness and residency across files.

Below the analysis and the rules: it reads sources and produces
:class:`~synclint.project.facts.FileFacts`, which the engine hands to the
analysis of each file. It imports nothing from the analysis, rules, engine,
fixers, reporters or the notebook module.
"""

from synclint.project.facts import FileFacts
from synclint.project.hotness import AT_CALL_SITES, COLD, HOT, PROVEN_SYNC, TYPE_STUB, UNKNOWN, UNREACHED, Context, is_hidden, is_type_stub, outside_the_program
from synclint.project.store import facts_for_files, facts_for_source, resolved_key

__all__ = ["AT_CALL_SITES", "COLD", "HOT", "PROVEN_SYNC", "TYPE_STUB", "UNKNOWN", "UNREACHED", "Context", "is_hidden", "is_type_stub", "outside_the_program", "FileFacts", "facts_for_files", "facts_for_source", "resolved_key"]
