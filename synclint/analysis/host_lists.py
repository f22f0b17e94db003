"""Lists that collect host tensors: ``logits = []`` then ``logits.append(out.cpu())``.

An evaluation loop often copies each output to the host and stacks the copies after the
loop (ClipBERT's ``run_video_qa``: ``logits.append(outputs["logits"].cpu())``, then
``logits = torch.stack(logits)`` and ``logits.max(-1)[1].tolist()``). The stacked tensor
is a host tensor, and reading it waits for nothing. Flow takes a list bound empty for a
host value when nothing but ``append``/``extend`` grows it, and drops it where a value
it is given may not be on the host (see :func:`appended_in` for loops, whose later passes
append before what reads the list on the next one).

A list that escapes (handed to a call that may fill it, stored in an attribute or a
container or aliased, even through ``xs or []`` or a bound ``xs.append``, written by
index, grown with ``+=`` or ``insert``) is not followed.
"""

from __future__ import annotations

import libcst as cst

from synclint.traversal import walk

#: Methods that grow a list by what they are given.
GROWING = frozenset({"append", "extend"})
#: Methods that put values in a list (other than growth statements, which flow follows).
_ADDING = frozenset({"append", "extend", "insert", "__setitem__", "__iadd__"})
#: Calls a list may be handed to without being filled: they read it.
_READERS = frozenset(
    {"len", "list", "tuple", "sorted", "sum", "zip", "enumerate", "print", "min", "max", "any", "all", "iter",
     "reversed", "isinstance"}
)


def is_empty_list(node: cst.BaseExpression) -> bool:
    """``[]`` or ``list()``."""
    if isinstance(node, cst.List):
        return not node.elements
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "list" and not node.args
    )


def only_grown_by_appends(scope: cst.CSTNode, name: str, qualify) -> bool:
    """Whether, in ``scope`` (a function or module), ``name`` is only read, grown with
    ``append``/``extend`` as statements, or handed to torch or to a builtin that reads it."""
    scan = _Uses(name, qualify, scope)
    walk(scope, scan)
    return not scan.escapes


def appended_in(body: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """``(list name, value)`` of each ``name.append(value)`` / ``name.extend(value)``
    statement in ``body`` (not in functions nested in it)."""
    scan = _Appends()
    walk(body, scan)
    return scan.found


def growth(statement: cst.BaseSmallStatement) -> tuple[str, cst.BaseExpression] | None:
    """``(name, value)`` when ``statement`` is ``name.append(value)`` or ``name.extend(value)``."""
    if not isinstance(statement, cst.Expr):
        return None
    call = statement.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)):
        return None
    if call.func.attr.value not in GROWING or len(call.args) != 1 or call.args[0].keyword is not None:
        return None
    return call.func.value.value, call.args[0].value


class _Appends(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, cst.BaseExpression]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Expr(self, node: cst.Expr) -> bool:
        grown = growth(node)
        if grown is not None:
            self.found.append(grown)
        return True


class _Uses(cst.CSTVisitor):
    """Whether a name escapes: any use but a read, a growth by ``append``/``extend`` as a
    statement, or an argument of torch or of a reading builtin."""

    def __init__(self, name: str, qualify, scope: cst.CSTNode) -> None:
        super().__init__()
        self.name = name
        self.qualify = qualify
        self.scope = scope
        self.escapes = False
        self._called: set[int] = set()  # ids of the ``xs.append`` of calls, judged in visit_Call

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is not self.scope:  # a closure may grow it with anything, whenever it runs
            self.escapes = self.escapes or _mentions(node, self.name)
            return False
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.escapes = self.escapes or _mentions(node, self.name)
        return False

    def visit_Expr(self, node: cst.Expr) -> bool:
        grown = growth(node)
        if grown is not None and grown[0] == self.name:
            walk(node.value.args[0].value, self)  # (the value may use the name itself)
            return False
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        self._called.add(id(func))
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self.name:
            if func.attr.value in _ADDING:
                self.escapes = True  # ``xs.insert(...)``, ``xs.append`` inside an expression
        if any(isinstance(arg.value, cst.Name) and arg.value.value == self.name for arg in node.args):
            qualified = self.qualify(func) or ""
            reads = qualified.startswith("torch.") or (isinstance(func, cst.Name) and func.value in _READERS)
            if not reads:
                self.escapes = True  # ``collect(xs)`` may fill it with anything
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # ``add = xs.append`` (then ``add(out)``): the list grows where flow does not look.
        if isinstance(node.value, cst.Name) and node.value.value == self.name and node.attr.value in _ADDING \
                and id(node) not in self._called:
            self.escapes = True
        return True

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.escapes = True
        return True

    def visit_Assign(self, node: cst.Assign) -> bool:
        # ``self.cache = xs``, ``xs[0] = x``, ``d["k"] = xs``: an alias or a write by index.
        if _may_be(node.value, self.name):
            self.escapes = True
        for target in node.targets:
            if isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Name) \
                    and target.target.value.value == self.name:
                self.escapes = True
        return True

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self.escapes = self.escapes or (node.value is not None and _may_be(node.value, self.name))
        return True

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        self.escapes = self.escapes or _may_be(node.value, self.name)
        return True

    def visit_Element(self, node: cst.Element) -> bool:
        if _may_be(node.value, self.name):
            self.escapes = True  # ``batches = [xs, ys]``: held by another container
        return True

    def visit_DictElement(self, node: cst.DictElement) -> bool:
        if _may_be(node.value, self.name):
            self.escapes = True  # ``state = {"logits": xs}``: held by a dict
        return True

    def visit_Global(self, node: cst.Global) -> bool:
        self.escapes = self.escapes or any(n.name.value == self.name for n in node.names)
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        self.escapes = self.escapes or any(n.name.value == self.name for n in node.names)
        return False


def _may_be(value: cst.BaseExpression, name: str) -> bool:
    """Whether ``value`` may evaluate to the list ``name`` itself (an alias): ``xs``, ``xs or
    []``, ``xs if keep else ys``, ``(ys := xs)``."""
    if isinstance(value, cst.Name):
        return value.value == name
    if isinstance(value, cst.BooleanOperation):
        return _may_be(value.left, name) or _may_be(value.right, name)
    if isinstance(value, cst.IfExp):
        return _may_be(value.body, name) or _may_be(value.orelse, name)
    if isinstance(value, cst.NamedExpr):
        return _may_be(value.value, name)
    return False


def _mentions(node: cst.CSTNode, name: str) -> bool:
    scan = _Mention(name)
    walk(node, scan)
    return scan.found


class _Mention(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        self.found = self.found or node.value == self.name
        return False
