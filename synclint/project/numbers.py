"""Which values of one function are Python numbers, read from the function's own code.

A factory given a size (``torch.arange(n, device=d)``) syncs only when the size is a
device tensor. Inside ``forward(self, n, device)`` synclint takes ``n`` for a tensor,
as it takes every input of a ``forward``; what the callers pass decides otherwise:
``b, n, device = *x.shape[:2], x.device`` then ``self.bias(n, device)``. This module
finds the caller's side: the names every binding of which is visibly a number, and the
call arguments that are. The project index then gives a parameter the kind every call
site passes (:meth:`synclint.project.index.ProjectIndex.number_parameters`).

Evidence is positive only: number constants, ``len()``/``int()``/``float()``/``round()``,
the sizes of anything (``x.shape[i]``, ``x.size(i)``, ``x.dim()``, ``x.ndim``,
``x.numel()``, the elements of ``x.shape`` unpacked), ``.item()``, and arithmetic of
those. All functions take CPython ``ast`` nodes; the summary builder calls them.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable

from synclint.project.scopes import BINDERS_OTHER_THAN_NAMES, function_nodes, names_bound_by

#: Calls whose result is a Python number whatever they are given.
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round"})
#: Methods giving a Python number: sizes, and a value read back to the host.
_NUMBER_METHODS = frozenset({"dim", "ndimension", "numel", "nelement", "element_size", "item", "size"})
_SIZE_ATTRIBUTES = frozenset({"ndim"})
_SHAPE_ATTRIBUTE = "shape"
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def is_number(node: ast.AST | None, names: Collection[str]) -> bool:
    """Whether ``node`` is visibly a Python number (``names``: locals known to hold one)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)  # not bool, None or str
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _ARITHMETIC) and is_number(node.left, names) and is_number(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and is_number(node.operand, names)
    if isinstance(node, ast.IfExp):
        return is_number(node.body, names) and is_number(node.orelse, names)
    if isinstance(node, ast.Attribute):
        return node.attr in _SIZE_ATTRIBUTES
    if isinstance(node, ast.Subscript):  # ``x.shape[0]``, ``x.size()[-1]`` (a slice is a tuple)
        return _is_shape(node.value) and not isinstance(node.slice, ast.Slice)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in _NUMBER_BUILTINS
        if isinstance(func, ast.Attribute):
            if func.attr == "size":  # ``x.size(0)``: a number; ``x.size()``: a shape
                return bool(node.args) or any(k.arg == "dim" for k in node.keywords)
            return func.attr in _NUMBER_METHODS
    return False


def is_text(node: ast.AST | None) -> bool:
    """A string, literal or formatted: an einops pattern (``'b (f n) d'``), a mode's name."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(node, ast.JoinedStr)


def _is_shape(node: ast.AST) -> bool:
    """``x.shape`` or ``x.size()``: a tuple of Python ints (``torch.Size``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == _SHAPE_ATTRIBUTE
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size"
        and not node.args
        and not node.keywords
    )


def _shape_length(node: ast.AST) -> int | None:
    """How many sizes ``*node`` expands to, when ``node`` is a shape cut with constant
    bounds (``x.shape[:2]``); None otherwise."""
    if not (isinstance(node, ast.Subscript) and _is_shape(node.value) and isinstance(node.slice, ast.Slice)):
        return None
    cut = node.slice
    bounds = []
    for bound, default in ((cut.lower, 0), (cut.upper, None)):
        if bound is None:
            bounds.append(default)
        elif isinstance(bound, ast.Constant) and type(bound.value) is int and bound.value >= 0:
            bounds.append(bound.value)
        else:
            return None
    if cut.step is not None or bounds[1] is None:
        return None
    return max(0, bounds[1] - bounds[0])


def _unpacked(targets: list[ast.expr], value: ast.AST, names: Collection[str]) -> Iterable[tuple[str, bool]]:
    """(name, whether it gets a number) for each plain name of ``a, b = value``."""
    if _is_shape(value) or (isinstance(value, ast.Subscript) and _is_shape(value.value)):
        sizes: list[bool] | None = [True] * len(targets)  # every element of a shape is a size
    elif isinstance(value, (ast.Tuple, ast.List)):
        sizes = []
        for element in value.elts:
            if isinstance(element, ast.Starred):
                length = _shape_length(element.value)
                if length is None:
                    sizes = None  # positions after an unknown expansion are unknown
                    break
                sizes += [True] * length
            else:
                sizes.append(is_number(element, names))
    else:
        sizes = None
    for position, target in enumerate(targets):
        if isinstance(target, ast.Name):
            yield target.id, sizes is not None and position < len(sizes) and sizes[position]


#: What a loop counter holds, for :func:`number_names`.
_AN_INT = ast.Constant(0)


def _loop_counter(node: ast.For | ast.AsyncFor) -> str | None:
    """The name a loop binds to ints: ``t`` of ``for t in range(...)``, ``i`` of ``for i, x in
    enumerate(...)``."""
    call = node.iter
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    target = node.target
    if call.func.id == "range" and isinstance(target, ast.Name):
        return target.id
    if call.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


def number_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Names every binding of which in ``function``'s own code (nested scopes left out) is
    a Python number: ``n = len(xs)``, ``b, n = x.shape[:2]``, ``b, n, device =
    *x.shape[:2], x.device``, ``m = n * 2``. Parameters (the caller decides what they
    hold), ``global``/``nonlocal`` names and names bound any other way (a loop target
    other than a counter of ``range`` or ``enumerate``, ``with ... as``, a walrus) are not."""
    # One pass over the function's nodes (every function of a project passes here): the
    # plain and tuple assignments, and how often each name is bound by anything at all.
    assignments: list[tuple[str, ast.AST | None, ast.AST, list[ast.expr]]] = []
    stores: dict[str, int] = {}
    excluded: set[str] = set()
    for node in function_nodes(function):
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:  # a Store (or Del) of the name
                stores[node.id] = stores.get(node.id, 0) + 1
        elif kind is ast.Assign:
            if len(node.targets) == 1:
                target = node.targets[0]
                if type(target) is ast.Name:
                    assignments.append((target.id, node.value, node.value, []))
                elif type(target) in (ast.Tuple, ast.List) and not any(type(t) is ast.Starred for t in target.elts):
                    assignments += [(name, None, node.value, target.elts) for name, _ in _unpacked(target.elts, node.value, ())]
        elif kind is ast.AugAssign:
            if type(node.target) is ast.Name:
                assignments.append((node.target.id, node.value, node.value, []))
        elif kind in (ast.For, ast.AsyncFor):
            # ``for t in range(steps)``, ``for i, x in enumerate(xs)``: ints, whatever ``steps`` is.
            counter = _loop_counter(node)
            if counter is not None:
                assignments.append((counter, _AN_INT, _AN_INT, []))
        elif kind in (ast.Global, ast.Nonlocal):
            excluded.update(node.names)
        elif kind in BINDERS_OTHER_THAN_NAMES:
            for name in names_bound_by(node):
                stores[name] = stores.get(name, 0) + 1
    if not assignments:
        return frozenset()
    # Every binding of the name is one of the assignments above, or the name is out.
    numbers = _bound_only_by([name for name, *_ in assignments], stores, excluded, function)
    changed = True
    while changed:  # drop, to a fixpoint, the names one of whose values is not a number
        changed = False
        for name, value, whole, targets in assignments:
            if name not in numbers:
                continue
            if value is not None:
                holds = is_number(value, numbers)
            else:
                holds = dict(_unpacked(targets, whole, numbers)).get(name, False)
            if not holds:
                numbers.discard(name)
                changed = True
    return frozenset(numbers)


#: Expressions that are no tensor (:func:`visibly_no_tensor`).
_LITERAL_ARGUMENTS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                      ast.JoinedStr, ast.Constant, ast.Lambda)
#: Methods of a tensor that return host values; builtins that build Python containers;
#: modules whose functions return no tensor (NumPy's arrays, Python's numbers).
_HOST_METHODS = frozenset({"tolist", "numpy"})
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "dict", "set", "frozenset", "str", "range", "sorted", "repr"})
_HOST_MODULES = frozenset({"np", "numpy", "math", "random"})


def _returns_no_tensor(node: ast.AST) -> bool:
    """``x.tolist()``, ``x.cpu().numpy()``, ``list(...)``, ``np.array(...)``, ``random.random()``:
    a call whose value is visibly no tensor."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in _CONTAINER_BUILTINS
    if isinstance(func, ast.Attribute):
        if func.attr in _HOST_METHODS:
            return True
        base = func.value
        while isinstance(base, ast.Attribute):  # ``np.random.rand(...)``
            base = base.value
        return isinstance(base, ast.Name) and base.id in _HOST_MODULES
    return False


def _bound_only_by(recorded: list[str], stores: dict[str, int], excluded: set[str],
                   function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names of ``recorded`` (one entry per binding seen) that nothing else binds:
    ``stores`` counts every binding of each name in ``function``'s own code; parameters
    and ``excluded`` names (``global``/``nonlocal``) are out."""
    args = function.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    by_name: dict[str, int] = {}
    for name in recorded:
        by_name[name] = by_name.get(name, 0) + 1
    return {name for name, count in by_name.items()
            if stores.get(name) == count and name not in excluded and name not in params}


def visibly_no_tensor(node: ast.AST | None, names: Collection[str]) -> bool:
    """Whether ``node`` is visibly no tensor (``names``: locals known to hold none): a
    literal, a container or comprehension, a lambda, a Python number or string, a
    :func:`_returns_no_tensor` call, a conditional expression both arms of which are."""
    if isinstance(node, _LITERAL_ARGUMENTS) or is_text(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.IfExp):
        return visibly_no_tensor(node.body, names) and visibly_no_tensor(node.orelse, names)
    return is_number(node, names) or _returns_no_tensor(node)


def no_tensor_names(function: ast.FunctionDef | ast.AsyncFunctionDef, numbers: Collection[str]) -> frozenset[str]:
    """Names every binding of which in ``function``'s own code is visibly no tensor (see
    :func:`visibly_no_tensor`; ``numbers``: see :func:`number_names`): ``t =
    np.random.randint(...)``, ``v = None``, ``for v in (0.5, 1.0)``. Parameters,
    ``global``/``nonlocal`` names and names bound any other way are not."""
    values: list[tuple[str, ast.AST]] = []
    stores: dict[str, int] = {}
    excluded: set[str] = set()
    for node in function_nodes(function):
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:
                stores[node.id] = stores.get(node.id, 0) + 1
        elif kind is ast.Assign:
            if len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                values.append((node.targets[0].id, node.value))
        elif kind in (ast.For, ast.AsyncFor):
            # ``for v in (0.5, 1.0)``: each element in turn.
            if type(node.target) is ast.Name and type(node.iter) in (ast.Tuple, ast.List):
                values += [(node.target.id, element) for element in node.iter.elts] or [(node.target.id, node.iter)]
                stores[node.target.id] = stores.get(node.target.id, 0) + max(len(node.iter.elts), 1) - 1
        elif kind in (ast.Global, ast.Nonlocal):
            excluded.update(node.names)
        elif kind in BINDERS_OTHER_THAN_NAMES:
            for name in names_bound_by(node):
                stores[name] = stores.get(name, 0) + 1
    if not values:
        return frozenset()
    found = _bound_only_by([name for name, _value in values], stores, excluded, function)
    known = set(found) | set(numbers)
    changed = True
    while changed:  # drop, to a fixpoint, the names one of whose values may be a tensor
        changed = False
        for name, value in values:
            if name in found and not visibly_no_tensor(value, known):
                found.discard(name)
                known.discard(name)
                changed = True
    return frozenset(found)
