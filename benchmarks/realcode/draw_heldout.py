"""Draw a blind held-out sample for judging, as sessions 9-17 did.

For each codebase (fetched, never used before: not in codebases.json, recall.jsonl or
heldout.json), run the default check and draw ``random.Random(SEED).sample`` of
``--per-codebase`` findings (all of them when fewer), in the check's output order. The
result is a JSON-lines file of findings for judges who did not write the analysis; each
row names the extracted tree to read. Judges follow ``judge_brief.md`` and write one
verdict per row; the rows then go to ``heldout.jsonl`` and the set to ``heldout.json``
(``drawn_at``: the synclint commit that drew it).

    python benchmarks/realcode/draw_heldout.py SRC --synclint SNAPSHOT \\
        --codebases fresh.json --out draw.jsonl [--work DIR] [--per-codebase 10] [--seed 10]

``fresh.json``: a JSON list of {"repo": "owner/name", "commit": "<40 hex>"} (other keys
are ignored; entries with "spare": true are skipped). SRC and --work are as for
``measure.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import run_synclint, tree_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="folder of fetched mirrors or extracted trees")
    parser.add_argument("--synclint", required=True, help="synclint checkout put first on PYTHONPATH")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--codebases", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/realcode/trees"))
    parser.add_argument("--per-codebase", type=int, default=10)
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for codebase in json.loads(args.codebases.read_text()):
        if codebase.get("spare"):
            continue
        root = tree_for(args.src, args.work / "heldout", codebase["repo"], codebase["commit"])
        findings = run_synclint(args.python, str(Path(args.synclint).resolve()), root, ["."])
        drawn = random.Random(args.seed).sample(findings, min(args.per_codebase, len(findings)))
        print(f"{codebase['repo']}: {len(findings)} findings, drew {len(drawn)}", flush=True)
        rows += [
            {"repo": codebase["repo"], "commit": codebase["commit"], "tree": str(root), "path": f["path"],
             "line": f["line"], "column": f["column"], "rule": f["code"], "context": f.get("context"),
             "why": f.get("why"), "message": f["message"]}
            for f in drawn
        ]
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} findings drawn into {args.out}")


if __name__ == "__main__":
    main()
