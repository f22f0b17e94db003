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
import difflib
import importlib
import importlib.util
import inspect
import json
import re
import shutil
import subprocess
import sys
import tempfile
import types
import typing
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import torch  # noqa: E402

import fuzz_fixes  # noqa: E402
from fuzz_fixes import _run  # noqa: E402

_base_same = fuzz_fixes.same


def deep_same(a, b, depth: int = 0) -> bool:
    """``fuzz_fixes.same``, extended to the objects real code returns: the two module
    copies define distinct classes, so objects of the same class name are compared by
    their state (``state_dict`` for modules, else their attributes, 6 levels deep)."""
    if depth > 6:
        return True
    if type(a).__name__ == type(b).__name__ and not isinstance(a, (torch.Tensor, list, tuple, dict, int, float, str, bytes)):
        if isinstance(a, torch.nn.Module):
            return deep_same(dict(a.state_dict()), dict(b.state_dict()), depth + 1)
        if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
            return deep_same(vars(a), vars(b), depth + 1)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(deep_same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a).__name__ == type(b).__name__ and len(a) == len(b) and all(deep_same(x, y, depth + 1) for x, y in zip(a, b))
    try:
        return _base_same(a, b)
    except RuntimeError:  # objects whose == compares tensors inside
        return False


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


SHAPES = ((8,), (2, 3, 8, 8), (4, 6), (2, 1, 8, 8), (3,), (2, 3), (2, 4), (2, 5, 4), (1, 3, 6, 6), (4, 4), (2, 2), (5, 3), (2, 3, 8), (1, 1, 8, 8))
INTS = ("n", "k", "num", "dim", "size", "length", "height", "width", "batch_size", "h", "w", "degree", "order", "steps", "channels")
#: sizes for the letters of a documented shape such as ``(B, C, H, W)``
LETTERS = {"B": 2, "N": 5, "C": 3, "H": 8, "W": 8, "D": 4, "K": 3, "L": 6, "M": 4, "T": 4, "E": 6}
_SHAPE = re.compile(r"[(\[]\s*((?:[*A-Za-z0-9_]+\s*,\s*)*[*A-Za-z0-9_]+)\s*,?\s*[)\]]")


def _size(token: str) -> int | None:
    token = token.strip()
    if token.isdigit():
        return int(token)
    if token == "*":
        return 2
    if re.fullmatch(r"[A-Za-z]{1,3}", token):
        return LETTERS.get(token[0].upper(), 4)
    if re.fullmatch(r"[a-z]+(_[a-z]+)+", token):  # [batch_size, seq_len, vocab_size]
        return 2 if token.startswith("batch") else 4
    return None


def documented_shapes(function) -> dict[str, list[tuple[int, ...]]]:
    """Shapes the docstring gives a parameter (``x: ... :math:`(B, C, H, W)```, ``shape (N, 4)``):
    the text from the parameter's ``name:`` line to the next parameter, every shape-like
    group in it."""
    doc = inspect.getdoc(function) or ""
    names = list(inspect.signature(function).parameters)
    shapes: dict[str, list[tuple[int, ...]]] = {}
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"\s*(\w+)\s*(\(.*?\))?\s*:", line)
        if not match or match.group(1) not in names:
            continue
        text = " ".join([line] + [t for t in lines[index + 1 : index + 4] if not re.match(r"\s*\w+\s*(\(.*?\))?\s*:\s", t)])
        for group in _SHAPE.findall(text):
            sizes = [_size(t) for t in group.split(",")]
            if sizes and all(s is not None for s in sizes) and (len(sizes) > 1 or "*" not in group):
                shapes.setdefault(match.group(1), []).append(tuple(sizes))
    return shapes


def _from_annotation(annotation, name: str, attempt: int, rng: torch.Generator):
    """A value for a parameter annotated ``int`` / ``float`` / ``bool`` / ``tuple[int, ...]``,
    or ``MISSING`` when the annotation does not say (tensors are shaped elsewhere)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or str(annotation)
    text = text.replace("typing.", "").replace("torch.", "")
    text = re.sub(r"^Optional\[(.*)\]$|^(.*?) \| None$|^Union\[(.*), NoneType\]$", lambda m: next(g for g in m.groups() if g), text)
    if text in ("int",):
        return 6 if name.lower() in INTS or name.lower().startswith("num") else 3
    if text == "float":
        return 0.5
    if text == "bool":
        return False
    if re.fullmatch(r"(tuple|Tuple)\[int, \.\.\.\]", text) or text in ("Size",):
        return (2, 3, 8, 8)
    if re.fullmatch(r"(tuple|Tuple)\[int, int\]", text):
        return (8, 8)
    if re.fullmatch(r"(tuple|Tuple)\[float, float\]", text):
        return (0.1, 0.9)
    return MISSING


MISSING = object()


def guess(name: str, attempt: int, position: int, rng: torch.Generator, annotation=inspect.Parameter.empty, shapes=()):
    """A value for parameter ``name``: by its name when it says what it is, by its annotation,
    by a shape its docstring gives, else a float tensor whose shape cycles with the attempt
    (and differs per position on odd rounds)."""
    lowered = name.lower()
    shape = SHAPES[(attempt + position * (attempt // len(SHAPES))) % len(SHAPES)]
    if shapes and attempt % 3 != 2:
        shape = shapes[(attempt // 3) % len(shapes)]
        if any(word in lowered for word in ("label", "target", "index", "idx", "class")):
            return _sparse(torch.randint(0, 4 if attempt % 3 else 2, shape, generator=rng), attempt, rng)
        if "mask" in lowered:
            return _sparse(torch.rand(shape, generator=rng) > 0.5, attempt, rng)
        return _sparse(torch.rand(shape, generator=rng), attempt, rng).requires_grad_(attempt % 2 == 1)
    if "box" in lowered:
        return _boxes(rng, 5 + attempt % 3)
    if "edge_index" in lowered:
        return torch.randint(0, 6, (2, 12), generator=rng)
    if lowered in ("batch_shape", "shape", "input_shape"):
        return torch.Size((2, 3, 8, 8)) if attempt % 2 == 0 else (2, 3, 8, 8)
    if lowered.startswith("same_on") or lowered.startswith("is_") or lowered in ("training", "normalized", "keepdim"):
        return False
    if annotation is not inspect.Parameter.empty:
        value = _from_annotation(annotation, lowered, attempt, rng)
        if value is not MISSING:
            return value
        if _is_project_class(annotation) and _DEPTH[0] < 2:  # an object of the project: made like the owner
            _DEPTH[0] += 1
            try:
                return instantiate(annotation, attempt)
            finally:
                _DEPTH[0] -= 1
    if lowered in ("batch", "index", "idx", "indices", "ptr", "labels", "label", "target", "targets", "cls", "classes", "y"):
        return _sparse(torch.randint(0, 4 if attempt % 3 else 2, shape, generator=rng), attempt, rng)
    if "mask" in lowered:
        return _sparse(torch.rand(shape, generator=rng) > 0.5, attempt, rng)
    annotated_tensor = "Tensor" in str(annotation)
    if (lowered in INTS or lowered.startswith("num_") or lowered.endswith("_k")) and not annotated_tensor:
        return 6
    if lowered in ("eps", "epsilon", "threshold", "p", "alpha", "beta", "gamma", "temperature"):
        return 0.5
    if lowered == "device":
        return torch.device("cpu")
    if lowered == "dtype":
        return torch.float32
    if any(word in lowered for word in ("image", "img", "input", "frame")) and not shapes and attempt % 2 == 0:
        shape = (2, 3, 8, 8) if attempt % 4 == 0 else (1, 1, 8, 8)
    if attempt % 5 == 2:  # integer data (cluster ids, counts) where nothing says which
        return _sparse(torch.randint(0, 3, shape, generator=rng), attempt, rng)
    if attempt % 16 == 10:  # no elements at all
        return torch.randn((0,) + shape[1:], generator=rng)
    return _sparse(torch.randn(shape, generator=rng), attempt, rng).requires_grad_(attempt % 3 == 1)


_DEPTH = [0]  # nesting of objects made for annotated parameters


def _is_project_class(annotation) -> bool:
    module = getattr(annotation, "__module__", "") or ""
    return isinstance(annotation, type) and module.split(".")[0] not in ("builtins", "torch", "typing", "collections", "numpy")


def _sparse(tensor: torch.Tensor, attempt: int, rng: torch.Generator) -> torch.Tensor:
    """Degenerate inputs, where early returns and fixes meet edge cases: every eighth
    attempt all zeros (an empty mask, no positive target), every eighth all ones (a
    single class, no spread), and every fourth about half the elements zero (a zero
    leading coefficient)."""
    if attempt % 8 == 6:
        return torch.zeros_like(tensor)
    if attempt % 8 == 4:
        return torch.ones_like(tensor)
    if attempt % 4 != 3 or not tensor.is_floating_point():
        return tensor
    keep = torch.rand(tensor.shape, generator=rng) < 0.5
    return torch.where(keep, tensor, torch.zeros(()))


def make_args(function, attempt: int, rng: torch.Generator) -> tuple:
    """Arguments for ``function``'s required positional parameters, and on odd attempts for
    the positional ones that default to ``None`` as well (``forward(self, x=None)``)."""
    signature = inspect.signature(function)
    try:
        shapes = documented_shapes(function)
    except (TypeError, ValueError):
        shapes = {}
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - forward references to what is not importable
        hints = {}
    positional = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = []
    for p in positional:
        if p.default is inspect.Parameter.empty or (p.default is None and attempt % 2 == 1):
            required.append(p)
        else:
            break  # positional arguments stop at the first default that is kept
    return tuple(
        guess(p.name, attempt, i, rng, hints.get(p.name, p.annotation), shapes.get(p.name, ()))
        for i, p in enumerate(required)
    )


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


# -- objects ----------------------------------------------------------------------------------


def instantiate(cls: type, seed: int):
    """``cls()``, else ``cls`` with generated required arguments, else an object made
    without ``__init__`` (attributes are then filled in on demand, see ``run_probed``)."""
    torch.manual_seed(seed)
    try:
        return cls()
    except Exception:  # noqa: BLE001, S110
        pass
    for name, raw in vars(cls).items():  # a factory such as `identity()` / `random()`
        if isinstance(raw, classmethod) and not name.startswith("_"):
            factory = raw.__func__.__get__(cls)
            try:
                if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                       for p in inspect.signature(factory).parameters.values()):
                    torch.manual_seed(seed)
                    made = factory()
                    if isinstance(made, cls):
                        return made
            except Exception:  # noqa: BLE001, S112
                continue
    for attempt in range(3):
        torch.manual_seed(seed)
        try:
            return cls(*make_args(cls.__init__, attempt, torch.Generator().manual_seed(seed + attempt))[1:])
        except Exception:  # noqa: BLE001, S112
            continue
    instance = cls.__new__(cls)
    if isinstance(instance, torch.nn.Module):
        torch.nn.Module.__init__(instance)
    return instance


_MISSING_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def run_probed(before, after, instances: tuple, args: tuple, seed: int, rng_seed: int, probe: LineProbe, probes: int = 6):
    """Run ``before`` and ``after`` on the same (cloned) arguments, from the same seed. When
    the original reads an attribute its object lacks (an object made without its
    configuration), the same generated value is set on both objects and the run repeats.
    ``(expected, actual)``, or ``(exception, None)`` when the original raised."""
    for round_ in range(probes + 1):
        torch.manual_seed(seed)
        expected = _run(before, args)
        if not isinstance(expected, Exception):
            break
        match = _MISSING_ATTRIBUTE.search(str(expected))
        if not (isinstance(expected, AttributeError) and match and instances and round_ < probes):
            return expected, None
        name = match.group(2)
        if any(name in vars(i) for i in instances if hasattr(i, "__dict__")):
            return expected, None
        for instance in instances:
            value = guess(name, round_, 0, torch.Generator().manual_seed(rng_seed))
            try:
                setattr(instance, name, value)
            except Exception:  # noqa: BLE001 - a property without a setter
                return expected, None
    torch.manual_seed(seed)
    with probe:
        actual = _run(after, args)
    return expected, actual


def _owner_and_function(module: types.ModuleType, qualified: str):
    parts = qualified.split(".")
    if "<locals>" in parts:
        return None, None, "nested function"
    owner = module
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, None, "not found"
    try:
        raw = inspect.getattr_static(owner, parts[-1])
    except AttributeError:
        return None, None, "not found"
    return owner, raw, None


def _code_of(raw):
    function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    function = getattr(function, "fget", function)
    return getattr(function, "__code__", None)


def _bound(owner, raw, instance):
    if isinstance(raw, staticmethod):
        return raw.__func__
    if isinstance(raw, classmethod):
        return raw.__func__.__get__(owner)
    if isinstance(owner, type):
        return raw.__get__(instance)
    return raw


def _entered(code) -> Callable:
    """A profile function that records whether ``code`` ran, and its flag list."""
    hit: list[bool] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            hit.append(True)

    profile.hit = hit
    return profile


def changed_lines(original: str, fixed: str) -> frozenset[int]:
    """Line numbers of ``fixed`` that the fix wrote (replaced or inserted)."""
    matcher = difflib.SequenceMatcher(a=original.splitlines(), b=fixed.splitlines(), autojunk=False)
    return frozenset(
        line + 1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert") for line in range(j1, j2)
    )


class LineProbe:
    """While active, records whether any of ``lines`` of the fixed module (code whose
    globals are ``namespace``) ran: a run that never reaches the fixed lines proves nothing
    about them."""

    def __init__(self, namespace: dict, lines: frozenset[int]) -> None:
        self.namespace, self.lines, self.reached = namespace, lines, False

    def _local(self, frame, event, arg):
        if event == "line" and frame.f_lineno in self.lines:
            self.reached = True
        return self._local

    def _global(self, frame, event, arg):
        return self._local if frame.f_globals is self.namespace and not self.reached else None

    def __enter__(self) -> LineProbe:
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(None)


def _load(path: Path, root: Path, source: str, suffix: str) -> types.ModuleType:
    """``path``'s module (its package imported normally), executed from ``source``."""
    relative = path.relative_to(root).with_suffix("")
    dotted = ".".join(relative.parts)
    package = ".".join(relative.parts[:-1])
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


# -- running ----------------------------------------------------------------------------------


def run_direct(before, after, qualified: str, driver, tries: int, seed: int, lines: frozenset[int]):
    """The changed function called itself: ``(outcome, detail)``. Inputs are tried until a
    run reaches the fixed lines (``equal, lines not reached`` when none did)."""
    owner_b, raw_b, why = _owner_and_function(before, qualified)
    owner_a, raw_a, _ = _owner_and_function(after, qualified)
    if raw_b is None or raw_a is None:
        return "not runnable", why or "not found"
    last_error = "no input"
    unreached = None
    for attempt in range(tries):
        instances: tuple = ()
        instance_b = instance_a = None
        if isinstance(owner_b, type) and not isinstance(raw_b, (staticmethod, classmethod)):
            try:
                instance_b, instance_a = instantiate(owner_b, seed), instantiate(owner_a, seed)
            except Exception as error:  # noqa: BLE001 - abstract classes, odd metaclasses
                return "not runnable", f"instance: {type(error).__name__}"
            instances = (instance_b, instance_a)
        f_before, f_after = _bound(owner_b, raw_b, instance_b), _bound(owner_a, raw_a, instance_a)
        rng = torch.Generator().manual_seed(seed + attempt)
        try:
            args = driver(attempt, rng) if driver is not None else make_args(f_before, attempt, rng)
        except (TypeError, ValueError):
            return "not runnable", "no signature"
        probe = LineProbe(vars(after), lines)
        expected, actual = run_probed(f_before, f_after, instances, args, seed, seed + attempt, probe)
        if actual is None:
            last_error = f"{type(expected).__name__}: {str(expected)[:80]}"
            continue
        if not agree(expected, actual):
            return "different", f"args={args!r}\nexpected={expected!r}\nactual={actual!r}"
        if probe.reached:
            return "equal", f"direct, attempt {attempt}"
        unreached = unreached or ("equal, lines not reached", f"direct, attempt {attempt}")
    return unreached or ("not runnable", last_error)


def _candidates(module: types.ModuleType) -> list[tuple[str, object]]:
    """Public entry points defined in ``module``: classes (called through an instance) and
    functions, by name."""
    found = []
    for name, value in vars(module).items():
        if name.startswith("__") or getattr(value, "__module__", None) != module.__name__:
            continue
        if isinstance(value, type) or inspect.isfunction(value):
            found.append((name, value))
    return found


def _swapped(module: types.ModuleType, originals: types.ModuleType, fixed: types.ModuleType) -> None:
    """In ``module``'s globals, every object ``originals`` defines becomes ``fixed``'s
    object of the same name (also behind an imported module alias)."""
    table = {id(v): getattr(fixed, k) for k, v in vars(originals).items() if hasattr(fixed, k) and not k.startswith("__")}
    for name, value in list(vars(module).items()):
        if id(value) in table and not isinstance(value, (int, float, str, bool, type(None))):
            setattr(module, name, table[id(value)])
        elif isinstance(value, types.ModuleType) and value is not torch and any(id(v) in table for v in vars(value).values()):
            proxy = types.ModuleType(value.__name__)
            proxy.__dict__.update({k: table.get(id(v), v) for k, v in vars(value).items()})
            setattr(module, name, proxy)


def run_through_callers(repo: Path, path: Path, original: str, fixed: str, qualified: str, tries: int, seed: int,
                        lines: frozenset[int], max_modules: int = 8):
    """The changed function reached from an entry point of its own module or of a module of
    the repository that names its owner: instantiate the entry point's class (or take the
    function), call it on generated inputs, and keep the first run in which the original
    entered the changed function; the fixed run must enter the fixed function too.
    ``(outcome, detail)`` or ``None`` when no caller reached it."""
    relative = path.relative_to(repo).with_suffix("")
    dotted = ".".join(relative.parts)
    try:
        real = importlib.import_module(dotted)
    except Exception:  # noqa: BLE001
        return None
    fixed_module = _load(path, repo, fixed, "__synclint_fixed")
    _, raw_b, _ = _owner_and_function(real, qualified)
    _, raw_a, _ = _owner_and_function(fixed_module, qualified)
    code_b, code_a = _code_of(raw_b), _code_of(raw_a)
    if code_b is None or code_a is None:
        return None
    owner_name = qualified.split(".")[0]
    unreached = None
    files = [path] + [
        p for p in sorted(repo.rglob("*.py"))
        if p != path and (p.parent / "__init__.py").exists() and "test" not in p.relative_to(repo).parts[0]
        and re.search(rf"\b{re.escape(owner_name)}\b", p.read_text(errors="replace"))
    ][:max_modules]
    for caller_path in files:
        caller_dotted = ".".join(caller_path.relative_to(repo).with_suffix("").parts)
        try:
            caller_b = importlib.import_module(caller_dotted)
        except Exception:  # noqa: BLE001, S112
            continue
        if caller_path == path:
            caller_a = fixed_module
        else:
            caller_a = _load(caller_path, repo, caller_path.read_text(), "__synclint_caller")
            _swapped(caller_a, real, fixed_module)
        for name, entry_b in _candidates(caller_b):
            entry_a = getattr(caller_a, name, None)
            if entry_a is None:
                continue
            for attempt in range(max(3, tries // 4)):
                instances: tuple = ()
                f_b, f_a = entry_b, entry_a
                if isinstance(entry_b, type):
                    try:
                        instances = (instantiate(entry_b, seed), instantiate(entry_a, seed))
                    except Exception:  # noqa: BLE001
                        break
                    f_b, f_a = instances
                    if not callable(f_b):
                        break
                rng = torch.Generator().manual_seed(seed + attempt)
                try:
                    target = f_b.forward if isinstance(f_b, torch.nn.Module) else f_b
                    args = make_args(target, attempt, rng)
                except (TypeError, ValueError):
                    break
                probe_b, probe_a = _entered(code_b), _entered(code_a)
                sys.setprofile(probe_b)
                try:
                    torch.manual_seed(seed)
                    expected = _run(f_b, args)
                finally:
                    sys.setprofile(None)
                if isinstance(expected, Exception) or not probe_b.hit:
                    continue
                line_probe = LineProbe(vars(fixed_module), lines)
                sys.setprofile(probe_a)
                try:
                    torch.manual_seed(seed)
                    with line_probe:
                        actual = _run(f_a, args)
                finally:
                    sys.setprofile(None)
                via = f"{caller_path.relative_to(repo)}::{name}"
                if not probe_a.hit:
                    return "not runnable", f"caller {via} did not reach the fixed copy"
                if not agree(expected, actual):
                    return "different", f"through {via}\nargs={args!r}\nexpected={expected!r}\nactual={actual!r}"
                if line_probe.reached:
                    return "equal", f"through {via}, attempt {attempt}"
                unreached = unreached or ("equal, lines not reached", f"through {via}, attempt {attempt}")
    return unreached


def run_function(path: Path, root: Path, original: str, fixed: str, qualified: str, tries: int, seed: int):
    """``("equal" | "equal, lines not reached" | "different" | "not runnable", detail)``: the
    function called itself, else reached through an entry point that calls it."""
    if not (path.parent / "__init__.py").exists() and _entry_point(original, qualified):
        return "not runnable", "script: an entry point (arguments, datasets, downloads, a whole training) is never run"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = _load(path, root, original, "__synclint_original")
            after = _load(path, root, fixed, "__synclint_fixed")
    except Exception as error:  # noqa: BLE001
        return "not runnable", f"import: {type(error).__name__}: {str(error)[:80]}"
    driver = next((d for key, d in DRIVERS.items() if f"{path.as_posix()}::{qualified}".endswith(key)), None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lines = changed_lines(original, fixed)
        outcome, detail = run_direct(before, after, qualified, driver, tries, seed, lines)
        if outcome in ("equal", "different"):
            return outcome, detail
        try:
            through = run_through_callers(root, path, original, fixed, qualified, tries, seed, lines)
        except Exception as error:  # noqa: BLE001 - report, never stop the whole run
            through = ("not runnable", f"{detail}; callers: {type(error).__name__}: {str(error)[:60]}")
    if through is not None and (through[0] != "not runnable" or outcome == "not runnable"):
        return through
    if outcome != "not runnable":
        return outcome, detail
    if not (path.parent / "__init__.py").exists() and detail.startswith("NameError"):
        # A script's functions read the globals its top-level code makes (arguments,
        # datasets, models), which is never run here: its `main` / `train` is a whole training.
        return "not runnable", f"script: needs the globals its top-level code sets up ({detail})"
    return outcome, detail


def _entry_point(source: str, qualified: str) -> bool:
    """A script's top-level function that takes no required argument (``main()``) or parses
    the command line: running it would run the script."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == qualified:
            required = len(node.args.posonlyargs) + len(node.args.args) - len(node.args.defaults)
            return required == 0 or "argparse" in ast.unparse(node) or "parse_args" in ast.unparse(node)
    return False


def import_root(path: Path, repo: Path) -> Path:
    """The folder to import ``path``'s module from: the parent of its topmost package
    (``src/`` in a src layout), the repository root for a top-level module."""
    folder = path.parent
    while (folder / "__init__.py").exists() and folder != repo:
        folder = folder.parent
    return folder if folder != path.parent or folder == repo else repo


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
                root = import_root(original_path, repo)
                if str(root) not in sys.path:
                    sys.path.insert(0, str(root))
                outcome, detail = run_function(original_path, root, original, fixed, qualified, tries, seed)
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


def evaluate_apart(repo: Path, args: argparse.Namespace) -> dict:
    """``evaluate`` in a process of its own: repositories' top-level packages (``utils``,
    ``models``) would otherwise meet in one ``sys.modules``."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.json"
        command = [sys.executable, __file__, str(repo), "--tries", str(args.tries), "--seed", str(args.seed), "--json", str(out)]
        if args.fixed_root is not None:
            command += ["--fixed-root", str(args.fixed_root)]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if not out.exists():
            return {"repo": repo.name, "fix_summary": "the evaluation crashed", "files": 0, "functions": 0,
                    "outcomes": Counter(), "reasons": Counter(), "different": [], "equal": [], "records": []}
        report = json.loads(out.read_text())[0]
    report["outcomes"], report["reasons"] = Counter(report["outcomes"]), Counter(report["reasons"])
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
        report = evaluate_apart(repo, args) if len(args.repos) > 1 else evaluate(repo.resolve(), args.tries, args.seed, args.fixed_root)
        reports.append(report)
        outcomes = report["outcomes"]
        print(
            f"{repo.name}: {report['fix_summary']} | changed functions {report['functions']}: "
            f"ran {outcomes['equal'] + outcomes['equal, lines not reached'] + outcomes['different']} "
            f"(equal {outcomes['equal']}, equal but the fixed lines not reached {outcomes['equal, lines not reached']}, "
            f"different {outcomes['different']}), "
            f"not runnable {outcomes['not runnable']} {dict(report['reasons'])}",
            flush=True,
        )
        for record in report["records"]:
            print(f"  {record['outcome']}: {record['function']} | {record['detail']}")
        for text in report["different"][:3]:
            print(f"  DIFFERENT: {text}")
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1, default=lambda o: dict(o)))
    return 1 if any(r["outcomes"]["different"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
