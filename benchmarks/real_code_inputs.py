"""Generated inputs and objects for ``real_code_fixes.py``: values for a function's
parameters from their docstring shapes, annotations and names, varied per try (shapes,
integer data, empty tensors, all zeros / ones, half zeros, ``None``-default parameters),
and objects made by ``cls()``, a factory classmethod or generated constructor arguments."""

from __future__ import annotations

import inspect
import re
import typing

import torch

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
