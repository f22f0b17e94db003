"""The rule codes, as plain data: the CLI validates selectors without importing
the rules (and libcst), so a fully cached run never loads the parser."""

from __future__ import annotations

RULE_CODES: tuple[str, ...] = (
    "SL101", "SL102", "SL103", "SL104", "SL105", "SL201", "SL202",
    "SL301", "SL302", "SL401", "SL402", "SL403", "SL404", "SL501",
)


#: Codes that are not sync-hazard rules: SL002 reports unused suppression comments.
OTHER_CODES: tuple[str, ...] = ("SL002",)


def is_known_selector(selector: str) -> bool:
    """``ALL`` or a prefix of some rule code (``SL1``, ``SL103``, ``SL002``)."""
    return selector == "ALL" or any(code.startswith(selector) for code in RULE_CODES + OTHER_CODES)
