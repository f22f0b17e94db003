"""The JSON report, the terminal table, and per-rank file names."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from synclint.runtime.events import SyncSite
from synclint.runtime.frames import display_path
from synclint.runtime.join import JoinRow


def rank_from_env(environ: dict[str, str] | None = None) -> int | None:
    """The process rank under ``torchrun`` (``RANK`` with ``WORLD_SIZE``), else None."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    try:
        return int(env["RANK"])
    except ValueError:
        return None


def ranked_path(path: str, rank: int | None) -> str:
    """``report.json`` -> ``report.rank3.json`` so that ranks never overwrite each other."""
    if rank is None:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext}"


def build_report(
    device: str, sites: Sequence[SyncSite], join_rows: Sequence[JoinRow], rank: int | None
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "device": device,
        "events": [site.to_json() for site in sites],
        "join": [row.to_json() for row in join_rows],
    }
    if rank is not None:
        report["rank"] = rank
    return report


def write_report(path: str, report: dict[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")


def render_table(
    device: str,
    sites: Sequence[SyncSite],
    join_rows: Sequence[JoinRow],
    rank: int | None,
    root: str | None = None,
) -> str:
    """The human summary ``synclint run`` prints after the program ends."""
    who = f"rank {rank}, " if rank is not None else ""
    lines: list[str] = []
    if not sites:
        lines.append(f"synclint: no syncs observed ({who}device: {device})")
    else:
        total = sum(site.count for site in sites)
        lines.append(
            f"synclint: {total} syncs at {len(sites)} sites ({who}device: {device})"
        )
        header = ["location", "function", "op", "code", "count"]
        with_time = device == "cuda"
        if with_time:
            header.append("blocked ms")
        rows = [header]
        for site in sorted(sites, key=lambda s: (-s.blocked_ms, -s.count, s.path, s.line)):
            row = [
                f"{display_path(site.path, root)}:{site.line}",
                site.function,
                site.op,
                site.code,
                str(site.count),
            ]
            if with_time:
                row.append(f"{site.blocked_ms:.3f}")
            rows.append(row)
        lines.extend(_columns(rows, right_aligned={4, 5}))
    if join_rows:
        counts = {status: 0 for status in ("confirmed", "static-only", "runtime-only")}
        for row in join_rows:
            counts[row.status] += 1
        lines.append(
            "synclint: join with static findings: "
            + ", ".join(f"{n} {status}" for status, n in counts.items())
        )
        lines.extend(
            _columns(
                [[row.status, f"{display_path(row.path, root)}:{row.line}", row.code] for row in join_rows]
            )
        )
    return "\n".join(lines)


def _columns(rows: list[list[str]], right_aligned: set[int] = frozenset()) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  "
        + "  ".join(
            cell.rjust(width) if i in right_aligned else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]
