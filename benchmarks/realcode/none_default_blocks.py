"""How judges rated findings inside a parameter's ``None`` fallback (session 28).

``if mask is None: mask = torch.ones(...).to(device)`` runs only when a caller leaves the
argument out. Such findings stay hot (see docs/faq.md, "a local default such as ``if mask
is None: mask = ...`` stays hot"); this script counts, per rule, the judged rows of
``heldout.jsonl`` and ``precision.jsonl`` whose line lies in the body of ``if P is None:``
(or the ``else`` of ``if P is not None:``) with ``P`` a parameter of the enclosing function,
TRUE against FALSE, from extracted trees (as ``measure.py`` extracts them):

    python benchmarks/realcode/none_default_blocks.py SRC [--work DIR]
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import tree_for  # noqa: E402


def none_fallback_parameter(tree: ast.AST, line: int) -> str | None:
    """The parameter whose ``is None`` fallback block holds ``line``, or None."""
    found = None

    def visit(node: ast.AST, parameters: set[str]) -> None:
        nonlocal found
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            parameters = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
                    and test.left.id in parameters and isinstance(test.comparators[0], ast.Constant)
                    and test.comparators[0].value is None):
                body = node.body if isinstance(test.ops[0], ast.Is) else node.orelse if isinstance(test.ops[0], ast.IsNot) else []
                if body and body[0].lineno <= line <= (body[-1].end_lineno or body[-1].lineno):
                    found = test.left.id
        for child in ast.iter_child_nodes(node):
            visit(child, parameters)

    visit(tree, set())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="folder of fetched mirrors or extracted trees")
    parser.add_argument("--work", type=Path, default=Path("/tmp/realcode/trees"))
    args = parser.parse_args()
    rows = [json.loads(line) for name in ("heldout.jsonl", "precision.jsonl")
            for line in (HERE / name).read_text().splitlines() if line.strip()]
    tally: collections.Counter = collections.Counter()
    parsed: dict[Path, ast.AST | None] = {}
    for row in rows:
        if not row["path"].endswith(".py"):
            continue
        work = args.work / "heldout" if "set" in row else args.work
        try:
            root = tree_for(args.src, work, row["repo"], row["commit"])
        except Exception:  # noqa: BLE001  (no mirror of that repository)
            tally["no tree"] += 1
            continue
        path = root / row["path"]
        if path not in parsed:
            try:
                parsed[path] = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                parsed[path] = None
        if parsed[path] is not None and none_fallback_parameter(parsed[path], row["line"]):
            tally[(row["rule"], row["verdict"])] += 1
    for rule in sorted({key[0] for key in tally if isinstance(key, tuple)}):
        print(f"{rule}: {tally[(rule, 'TRUE')]} TRUE, {tally[(rule, 'FALSE')]} FALSE in a None fallback")
    if tally["no tree"]:
        print(f"({tally['no tree']} rows without a tree)")


if __name__ == "__main__":
    main()
