"""Re-measure synclint's recall and precision on real public code.

Nothing third-party lives in this folder: only data about it (repository,
commit, path, line, rule, verdict, reason) and this script, which rebuilds the
figures from fetched copies.

Inputs (all in this folder):
  recall.jsonl       one record per (sync-removal commit, file): the parent
                     commit and the parent's line numbers of the removed syncs.
  codebases.json     the public codebases (pinned commit + sub-folder) whose
                     findings are sampled for precision, and the sample seed.
  precision.jsonl    judged findings, keyed by repo/commit/path/line/rule.
  torch_sample.jsonl judged findings on the installed torch package.
  heldout.json       held-out sets: codebases never used to tune the analysis
                     when their sample was drawn (each set says which synclint
                     commit drew it, and whether later changes were tuned on it).
  heldout.jsonl      the held-out sets' judged findings (one per sampled finding).

SRC holds the fetched repositories as the `fetch` tool lays them out
(`SRC/<owner>+<name>/repo`, a bare git dir), or already extracted trees
(`SRC/<owner>+<name>@<commit>/`).  Trees are extracted (Python, config,
script and documentation files: SOURCE_SUFFIXES) under --work and reused; a
tree extracted with other suffixes is extracted again.

Usage:
  python benchmarks/realcode/measure.py SRC --synclint PATH [--python PY]
      [--work DIR] [--only recall,precision,torch,heldout] [--json OUT]
      [--dump-unjudged OUT] [--skip-missing]

--synclint is the directory put first on PYTHONPATH (a synclint checkout); the
checker runs as `PY -m synclint check ... --output-format json`.
"""

from __future__ import annotations

import argparse
import hashlib
import ast
import collections
import json
import math
import os
import random
import subprocess
import sys
import tarfile
import io
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIVE_PATHSPECS = ["*.py", "*.pyi", "*.toml", "*.cfg", "*.ini"]


# ----------------------------------------------------------------- sources


#: Python files, and the files synclint reads as a clone holds them: settings, and the
#: configuration files, scripts and pages that may name a class (a class nothing names
#: cannot run: synclint.project.layout.NAMING_SUFFIXES). Not notebooks, which synclint
#: checks too: a set that checks them says so (``extra_suffixes``).
SOURCE_SUFFIXES = (".py", ".pyi", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".sh", ".md", ".rst")


def tree_for(src: Path, work: Path, repo: str, commit: str, suffixes: tuple[str, ...] = SOURCE_SUFFIXES) -> Path:
    """An extracted tree of repo@commit (files of ``SOURCE_SUFFIXES`` only, or ``suffixes``),
    with an empty ``.git`` directory at its top, as a clone has: synclint finds a project's
    root from markers such as ``.git``, and without one a folder of scripts that is not a
    package (``demo/``, ``tools/``) would be indexed as a project of its own."""
    slug = repo.replace("/", "+")
    ready = src / f"{slug}@{commit}"
    if ready.is_dir():
        return ready
    dest = work / f"{slug}@{commit[:12]}"
    marker = f"{commit} {' '.join(suffixes)}"  # a tree extracted with other suffixes is extracted again
    if (dest / ".extracted").exists() and (dest / ".extracted").read_text() == marker:
        (dest / ".git").mkdir(exist_ok=True)
        return dest
    git_dir = src / slug / "repo"
    if not git_dir.is_dir():
        git_dir = src / slug
    if (git_dir / ".git").is_dir():  # a clone with a work tree (the fetch tool's answer for some repositories)
        git_dir = git_dir / ".git"
    dest.mkdir(parents=True, exist_ok=True)
    # Large blobs can be missing from a mirror; list the wanted paths first and
    # archive only those whose objects exist.
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--format=%(objectname) %(path)", commit],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    entries = [line.split(" ", 1) for line in listing if line.split(" ", 1)[1].endswith(suffixes)]
    # ``cat-file --batch-check`` answers "<object> missing" for a blob the mirror lacks.
    checked = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
        input="".join(f"{obj}\n" for obj, _path in entries), check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    wanted = [path for (obj, path), answer in zip(entries, checked) if not answer.endswith(" missing")]
    for start in range(0, len(wanted), 2000):
        chunk = wanted[start : start + 2000]
        proc = subprocess.run(
            ["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit, "--", *chunk],
            capture_output=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"git archive failed for {repo}@{commit}: {proc.stderr.decode()[:500]}")
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            tar.extractall(dest, filter="data")
    (dest / ".git").mkdir(exist_ok=True)
    (dest / ".extracted").write_text(marker)
    return dest


def run_synclint(py: str, synclint_dir: str, cwd: Path, targets: list[str]) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=synclint_dir)
    # -P: the tree's own top-level modules (torch has `signal/`) must not
    # shadow the standard library for the checker's interpreter.
    cmd = [py, "-P", "-m", "synclint", "check", *targets, "--output-format", "json",
           "--exit-zero", "--no-cache", "-j", "1"]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise SystemExit(f"synclint gave no JSON in {cwd}: {proc.stderr[-2000:]}") from exc
    for f in findings:
        f["path"] = os.path.normpath(f["path"])
    return findings


def synclint_version(py: str, synclint_dir: str) -> str:
    env = dict(os.environ, PYTHONPATH=synclint_dir)
    where = subprocess.run([py, "-P", "-c", "import synclint;print(synclint.__file__)"],
                           env=env, capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", synclint_dir, "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", synclint_dir, "status", "--porcelain", "--", "synclint"],
                           capture_output=True, text=True).stdout.strip()
    return f"{where} @ {head}{' (+uncommitted changes under synclint/)' if dirty else ''}"


# ----------------------------------------------------------------- recall


def statement_span(source: str, line: int) -> tuple[int, int]:
    """Lines of the innermost statement containing `line` (a compound
    statement's header only), or (line, line) when none does."""
    best = (line, line)
    best_size = math.inf
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt):
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.AST):
            end = max(start, body[0].lineno - 1)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
                start = node.decorator_list[0].lineno
        if start <= line <= end and end - start < best_size:
            best, best_size = (start, end), end - start
    return best


def measure_recall(args, py, synclint_dir) -> dict:
    records = [json.loads(l) for l in (HERE / "recall.jsonl").read_text().splitlines() if l.strip()]
    by_tree = collections.defaultdict(list)
    for rec in records:
        by_tree[(rec["repo"], rec["parent"])].append(rec)
    rows = []
    for (repo, parent), recs in sorted(by_tree.items()):
        root = tree_for(args.src, args.work, repo, parent)
        paths = sorted({r["path"] for r in recs})
        findings = run_synclint(py, synclint_dir, root, paths)
        by_path = collections.defaultdict(list)
        for f in findings:
            by_path[f["path"]].append(f)
        for rec in recs:
            source = (root / rec["path"]).read_text(encoding="utf-8", errors="replace")
            for line in rec["lines"]:
                start, end = statement_span(source, line)
                hits = sorted({f["code"] for f in by_path[os.path.normpath(rec["path"])] if start <= f["line"] <= end})
                rows.append(dict(repo=repo, commit=rec["fix_commit"], parent=parent, path=rec["path"],
                                 line=line, found=bool(hits), rules=hits, reason=rec["reason"],
                                 text=source.splitlines()[line - 1].strip()))
    found = sum(r["found"] for r in rows)
    return dict(lines=len(rows), found=found, recall=found / len(rows) if rows else 0.0,
                commits=len({r["commit"] for r in rows}), repos=len({r["repo"] for r in rows}),
                missed=[r for r in rows if not r["found"]], rows=rows)


# ----------------------------------------------------------------- precision


def key(repo, commit, path, line, rule):
    return (repo, commit, os.path.normpath(path), int(line), rule)


def load_verdicts(name: str) -> dict:
    verdicts = {}
    path = HERE / name
    if path.exists():
        for l in path.read_text().splitlines():
            if l.strip():
                v = json.loads(l)
                verdicts[key(v["repo"], v["commit"], v["path"], v["line"], v["rule"])] = v
    return verdicts


def draw_sample(pools: dict[str, list], target: int, seed: int) -> list:
    """Stratified random sample: an equal quota per codebase (all of a small
    one), the rest of the target filled from what is left.

    Each finding's rank is a hash of the seed and its verdict key, so the draw
    is a uniform random sample that stays put when other findings come or go:
    a finding sampled from one synclint version is sampled from the next one
    too, and its verdict carries over."""
    def rank(f):
        text = f"{seed}|{f['repo']}|{os.path.normpath(f['path'])}|{f['line']}|{f['code']}"
        return hashlib.sha256(text.encode()).hexdigest()

    quota = math.ceil(target / max(1, len(pools)))
    chosen, left = [], []
    for name in sorted(pools):
        unique = {}
        for f in pools[name]:
            unique.setdefault(key(f["repo"], f["commit"], f["path"], f["line"], f["code"]), f)
        ranked = sorted(unique.values(), key=rank)
        chosen += ranked[:quota]
        left += ranked[quota:]
    chosen += sorted(left, key=rank)[: max(0, target - len(chosen))]
    return chosen


def summarise(sample: list, verdicts: dict) -> dict:
    per_rule = collections.defaultdict(lambda: [0, 0])
    true = judged = 0
    unjudged = []
    for f in sample:
        v = verdicts.get(key(f["repo"], f["commit"], f["path"], f["line"], f["code"]))
        if v is None:
            unjudged.append(f)
            continue
        judged += 1
        ok = v["verdict"] == "TRUE"
        true += ok
        per_rule[f["code"]][0] += ok
        per_rule[f["code"]][1] += 1
    return dict(sampled=len(sample), judged=judged, true=true,
                precision=true / judged if judged else 0.0,
                per_rule={r: dict(true=t, judged=n, precision=t / n) for r, (t, n) in sorted(per_rule.items())},
                unjudged=unjudged)


def measure_precision(args, py, synclint_dir) -> dict:
    config = json.loads((HERE / "codebases.json").read_text())
    pools, counts = {}, {}
    stored = args.previous.get("precision", {}).get("findings") if args.previous else None
    for cb in config["codebases"]:
        if stored is not None:
            findings = [f for f in stored if f["repo"] == cb["repo"]]
        else:
            root = tree_for(args.src, args.work, cb["repo"], cb["commit"])
            findings = run_synclint(py, synclint_dir, root, cb["paths"])
            for f in findings:
                f.update(repo=cb["repo"], commit=cb["commit"])
        pools[cb["repo"]] = findings
        counts[cb["repo"]] = len(findings)
    sample = draw_sample(pools, config["sample_size"], config["seed"])
    result = summarise(sample, load_verdicts("precision.jsonl"))
    result.update(seed=config["seed"], findings_per_codebase=counts,
                  findings=[f for repo in sorted(pools) for f in pools[repo]],
                  sample_per_codebase=dict(collections.Counter(f["repo"] for f in sample)),
                  per_codebase={})
    verdicts = load_verdicts("precision.jsonl")
    for repo in sorted(pools):
        sub = summarise([f for f in sample if f["repo"] == repo], verdicts)
        result["per_codebase"][repo] = dict(judged=sub["judged"], true=sub["true"])
    return result


def measure_torch(args, py, synclint_dir) -> dict:
    config = json.loads((HERE / "codebases.json").read_text())["torch"]
    torch_dir = args.torch_dir or subprocess.run(
        [py, "-c", "import torch,os;print(os.path.dirname(torch.__file__))"],
        capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run([py, "-c", "import torch;print(torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # A copy of the package's Python files outside site-packages (which the
    # default excludes skip), checked as `torch/` from its parent folder.
    copy_root = args.work / f"torch-{version}"
    if not (copy_root / ".extracted").exists():
        for src in Path(torch_dir).rglob("*.py"):
            dest = copy_root / "torch" / src.relative_to(torch_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
        (copy_root / ".extracted").write_text(version)
    stored = args.previous.get("torch", {}).get("all_findings") if args.previous else None
    if stored is not None:
        findings = stored
    else:
        findings = run_synclint(py, synclint_dir, copy_root, ["torch"])
        for f in findings:
            f.update(repo="torch", commit=version)
    sample = draw_sample({"torch": findings}, config["sample_size"], config["seed"])
    result = summarise(sample, load_verdicts("torch_sample.jsonl"))
    result.update(findings=len(findings), all_findings=findings, version=version, seed=config["seed"],
                  per_rule_count=dict(collections.Counter(f["code"] for f in findings)))
    return result


def measure_heldout(args, py, synclint_dir) -> dict:
    """Each held-out set's judged findings against what synclint reports now: the judged
    ones still reported (TRUE/FALSE), the ones gone, and how many findings there are.
    Precision now = TRUE / judged among those still reported (findings that appeared
    since the draw are not judged: re-draw a new set to measure them)."""
    config = json.loads((HERE / "heldout.json").read_text())
    verdicts = collections.defaultdict(list)
    for line in (HERE / "heldout.jsonl").read_text().splitlines():
        if line.strip():
            v = json.loads(line)
            verdicts[v["set"]].append(v)
    stored = args.previous.get("heldout", {}) if args.previous else {}
    result = {}
    for hs in config["sets"]:
        current, counts, missing = set(), {}, set()
        for cb in hs["codebases"]:
            prior = stored.get(hs["name"], {}).get("findings", {}).get(cb["repo"])
            if prior is not None:
                findings = prior
            elif args.skip_missing and not _fetched(args.src, cb["repo"], cb["commit"]):
                missing.add(cb["repo"])  # (its judged findings are left out of the tallies below)
                continue
            else:
                root = tree_for(args.src, args.work / "heldout", cb["repo"], cb["commit"],
                                SOURCE_SUFFIXES + tuple(hs.get("extra_suffixes", ())))
                findings = run_synclint(py, synclint_dir, root, cb["paths"])
            counts[cb["repo"]] = findings
            current |= {key(cb["repo"], cb["commit"], f["path"], f["line"], f["code"]) for f in findings}
        tally = collections.Counter()
        for v in verdicts[hs["name"]]:
            if v["repo"] in missing:
                continue
            reported = key(v["repo"], v["commit"], v["path"], v["line"], v["rule"]) in current
            tally[("reported" if reported else "gone", v["verdict"])] += 1
        kept_true, kept_false = tally[("reported", "TRUE")], tally[("reported", "FALSE")]
        result[hs["name"]] = dict(
            drawn_at=hs["drawn_at"], tuned_on=hs.get("tuned_on", False), judged=sum(v["repo"] not in missing for v in verdicts[hs["name"]]),
            at_draw=hs.get("at_draw"), reported_true=kept_true, reported_false=kept_false,
            gone={verdict: n for (where, verdict), n in tally.items() if where == "gone"},
            precision_now=kept_true / (kept_true + kept_false) if kept_true + kept_false else 0.0,
            findings_now={repo: len(f) for repo, f in counts.items()}, findings=counts,
            missing=sorted(missing),
        )
    return result


def _fetched(src: Path, repo: str, commit: str) -> bool:
    """Whether ``src`` holds a mirror or an extracted tree of ``repo`` (see :func:`tree_for`)."""
    slug = repo.replace("/", "+")
    return (src / f"{slug}@{commit}").is_dir() or (src / slug).is_dir()


# ----------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="folder of fetched mirrors or extracted trees")
    parser.add_argument("--synclint", required=True, help="synclint checkout to put on PYTHONPATH")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--work", type=Path, default=Path("/tmp/realcode/trees"))
    parser.add_argument("--only", default="recall,precision,torch,heldout")
    parser.add_argument("--torch-dir", default=None)
    parser.add_argument("--skip-missing", action="store_true",
                        help="leave out held-out codebases without a mirror (and their judged findings), listing them")
    parser.add_argument("--json", type=Path, default=None, help="write the full results here")
    parser.add_argument("--dump-unjudged", type=Path, default=None,
                        help="write sampled findings without a verdict here (JSON lines)")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="a --json output of an earlier run of the same synclint: re-draw and "
                             "re-score its findings without running the checker again")
    args = parser.parse_args()
    args.previous = json.loads(args.reuse.read_text()) if args.reuse else None
    args.work.mkdir(parents=True, exist_ok=True)
    synclint_dir = os.path.abspath(args.synclint)
    parts = set(args.only.split(","))
    out = dict(synclint=args.previous["synclint"] if args.previous else synclint_version(args.python, synclint_dir))
    print(f"synclint: {out['synclint']}")
    unjudged = []
    if "recall" in parts:
        if args.previous and "recall" in args.previous:
            r = out["recall"] = args.previous["recall"]
        else:
            r = out["recall"] = measure_recall(args, args.python, synclint_dir)
        print(f"\nRecall: {r['found']}/{r['lines']} removed sync lines = {r['recall']:.3f} "
              f"({r['commits']} commits, {r['repos']} repos)")
        for m in r["missed"]:
            print(f"  missed {m['repo']} {m['parent'][:10]} {m['path']}:{m['line']}  {m['text'][:80]}")
    if "precision" in parts:
        p = out["precision"] = measure_precision(args, args.python, synclint_dir)
        print(f"\nPrecision (seed {p['seed']}): {p['true']}/{p['judged']} TRUE = {p['precision']:.3f}; "
              f"sampled {p['sampled']}, needs judging {len(p['unjudged'])}")
        print("  findings per codebase:", json.dumps(p["findings_per_codebase"]))
        for repo, c in p["per_codebase"].items():
            print(f"  {repo:40s} {c['true']}/{c['judged']}")
        for rule, c in p["per_rule"].items():
            print(f"  {rule}: {c['true']}/{c['judged']} = {c['precision']:.2f}")
        unjudged += p["unjudged"]
    if "torch" in parts:
        t = out["torch"] = measure_torch(args, args.python, synclint_dir)
        print(f"\ntorch {t['version']} package: {t['findings']} findings {json.dumps(t['per_rule_count'])}")
        print(f"  random {t['sampled']} (seed {t['seed']}): {t['true']}/{t['judged']} TRUE = {t['precision']:.3f}; "
              f"needs judging {len(t['unjudged'])}")
        unjudged += t["unjudged"]
    if "heldout" in parts:
        h = out["heldout"] = measure_heldout(args, args.python, synclint_dir)
        for name, r in h.items():
            tuned = "; later changes were tuned on it" if r["tuned_on"] else ""
            print(f"\nHeld-out set {name} (drawn by {r['drawn_at'][:7]}{tuned}): at the draw {r['at_draw']}; "
                  f"now {r['reported_true']}/{r['reported_true'] + r['reported_false']} TRUE among the judged "
                  f"findings still reported = {r['precision_now']:.3f}; gone {r['gone']}; "
                  f"findings now {sum(r['findings_now'].values())}"
                  + (f"; left out, not fetched: {', '.join(r['missing'])}" if r["missing"] else ""))
    for f in unjudged:
        print(f"  needs judging: {f['repo']} {f['path']}:{f['line']} {f['code']}")
    if args.dump_unjudged:
        with args.dump_unjudged.open("w") as fh:
            for f in unjudged:
                fh.write(json.dumps(f) + "\n")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
