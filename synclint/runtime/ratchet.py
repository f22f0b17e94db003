"""The per-site sync budget: a ratchet file for CI (``synclint run --write-budget/--budget``).

A site is a (file, function, rule code): robust to lines moving as code is
edited above it. Counts may only go down: a new site, or more syncs at a known
one, fails the run with a diff; fewer is reported as room to tighten.
Allowed syncs (``--allow``, ``synclint.allow()``) and module moves at setup
(``model.to(device)``) are not counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from synclint.runtime.events import SyncSite
from synclint.runtime.frames import display_path

BUDGET_VERSION = 1
Key = tuple[str, str, str]


def site_counts(sites: Sequence[SyncSite], root: str | None = None) -> dict[Key, dict[str, Any]]:
    """``(path, function, code) -> {"count", "lines"}`` over the counted sites."""
    counts: dict[Key, dict[str, Any]] = {}
    for site in sites:
        if site.allowed or site.setup:
            continue
        key = (display_path(site.path, root).replace(os.sep, "/"), site.function, site.code)
        entry = counts.setdefault(key, {"count": 0, "lines": set()})
        entry["count"] += site.count
        entry["lines"].add(site.line)
    return counts


def write_budget(path: str, sites: Sequence[SyncSite]) -> None:
    counts = site_counts(sites)
    document = {
        "version": BUDGET_VERSION,
        "sites": [
            {"path": p, "function": f, "code": c, "count": v["count"], "lines": sorted(v["lines"])}
            for (p, f, c), v in sorted(counts.items())
        ],
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")


def read_budget(path: str) -> dict[Key, int]:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    if not isinstance(document, dict) or document.get("version") != BUDGET_VERSION:
        raise ValueError(f"{path}: not a synclint sync budget (version {BUDGET_VERSION})")
    return {(s["path"], s["function"], s["code"]): int(s["count"]) for s in document["sites"]}


def check_budget(path: str, sites: Sequence[SyncSite]) -> list[str]:
    """Diff lines for every site over budget (``+`` new, ``>`` more); empty when within."""
    budget = read_budget(path)
    failures = []
    for key, value in sorted(site_counts(sites).items()):
        lines = ",".join(str(line) for line in sorted(value["lines"]))
        where = f"{key[0]}:{lines} {key[1]}() {key[2]}"
        allowed = budget.get(key)
        if allowed is None:
            failures.append(f"+ {where}: {value['count']} syncs (new site)")
        elif value["count"] > allowed:
            failures.append(f"> {where}: {value['count']} syncs, budget {allowed}")
    return failures


def improvements(path: str, sites: Sequence[SyncSite]) -> list[str]:
    budget = read_budget(path)
    counts = site_counts(sites)
    lines = []
    for key, allowed in sorted(budget.items()):
        now = counts.get(key, {"count": 0})["count"]
        if now < allowed:
            lines.append(f"- {key[0]} {key[1]}() {key[2]}: {now} syncs, budget {allowed}")
    return lines


def render_budget_check(path: str, failures: Sequence[str]) -> str:
    if not failures:
        return f"synclint: within the sync budget ({path})"
    return "\n".join(
        [f"synclint: sync budget exceeded ({path}); counts may only go down:"]
        + [f"  {line}" for line in failures]
    )
