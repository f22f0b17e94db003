"""Where a loader's batches are copied to the device asking not to block (SL402).

An unpinned loader costs the host a wait at the copies of its batches that pass
``non_blocking=True``: from pageable memory the driver stages the copy through a pinned
buffer before the call returns (``cudaMemcpyAsync``; CUDA runtime API, "API
synchronization behavior"), so the copy the code wrote to overlap the step does not. A
blocking copy waits whatever the memory (SL401 reports those). The loader's own line
runs once; these copies run every step, so they are where SL402 reports the wait.

Only what one scope shows is followed: the function (or module) that builds the loader,
its loops over the loader (directly or through ``enumerate``/``tqdm``/``iter``, or a name
bound to such a wrapper, ``with tqdm(loader) as bar`` too), each loop's target names and
what is taken from them by subscript, attribute or unpacking (``images, labels = batch``,
``img = batch["img"]``, ``for k, v in batch.items()``). A loop (``for`` or ``while``) that
takes each batch with ``next`` from such an iterator bound to a name (``batch = next(it)``)
iterates the loader too: the names it binds are the batch in that loop's body.

A loader handed to a function of the same module (``train_one_epoch(model, loader)``,
``evaluate(tqdm(loader))``, by position or keyword), which the module defines once at its
top level and binds nowhere else, is followed into it: that function's parameter is the
loader there, when the function never rebinds it, and its copies are the loader's (two
hands deep at most). Not a wrapper that changes what the loop yields (``enumerate``,
``zip``), nor a method, nor a call of a name the calling function binds itself, nor a
keyword of a positional-only parameter's name (it goes to ``**kwargs``).
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.imports import callee_name
from synclint.analysis.inference import asks_for, keyword, non_blocking_argument, positional
from synclint.rules.matching import is_host_transfer, root_name, target_names
from synclint.traversal import ScopeVisitor, walk

#: Callables that wrap a loader in an iterator over its batches (``tqdm(loader)``), SL402's too.
WRAPPING = frozenset({"enumerate", "iter", "zip", "tqdm", "trange", "cycle", "islice", "repeat", "chain"})


def is_wrapper(node: cst.BaseExpression) -> bool:
    """``iter(loader)``, ``tqdm(enumerate(loader))``: a call of a wrapping callable."""
    return isinstance(node, cst.Call) and callee_name(node.func) in WRAPPING


def names_read(node: cst.CSTNode | None, skipping: frozenset[str] = frozenset()) -> set[str]:
    """The names ``node`` reads (nothing for None), not counting the arguments of a call of
    a name in ``skipping`` (``len(loader)`` only looks at it)."""
    reads = _NameReads(skipping)
    if node is not None:
        walk(node, reads)
    return reads.names


class _NameReads(cst.CSTVisitor):
    def __init__(self, skipping: frozenset[str]) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._skipping = skipping

    def visit_Call(self, node: cst.Call) -> bool:
        return not (isinstance(node.func, cst.Name) and node.func.value in self._skipping)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


#: How many calls deep a loader handed to the module's functions is followed.
_MAX_HANDS = 2
#: Wrappers whose iteration yields the loader's batches themselves.
_SAME_ITEMS = frozenset({"iter", "tqdm"})
#: Stands for no loader expression: in a function it is handed to, the loader is a parameter.
_NO_EXPRESSION = cst.Call(func=cst.Name("_"))


def asynchronous_copies(scope: cst.CSTNode, loader: cst.Call, name: str | None,
                        module: cst.Module | None = None, handed_to: dict[int, str] | None = None,
                        depth: int = 0) -> list[cst.Call]:
    """The copies in ``scope`` of batches of ``loader`` (bound there to ``name``, or None
    when it is iterated where it is built) that pass a ``non_blocking`` that is not the
    constant ``False``, in source order; with ``module``, also those in the module's
    functions the loader is handed to (see the module's docstring), each recorded in
    ``handed_to`` (by identity) with the name of the function the scope handed it to."""
    bindings = _Bindings(scope)
    walk(scope, bindings)
    if isinstance(scope, cst.Module):  # (a function's ``global loader`` rebinds the module's)
        shared = _Shared()
        walk(scope, shared)
        for key in shared.names:
            bindings.count[key] = 2
    # A name bound more than once in the scope (``loader = accelerator.prepare(loader)``,
    # a second ``loader = DataLoader(val)``) may hold something else where it is iterated.
    names = {name} if name is not None and bindings.count.get(name, 0) == 1 else set()
    wrappers: dict[str, cst.BaseExpression] = {}
    for _ in range(2):  # (``it = iter(loader)``, then ``pbar = tqdm(it)``)
        found = _WrapperBindings(scope, loader, names | set(wrappers))
        walk(scope, found)
        wrappers.update({key: value for key, value in found.found.items() if bindings.count.get(key, 0) == 1})
    names |= set(wrappers)
    loops = _Loops(scope, loader, names)
    walk(scope, loops)
    pinned = _PinnedBuffers(scope)
    walk(scope, pinned)
    copies: list[cst.Call] = []
    for loop in loops.found:
        batch = {n for part in _batch_targets(loop.target, loop.iter, loader, names, wrappers)
                 for n in target_names(part)}
        copies += _loop_copies(loop, batch, pinned.names)
    # ``it = iter(loader)``, then ``x, y = next(it)`` in a step loop: each pass copies a batch.
    taken = _NextBatches(scope, loader, names)
    walk(scope, taken)
    for loop, assign in taken.found:
        # What ``next`` returns is what a loop over its iterator binds (``i, batch`` of
        # ``enumerate``, the loader's part of a ``zip``).
        source = assign.value.args[0].value  # type: ignore[attr-defined]
        batch = {n for target in assign.targets
                 for part in _batch_targets(target.target, source, loader, names, wrappers)
                 for n in target_names(part)}
        copies += [copy for copy in _loop_copies(loop, batch, pinned.names, assign)
                   if not any(copy is seen for seen in copies)]
    if module is not None and depth < _MAX_HANDS:
        functions = _functions_defined_once(module)
        if not isinstance(scope, cst.Module):  # (``train = make_trainer()``: the scope's own ``train``)
            functions = {key: value for key, value in functions.items() if key not in bindings.count}
        handed = _Handed(scope, loader, name if name in names else None, functions)
        walk(scope, handed)
        for function, parameter in handed.found:
            for copy in asynchronous_copies(function, _NO_EXPRESSION, parameter, module, handed_to, depth + 1):
                if not any(copy is seen for seen in copies):
                    copies.append(copy)
                    if handed_to is not None and depth == 0:
                        handed_to.setdefault(id(copy), function.name.value)
    return copies


def _functions_defined_once(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """The module's top-level functions, by name, that it defines once and binds nowhere
    else (``train = wrap(train)``, ``global train`` in a function: what a call runs may be
    another function's code)."""
    bindings = _Bindings(module)
    walk(module, bindings)
    shared = _Shared()
    walk(module, shared)
    functions: dict[str, cst.FunctionDef] = {}
    seen: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            defined = statement.name.value
            if defined in seen:
                functions.pop(defined, None)
            elif isinstance(statement, cst.FunctionDef) and bindings.count.get(defined) == 1 and defined not in shared.names:
                functions[defined] = statement
            seen.add(defined)
    return functions


class _Handed(ScopeVisitor):
    """Calls in the scope of a function of the module (by its name) that hand it the loader,
    or an iterator over it that yields its batches (``iter``, ``tqdm``): (the function, the
    parameter that receives it)."""

    def __init__(self, root: cst.CSTNode, loader: cst.Call, name: str | None,
                 functions: dict[str, cst.FunctionDef]) -> None:
        super().__init__(root)
        self.loader, self.name, self.functions = loader, name, functions
        self.found: list[tuple[cst.FunctionDef, str]] = []

    def _is_loader(self, value: cst.BaseExpression) -> bool:
        if value is self.loader or (isinstance(value, cst.Name) and value.value == self.name):
            return True
        return (isinstance(value, cst.Call) and callee_name(value.func) in _SAME_ITEMS
                and len(value.args) >= 1 and value.args[0].keyword is None and not value.args[0].star
                and self._is_loader(value.args[0].value))

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Name) or node.func.value not in self.functions:
            return
        function = self.functions[node.func.value]
        if function is self.root:
            return  # (a recursive call hands it to the same code)
        for index, arg in enumerate(node.args):
            if self._is_loader(arg.value) and (parameter := receiving_parameter(function, node, index)) is not None:
                self.found.append((function, parameter))


def receiving_parameter(function: cst.FunctionDef, call: cst.Call, index: int) -> str | None:
    """The named parameter of ``function`` that argument ``index`` of ``call`` binds, or None
    when it may be another (``*args``, ``**kwargs``, a place after an unpacked ``*args``)."""
    arg = call.args[index]
    if arg.star:
        return None
    params = function.params
    if arg.keyword is None:
        positional = [*params.posonly_params, *params.params]
        if any(earlier.star for earlier in call.args[:index]) or index >= len(positional):
            return None
        return positional[index].name.value
    # (A positional-only parameter's name as a keyword goes to ``**kwargs``.)
    named = {param.name.value for param in [*params.params, *params.kwonly_params]}
    return arg.keyword.value if arg.keyword.value in named else None


def _batch_targets(target: cst.BaseExpression, expr: cst.BaseExpression, loader: cst.Call, names: set[str],
                   wrappers: dict[str, cst.BaseExpression], depth: int = 0) -> list[cst.BaseExpression]:
    """The parts of a loop ``target`` over ``expr`` that are bound to the loader's batches:
    all of it for the loader itself, the second of ``i, batch`` for ``enumerate``, the
    loader's position for ``zip`` (nothing where the target does not unpack it)."""
    if expr is loader or depth > 8:
        return [target] if expr is loader else []
    if isinstance(expr, cst.Name):
        if expr.value in wrappers:
            return _batch_targets(target, wrappers[expr.value], loader, names, wrappers, depth + 1)
        return [target] if expr.value in names else []
    if not is_wrapper(expr):
        return []
    callee = callee_name(expr.func)  # type: ignore[attr-defined]
    args = [arg.value for arg in positional(expr)]
    if not args:
        return []
    elements = _unpacked(target)
    if callee == "zip":
        if elements is None or len(elements) != len(args):
            return []
        return [part for element, arg in zip(elements, args)
                for part in _batch_targets(element, arg, loader, names, wrappers, depth + 1)]
    if callee == "enumerate":
        if elements is not None and len(elements) == 2:
            return _batch_targets(elements[1], args[0], loader, names, wrappers, depth + 1)
        return [target] if _batch_targets(target, args[0], loader, names, wrappers, depth + 1) else []
    if callee == "chain":  # (batches of every iterable chained: all of them the loader's, or not followed)
        parts = [_batch_targets(target, arg, loader, names, wrappers, depth + 1) for arg in args]
        return [target] if all(parts) else []
    if callee in ("repeat", "trange"):  # (the loader itself, repeated; a range)
        return []
    return _batch_targets(target, args[0], loader, names, wrappers, depth + 1)


def _unpacked(target: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The elements of a tuple or list target without a starred one, or None."""
    if isinstance(target, (cst.Tuple, cst.List)) and not any(
            isinstance(element, cst.StarredElement) for element in target.elements):
        return [element.value for element in target.elements]
    return None


def _over(expr: cst.BaseExpression, loader: cst.Call, names: set[str]) -> bool:
    """``loader`` itself, a name bound to it (or to an iterator over it), or a wrapper of those."""
    if expr is loader:
        return True
    if isinstance(expr, cst.Name):
        return expr.value in names
    if is_wrapper(expr):
        return any(_over(arg.value, loader, names) for arg in expr.args)  # type: ignore[attr-defined]
    return False


class _Bindings(ScopeVisitor):
    """How many times the scope binds each name (a ``global`` or ``nonlocal`` one: shared
    with other scopes, never followed)."""

    def __init__(self, root: cst.CSTNode) -> None:
        super().__init__(root)
        self.count: dict[str, int] = {}

    def _bind(self, target: cst.BaseExpression, times: int = 1) -> None:
        for name in target_names(target):
            self.count[name] = self.count.get(name, 0) + times

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name)  # (``def f(loader=None)``: the caller's loader may be iterated)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.count[item.name.value] = 2

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.count[item.name.value] = 2

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is not self.root:
            self.count[node.name.value] = self.count.get(node.name.value, 0) + 1
        return node is self.root

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if node is not self.root:
            self.count[node.name.value] = self.count.get(node.name.value, 0) + 1
        return node is self.root


class _Shared(cst.CSTVisitor):
    """Names some function of the module declares ``global``."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Global(self, node: cst.Global) -> None:
        self.names |= {item.name.value for item in node.names}


class _PinnedBuffers(ScopeVisitor):
    """Names bound only to pinned host memory: ``torch.empty(n, pin_memory=True)``,
    ``torch.empty(n).pin_memory()``."""

    def __init__(self, root: cst.CSTNode) -> None:
        super().__init__(root)
        self.names: set[str] = set()
        self._other: set[str] = set()

    def leave_Module(self, node: cst.Module) -> None:
        self.names -= self._other

    def visit_Assign(self, node: cst.Assign) -> None:
        bound = {name for target in node.targets for name in target_names(target.target)}
        if _pinned(node.value):
            self.names |= bound
        else:
            self._other |= bound
        self.names -= self._other


def _pinned(value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "pin_memory" and not value.args:
        return True
    flag = keyword(value, "pin_memory")
    return (flag is not None and isinstance(flag.value, cst.Name) and flag.value.value == "True"
            and callee_name(value.func) in ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "tensor"))


class _WrapperBindings(ScopeVisitor):
    """Names bound to an iterator over the loader: ``it = iter(loader)``, ``with tqdm(loader) as bar``."""

    def __init__(self, root: cst.CSTNode, loader: cst.Call, names: set[str]) -> None:
        super().__init__(root)
        self.loader, self.names = loader, names
        self.found: dict[str, cst.BaseExpression] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if is_wrapper(node.value) and _over(node.value, self.loader, self.names):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.found[target.target.value] = node.value

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if is_wrapper(node.item) and _over(node.item, self.loader, self.names) and node.asname is not None \
                and isinstance(node.asname.name, cst.Name):
            self.found[node.asname.name.value] = node.item


class _Loops(ScopeVisitor):
    """The ``for`` loops of the scope over the loader's batches."""

    def __init__(self, root: cst.CSTNode, loader: cst.Call, names: set[str]) -> None:
        super().__init__(root)
        self.loader, self.names, self.found = loader, names, []

    def visit_For(self, node: cst.For) -> None:
        if _over(node.iter, self.loader, self.names):
            self.found.append(node)


class _NextBatches(ScopeVisitor):
    """Assignments of the next batch of an iterator over the loader bound to a name
    (``it = iter(loader)``, then ``batch = next(it)``) in a loop of the scope, each with its
    innermost loop: each pass takes the following batch. One outside any loop takes one
    batch, once (a peek); so does ``next(iter(loader))``, whatever loop it is in (the first
    batch of a fresh iterator: a sample to show once an epoch, not a step's batch)."""

    def __init__(self, root: cst.CSTNode, loader: cst.Call, names: set[str]) -> None:
        super().__init__(root)
        self.loader, self.names = loader, names
        self.found: list[tuple[cst.For | cst.While, cst.Assign]] = []
        self._loops: list[cst.For | cst.While] = []

    def visit_For(self, node: cst.For) -> None:
        self._loops.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        self._loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self._loops.append(node)

    def leave_While(self, original_node: cst.While) -> None:
        self._loops.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if (self._loops and isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                and value.func.value == "next" and value.args and value.args[0].keyword is None
                and not value.args[0].star and isinstance(value.args[0].value, cst.Name)
                and _over(value.args[0].value, self.loader, self.names)):
            self.found.append((self._loops[-1], node))


def _loop_copies(loop: cst.For | cst.While, batch: set[str], pinned: set[str],
                 taken: cst.Assign | None = None) -> list[cst.Call]:
    """The copies in ``loop``'s body of ``batch`` (its target's names, or those ``taken``
    binds to ``next(it)`` there)."""
    if not batch or _breaks_at_once(loop):
        return []
    fields = _Fields(loop.body, batch, taken)
    for _ in range(2):  # (``x, y = batch``, then ``img = x["img"]``)
        # Foreign names are decided again each pass, with the names found so far: a
        # comprehension's element is visited before its own ``for`` binds what it reads
        # (``[{k: v for k, v in t.items()} for t in targets]``).
        fields.foreign = set()
        walk(loop.body, fields)
    finder = _Copies(loop.body, fields.names - fields.foreign, fields.moved, pinned)
    walk(loop.body, finder)
    return finder.found


def _breaks_at_once(loop: cst.For | cst.While) -> bool:
    """A loop whose body always breaks (``for x in loader: peek = x.cuda(...); break``):
    it copies one batch, once."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else [loop.body]
    return any(isinstance(line, cst.SimpleStatementLine) and any(isinstance(small, cst.Break)
                                                                 for small in line.body)
               for line in body)


def _taken_from(value: cst.BaseExpression, names: set[str]) -> bool:
    """``batch``, ``batch["img"]``, ``batch.images``, ``batch[0][1]``: part of a batch."""
    return isinstance(value, (cst.Name, cst.Subscript, cst.Attribute)) and root_name(value) in names


def _fields_of(iterable: cst.BaseExpression, names: set[str]) -> bool:
    """``batch.items()``, ``batch.values()``: the fields of a batch's dictionary."""
    return (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            and iterable.func.attr.value in ("items", "values") and not iterable.args
            and root_name(iterable.func.value) in names)


class _Fields(ScopeVisitor):
    """The batch's names, grown by what is taken from them; ``moved``: names a copy rebinds
    (``x = x.cuda(non_blocking=True)``: later copies of ``x`` copy a device tensor);
    ``foreign``: names also bound to what reads no batch name (``batch = next(other)``,
    ``for x in other``), which may hold something else where they are copied."""

    def __init__(self, root: cst.CSTNode, names: set[str], taken: cst.Assign | None = None) -> None:
        super().__init__(root)
        self.names = set(names)
        self.moved: set[str] = set()
        self.foreign: set[str] = set()
        #: ``batch = next(it)``: binds the batch's names (``names``), reading none of them.
        self._taken = taken

    def _rebinds(self, bound: set[str], value: cst.CSTNode | None) -> None:
        if value is None or not _mentions(value, self.names):
            self.foreign |= bound

    def visit_Assign(self, node: cst.Assign) -> None:
        if node is self._taken:
            return
        bound = {name for target in node.targets for name in target_names(target.target)}
        if _taken_from(node.value, self.names):
            self.names |= bound
        elif _is_copy(node.value) and root_name(node.value.func.value) in self.names:  # type: ignore[union-attr]
            self.moved |= bound
        else:
            self._rebinds(bound, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._rebinds(set(target_names(node.target)), node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._rebinds(set(target_names(node.target)), node.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._rebinds(set(target_names(node.asname.name)), node.item)

    def visit_For(self, node: cst.For) -> None:
        if _fields_of(node.iter, self.names):
            self.names |= set(target_names(node.target))
        else:
            self._rebinds(set(target_names(node.target)), node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if _fields_of(node.iter, self.names) or _taken_from(node.iter, self.names):
            self.names |= set(target_names(node.target))
        else:
            self._rebinds(set(target_names(node.target)), node.iter)  # (``[x.cuda() for x in other]``)


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return bool(names_read(node) & names)


def _is_copy(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and is_host_transfer(node)


def _asks_not_to_block(call: cst.Call) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "copy_":
        flag = keyword(call, "non_blocking")
        args = positional(call)
        value = flag.value if flag is not None else (args[1].value if len(args) >= 2 else None)
    else:
        value = non_blocking_argument(call)
    return asks_for(value)


class _Copies(ScopeVisitor):
    """Copies of the batch's names that ask not to block: ``x.cuda(non_blocking=True)``,
    ``x.to(device, non_blocking=True)``, ``dst.copy_(x, non_blocking=True)``. A name a copy
    rebinds holds a device tensor afterwards: only that copy counts for it."""

    def __init__(self, root: cst.CSTNode, names: set[str], moved: set[str], pinned: set[str]) -> None:
        super().__init__(root)
        self.names, self.moved, self.found = names, moved, []
        self.pinned = pinned
        self._rebinding: list[cst.Call] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        bound = {name for target in node.targets for name in target_names(target.target)}
        if _is_copy(node.value) and root_name(node.value.func.value) in bound:  # type: ignore[union-attr]
            self._rebinding.append(node.value)  # type: ignore[arg-type]  (``x = x.cuda(...)``)

    def visit_Call(self, node: cst.Call) -> None:
        if not _asks_not_to_block(node) or not isinstance(node.func, cst.Attribute):
            return
        if node.func.attr.value == "copy_":
            if root_name(node.func.value) in self.pinned:
                return  # (into a pinned host buffer: host to host)
            args = positional(node)
            source = args[0].value if args else None
        elif is_host_transfer(node):
            source = node.func.value
        else:
            return
        root = root_name(source) if source is not None else None
        if root not in self.names:
            return
        if root in self.moved and not any(node is rebinding for rebinding in self._rebinding):
            return
        self.found.append(node)
