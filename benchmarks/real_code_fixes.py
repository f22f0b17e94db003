"""The real-code bar for the fixes: ``synclint fix --apply --unsafe-fixes`` on public
codebases, then every changed function that can run on CPU is run before and after on
generated inputs.

    python benchmarks/real_code_fixes.py REPO_DIR [REPO_DIR ...] [--json OUT]

Each ``REPO_DIR`` is a checkout (nothing is committed from it). It is copied to a
temporary directory, fixed there through the CLI, and compared file by file:

* *changed functions*: functions and methods whose code differs after the fix;
* each is imported from its module (the repository root on ``sys.path``, so
  package-relative imports work) in both versions; a method's object is made with
  ``cls()`` when that works, else without ``__init__``;
* inputs are generated from the parameter names (boxes, masks, labels, indices,
  edge indices, counts; other parameters get float tensors of a few shapes), up to
  ``--tries`` combinations, until the original runs;
* *ran*: the original ran on some input; the fixed version is run on the same
  (cloned) inputs and compared as in ``fuzz_fixes.agree`` (values, dtypes, shapes,
  gradients of inputs that require grad);
* *not runnable*: import failed, no input made the original run (the reason is kept).

Prints per repository: files changed, fixes, changed functions, ran, equal,
different (with the first differing function), not runnable by reason.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import json
import shutil
import subprocess
import sys
import tempfile
import types
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import torch  # noqa: E402

import fuzz_fixes  # noqa: E402
from fuzz_fixes import _run  # noqa: E402

_base_same = fuzz_fixes.same


def deep_same(a, b) -> bool:
    """``fuzz_fixes.same``, extended to the objects real code returns: the two module
    copies define distinct classes, so objects of the same class name are compared by
    their state (``state_dict`` for modules, else their attributes)."""
    if type(a).__name__ == type(b).__name__ and type(a) is not type(b) and not isinstance(a, (torch.Tensor, list, tuple, dict)):
        if isinstance(a, torch.nn.Module):
            return deep_same(dict(a.state_dict()), dict(b.state_dict()))
        if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
            return deep_same(vars(a), vars(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(deep_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a).__name__ == type(b).__name__ and len(a) == len(b) and all(deep_same(x, y) for x, y in zip(a, b))
    return _base_same(a, b)


def agree(expected, actual) -> bool:
    saved = fuzz_fixes.same
    fuzz_fixes.same = deep_same  # agree() compares results and gradients with `same`
    try:
        return fuzz_fixes.agree(expected, actual)
    finally:
        fuzz_fixes.same = saved


def changed_functions(original: str, fixed: str) -> list[str]:
    """Qualified names (``Class.method``) of functions whose code the fix changed."""

    def table(source: str) -> dict[str, str]:
        found: dict[str, str] = {}

        def visit(node, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    found[name] = ast.dump(child)
                    visit(child, f"{name}.<locals>.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")

        visit(ast.parse(source), "")
        return found

    before, after = table(original), table(fixed)
    return sorted(name for name in after if before.get(name) != after[name])


# -- inputs -----------------------------------------------------------------------------------


def _boxes(rng: torch.Generator, n: int) -> torch.Tensor:
    xy = torch.rand(n, 2, generator=rng) * 50
    wh = torch.rand(n, 2, generator=rng) * 20 + 1
    return torch.cat([xy, xy + wh], dim=1)


SHAPES = ((8,), (2, 3, 8, 8), (4, 6), (2, 1, 8, 8), (3,), (2, 3), (2, 4), (2, 5, 4), (1, 3, 6, 6), (4, 4))
INTS = ("n", "k", "num", "dim", "size", "length", "height", "width", "batch_size", "h", "w", "degree", "order", "steps")


def guess(name: str, attempt: int, position: int, rng: torch.Generator):
    """A value for parameter ``name``: by its name when it says what it is, else a float
    tensor whose shape cycles with the attempt (and differs per position on odd rounds)."""
    lowered = name.lower()
    shape = SHAPES[(attempt + position * (attempt // len(SHAPES))) % len(SHAPES)]
    if "box" in lowered:
        return _boxes(rng, 5 + attempt % 3)
    if "edge_index" in lowered:
        return torch.randint(0, 6, (2, 12), generator=rng)
    if lowered in ("batch_shape", "shape"):
        return torch.Size((2, 3, 8, 8)) if attempt % 2 == 0 else (2, 3, 8, 8)
    if lowered.startswith("same_on") or lowered.startswith("is_") or lowered in ("training", "normalized", "keepdim"):
        return False
    if lowered in ("batch", "index", "idx", "indices", "ptr", "labels", "label", "target", "targets", "cls", "classes", "y"):
        return torch.randint(0, 4, shape, generator=rng)
    if "mask" in lowered:
        return torch.rand(shape, generator=rng) > 0.5
    if lowered in INTS or lowered.startswith("num_"):
        return 6
    if lowered == "device":
        return torch.device("cpu")
    if lowered == "dtype":
        return torch.float32
    return torch.randn(shape, generator=rng).requires_grad_(attempt % 3 == 1)


def _panoptic_inputs(attempt: int, rng: torch.Generator) -> tuple:
    shape = (1, 6 + attempt, 7)
    return (
        torch.randint(0, 5, shape, generator=rng),  # sem_seg: category per pixel
        torch.randint(0, 4, shape, generator=rng),  # ins_seg: instance per pixel
        torch.randint(0, 2, shape, generator=rng),  # semantic_thing_seg
        1000, {1, 2}, 2, 0,  # label_divisor, thing_ids, stuff_area, void_label
    )


#: Inputs for changed functions whose parameters a name cannot tell (path::qualified name).
DRIVERS = {
    "projects/Panoptic-DeepLab/panoptic_deeplab/post_processing.py::merge_semantic_and_instance": _panoptic_inputs,
}


def _callable(module: types.ModuleType, qualified: str):
    parts = qualified.split(".")
    if "<locals>" in parts:
        return None, "nested function"
    owner = module
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, "not found"
    function = getattr(owner, parts[-1], None)
    if function is None:
        return None, "not found"
    if isinstance(owner, type):
        try:
            instance = owner()
        except Exception:  # noqa: BLE001
            instance = owner.__new__(owner)
            if isinstance(instance, torch.nn.Module):
                torch.nn.Module.__init__(instance)
        raw = inspect.getattr_static(owner, parts[-1])
        if isinstance(raw, staticmethod):
            return raw.__func__, None
        if isinstance(raw, classmethod):
            return raw.__func__.__get__(owner), None
        return function.__get__(instance), None
    return function, None


def _load(path: Path, root: Path, source: str, suffix: str) -> types.ModuleType:
    """``path``'s module (its package imported normally), executed from ``source``."""
    relative = path.relative_to(root).with_suffix("")
    dotted = ".".join(relative.parts)
    package = ".".join(relative.parts[:-1]) if relative.name != "__init__" else ".".join(relative.parts[:-1])
    if package:
        try:
            importlib.import_module(package)
        except Exception:  # noqa: BLE001 - the package's own imports may need what is missing
            package = ""
    name = f"{dotted}{suffix}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = package
    sys.modules[name] = module
    try:
        if not (path.parent / "__init__.py").exists():
            raise ImportError("a script: its top-level code is not run")
        exec(compile(source, str(path), "exec"), module.__dict__)
    except Exception:  # noqa: BLE001 - a missing dependency, or a script
        # Definitions only, statement by statement: imports that fail are skipped, and
        # scripts' top-level code (training, downloads) never runs.
        for statement in ast.parse(source).body:
            if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) or (
                isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
            ):
                try:
                    exec(compile(ast.Module([statement], []), str(path), "exec"), module.__dict__)
                except Exception:  # noqa: BLE001, S112
                    continue
    return module


def run_function(path: Path, root: Path, original: str, fixed: str, qualified: str, tries: int, seed: int):
    """``("equal" | "different" | "not runnable", detail)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = _load(path, root, original, "")
            after = _load(path, root, fixed, "__synclint_fixed")
    except Exception as error:  # noqa: BLE001
        return "not runnable", f"import: {type(error).__name__}: {str(error)[:80]}"
    try:
        f_before, why = _callable(before, qualified)
        f_after, _ = _callable(after, qualified)
    except Exception as error:  # noqa: BLE001 - abstract classes, odd metaclasses
        return "not runnable", f"instance: {type(error).__name__}"
    if f_before is None or f_after is None:
        return "not runnable", why or "not found"
    try:
        parameters = [
            p for p in inspect.signature(f_before).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return "not runnable", "no signature"
    last_error = "no input"
    driver = DRIVERS.get(f"{path.relative_to(root).as_posix()}::{qualified}")
    for attempt in range(tries):
        rng = torch.Generator().manual_seed(seed + attempt)
        if driver is not None:
            args = driver(attempt, rng)
        else:
            args = tuple(guess(p.name, attempt, i, rng) for i, p in enumerate(parameters))
        torch.manual_seed(seed)
        expected = _run(f_before, args)
        if isinstance(expected, Exception):
            last_error = f"{type(expected).__name__}: {str(expected)[:80]}"
            continue
        torch.manual_seed(seed)
        actual = _run(f_after, args)
        if agree(expected, actual):
            return "equal", f"attempt {attempt}"
        return "different", f"args={args!r}\nexpected={expected!r}\nactual={actual!r}"
    return "not runnable", last_error


def evaluate(repo: Path, tries: int, seed: int, fixed_root: Path | None = None) -> dict:
    work = Path(tempfile.mkdtemp(prefix="synclint-real-"))
    if fixed_root is not None:  # a copy already fixed with the same command
        copy = fixed_root / repo.name
        summary = "(fixed copy reused)"
    else:
        copy = work / repo.name
        shutil.copytree(repo, copy, symlinks=True)
        command = [sys.executable, "-m", "synclint", "fix", "--apply", "--unsafe-fixes", str(copy)]
        done = subprocess.run(command, capture_output=True, text=True)
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("Applied")]
        summary = lines[-1] if lines else "no fixes applied"
    report: dict = {
        "repo": repo.name, "fix_summary": summary, "files": 0, "functions": 0, "outcomes": Counter(),
        "reasons": Counter(), "different": [], "equal": [], "records": [],
    }
    sys.path.insert(0, str(repo))
    try:
        for fixed_path in sorted(copy.rglob("*.py")):
            original_path = repo / fixed_path.relative_to(copy)
            original, fixed = original_path.read_text(), fixed_path.read_text()
            if original == fixed:
                continue
            report["files"] += 1
            for qualified in changed_functions(original, fixed):
                report["functions"] += 1
                outcome, detail = run_function(original_path, repo, original, fixed, qualified, tries, seed)
                report["outcomes"][outcome] += 1
                where = f"{original_path.relative_to(repo)}::{qualified}"
                report["records"].append({"function": where, "outcome": outcome, "detail": detail.splitlines()[0][:120]})
                if outcome == "not runnable":
                    report["reasons"][detail.split(":")[0]] += 1
                elif outcome == "different":
                    report["different"].append(f"{where}\n{detail}")
                else:
                    report["equal"].append(where)
    finally:
        sys.path.remove(str(repo))
        shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--tries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--fixed-root", type=Path, help="reuse <root>/<repo name>, already fixed with fix --apply --unsafe-fixes")
    args = parser.parse_args(argv)
    reports = []
    for repo in args.repos:
        report = evaluate(repo.resolve(), args.tries, args.seed, args.fixed_root)
        reports.append(report)
        outcomes = report["outcomes"]
        print(
            f"{repo.name}: {report['fix_summary']} | changed functions {report['functions']}: "
            f"ran {outcomes['equal'] + outcomes['different']} (equal {outcomes['equal']}, different {outcomes['different']}), "
            f"not runnable {outcomes['not runnable']} {dict(report['reasons'])}",
            flush=True,
        )
        for where in report["equal"]:
            print(f"  equal: {where}")
        for text in report["different"][:3]:
            print(f"  DIFFERENT: {text}")
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1, default=lambda o: dict(o)))
    return 1 if any(r["outcomes"]["different"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
