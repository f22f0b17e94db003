"""Blocks of a function body that do not run every time the function does.

Read from the code's control flow, not from names:

* **error handling**: a branch or ``except`` handler that ends by raising runs
  only on the way to an exception (building its message included); a branch on a
  data-validity check (``if not valid.all():``) that raises on some path handles
  invalid data (non-finite boxes), not the ordinary step;
* **non-finite values**: a branch taken only when a value is NaN or infinite
  (``if torch.isnan(loss):`` dumping state, the ``else`` of ``if torch.isfinite(loss):``)
  handles a diverged step, not the ordinary one, whether or not it raises. The test
  itself still runs every step. A block that keeps only the finite elements
  (``x[~torch.isnan(x)]``) treats NaN as missing data, not divergence: it is the
  ordinary step;
* **warnings**: a branch that only warns of an anomaly (``if torch.abs(loss) > 30:
  log.warning("High loss value: %.4f", to_scalar(loss))``, sample-factory's learner),
  and sets flags, runs when the step has gone wrong: the values it formats are read
  then, not every step. The test itself still runs every step; and a test of who
  or whether to log (``if rank == 0: logger.warning(f"loss {loss.item()}")``) is
  no anomaly's: such a warning is the step's log;
* **lazy initialisation**: ``if self.cache is None: self.cache = build()`` (or
  ``if key not in self.table: self.table[key] = ...``, or ``if self.cache is not None:
  return`` followed by the build) stores what it builds in
  state that outlives the call, so the block runs once (per key, per shape), not
  every step. A *local* default (``if mask is None: mask = torch.ones(...)``)
  is not lazy initialisation: it runs on every call that passes no mask.

All functions take CPython ``ast`` nodes; the summary builder calls them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Container
from typing import NamedTuple

from synclint.project.scopes import (
    NESTED_SCOPES,
    child_nodes,
    function_nodes,
    names_bound_by,
    names_bound_in,
    own_nodes,
    walk_nodes,
)

#: Calls that say the code runs under TorchScript, a tracer or an ONNX export, not in an
#: eager step (``torch.jit.is_scripting()``, ``torch.jit.is_tracing()``,
#: ``torchvision._is_tracing()``, ``torch.onnx.is_in_onnx_export()``).
TRACING_CHECK = re.compile(r"(^|\.)(_?is_tracing|is_scripting|is_compiling|_is_fx_tracing|is_in_onnx_export)$")
#: Why code under such a check is cold (the index's regions and the rules' own reports).
TRACING_ONLY = "TorchScript, tracing or ONNX export only (not an eager step)"
#: Calls whose result says whether tensor data is valid (finite, in range).
_VALIDITY_METHODS = frozenset({"all", "any"})
_VALIDITY_FUNCTIONS = frozenset({"isfinite", "isnan", "isinf", "isposinf", "isneginf"})
#: Dict methods that read a cache entry: ``self.cache.get(key)``.
_CACHE_READS = frozenset({"get", "setdefault"})


def ends_in_raise(body: list[ast.stmt]) -> bool:
    """The block's last statement raises and nothing before it leaves the block another
    way (``return``, ``break``, ``continue``): everything in it leads to an exception."""
    return bool(body) and isinstance(body[-1], ast.Raise) and not any(_leaves(statement) for statement in body)


def _leaves(node: ast.AST) -> bool:
    if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
        return True
    if isinstance(node, NESTED_SCOPES):
        return False
    return any(_leaves(child) for child in child_nodes(node) if isinstance(child, ast.stmt))


#: Logging calls at warning level or above: a branch that makes only these reports an anomaly.
_WARNING_METHODS = frozenset({"warning", "warn", "error", "critical", "exception", "fatal"})
#: Names a module binds its logger to (``log = logging.getLogger(__name__)``), and ``logging``.
_LOGGER = re.compile(r"^_?(log|logger|logging|LOG|LOGGER)$")

#: Why a block that only warns is rare.
WARNING_ONLY = "only when it warns of an anomaly (a warning path)"


def only_warns(body: list[ast.stmt]) -> bool:
    """The block warns and does nothing else but set flags: every statement is a call of
    ``warnings.warn`` or a logger's warning-or-worse method (``log.warning``,
    ``self.logger.error``, ``logging.critical``), an assignment of a constant
    (``force_summaries = True``) or ``pass``; at least one warns."""
    warns = False
    for statement in body:
        if isinstance(statement, ast.Expr) and _warns(statement.value):
            warns = True
        elif not (isinstance(statement, ast.Pass) or (
                isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Constant)
                and all(isinstance(t, (ast.Name, ast.Attribute)) for t in _assigned(statement)))):
            return False
    return warns


def tests_who_or_whether(test: ast.expr) -> bool:
    """``rank == 0``, ``args.verbose``, ``is_main_process()``, ``True``: a test of who runs
    or whether to log, made of names, attributes, constants and calls without arguments
    under ``not``, ``and``, ``or``, ``==``, ``!=``, ``is``. A warning under one is no
    warning of an anomaly: ``logger.warning`` serves as the step's log where INFO is
    hidden. (An anomaly is tested on a value: ``torch.abs(loss) > 30``.)"""
    if isinstance(test, (ast.Name, ast.Attribute, ast.Constant)):
        return True
    if isinstance(test, ast.Call):
        # ``is_main_process()``, ``dist.is_initialized()``; not a value read off a computed
        # tensor: ``torch.any(lengths < 1).item()`` tests an anomaly (CnOCR's error log).
        return (not test.args and not test.keywords and bool(_dotted_text(test.func))
                and not (isinstance(test.func, ast.Attribute) and test.func.attr in _VALUE_READS))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return tests_who_or_whether(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(tests_who_or_whether(value) for value in test.values)
    if isinstance(test, ast.Compare):
        return all(isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for op in test.ops) and all(
            tests_who_or_whether(value) for value in (test.left, *test.comparators))
    return False


#: Methods that read a tensor's values (``found.item()``, ``mask.any()``): a test made of
#: one is a test of values, not of who runs or whether to log.
_VALUE_READS = frozenset({"item", "tolist", "any", "all", "sum", "max", "min", "mean", "numel", "count_nonzero",
                          "isnan", "isinf", "isfinite"})


def _assigned(statement: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]


def _warns(value: ast.expr) -> bool:
    """``warnings.warn(...)``, ``log.warning(...)``, ``self.logger.error(...)``."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    receiver, method = value.func.value, value.func.attr
    if isinstance(receiver, ast.Name) and receiver.id == "warnings":
        return method == "warn"
    name = receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else None
    return method in _WARNING_METHODS and name is not None and bool(_LOGGER.match(name))


def handles_invalid_data(node: ast.If) -> bool:
    """``if not valid_mask.all(): if training: raise ...; boxes = boxes[valid_mask]``:
    a branch taken when a validity check on tensor data fails, which raises on some path."""
    return _checks_validity(node.test) and any(_raises_here(statement) for statement in node.body)


#: Why a block taken only on NaN or infinite values is rare.
NON_FINITE_ONLY = "only on NaN or infinite values (handling a diverged step)"
_NON_FINITE_CHECKS = frozenset({"isnan", "isinf", "isposinf", "isneginf"})
#: Checks that infinity passes or fails, not NaN alone: infinity is also a setting.
_INFINITY_CHECKS = frozenset({"isinf", "isposinf", "isneginf", "isfinite"})
#: Calls that keep what a check says for every element of finite data: ``isnan(x).any()``
#: is false, ``isfinite(x).all()`` true, whichever way the result is reduced.
_REDUCTIONS = frozenset({"any", "all", "item", "bool"})


def true_only_on_non_finite(test: ast.expr, parameters: Container[str] = ()) -> bool:
    """``test`` is false whenever the data is finite: ``torch.isnan(loss)``,
    ``not torch.isfinite(x).all()``, ``isinf(a).any() or isnan(b).any()``,
    ``isnan(loss) and rank == 0``. A block under it runs only on a diverged step.
    ``parameters``: the function's, which may carry settings (see :func:`_a_setting`)."""
    return _non_finite_polarity(test, parameters) is False


def true_on_finite(test: ast.expr, parameters: Container[str] = ()) -> bool:
    """``test`` is true whenever the data is finite (``torch.isfinite(loss)``): its
    ``else`` runs only on a diverged step."""
    return _non_finite_polarity(test, parameters) is True


def _non_finite_polarity(test: ast.expr, parameters: Container[str]) -> bool | None:
    """What ``test`` is on finite data, when the code says: True, False, or None (it
    depends on other values)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, (ast.Not, ast.Invert)):
        if isinstance(test.op, ast.Invert) and _python_bool(test.operand):
            return None  # bitwise: ``~True == -2``, ``~False == -1``, both true
        inner = _non_finite_polarity(test.operand, parameters)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_non_finite_polarity(value, parameters) for value in test.values]
        # ``a and b`` is false if either is, true only if both are; ``or`` the converse.
        decisive = False if isinstance(test.op, ast.And) else True
        if decisive in values:
            return decisive
        return (not decisive) if all(value == (not decisive) for value in values) else None
    if isinstance(test, ast.Call):
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in _INFINITY_CHECKS and _a_setting(test, parameters):
            return None
        if name in _NON_FINITE_CHECKS:
            return False
        if name == "isfinite":
            return True
        if name in _REDUCTIONS:
            if isinstance(func, ast.Attribute) and not test.args:  # ``check.any()``
                return _non_finite_polarity(func.value, parameters)
            if len(test.args) == 1:  # ``torch.any(check)``, ``bool(check)``
                return _non_finite_polarity(test.args[0], parameters)
    return None


def keeps_finite_elements(body: list[ast.stmt]) -> bool:
    """``labelled = ~torch.isnan(target); output = output[labelled]``, ``x[torch.isfinite(x)]``:
    the block indexes with a mask of the finite elements and carries on with them. NaN
    there is missing data (the unlabelled tasks of a multi-task set), expected on any
    step; a diverged step is skipped, dumped or repaired (``torch.where``), not filtered."""
    nodes = own_nodes(body)
    masks = {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and _non_finite_polarity(node.value, ()) is True
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return any(
        isinstance(node, ast.Subscript)
        and (_non_finite_polarity(node.slice, ()) is True or (isinstance(node.slice, ast.Name) and node.slice.id in masks))
        for node in nodes
    )


def _a_setting(check: ast.Call, parameters: Container[str]) -> bool:
    """``math.isinf(norm_type)``, ``math.isfinite(self.max_norm)``: a Python number the
    function is given or keeps, not one it computed. Infinity there is a choice (the
    infinity norm, no clipping, no limit) taken every step, not a diverged value; NaN is
    no setting, so ``math.isnan(x)`` still reads as a diverged step."""
    func = check.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math"):
        return False
    value = check.args[0] if len(check.args) == 1 else None
    if isinstance(value, ast.Name):
        return value.id in parameters
    return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in ("self", "cls")


def _python_bool(node: ast.expr) -> bool:
    """``node`` is a Python bool, not a bool tensor: ``check.item()``, ``bool(check)``,
    ``math.isnan(x)``. ``~`` of a tensor is the logical not; of a Python bool, an int."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "bool"
    return isinstance(func, ast.Attribute) and (
        func.attr == "item" or (isinstance(func.value, ast.Name) and func.value.id == "math")
    )


def _checks_validity(test: ast.AST) -> bool:
    for node in walk_nodes(test):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _VALIDITY_METHODS and isinstance(func, ast.Attribute) or name in _VALIDITY_FUNCTIONS:
                return True
    return False


def _raises_here(statement: ast.stmt) -> bool:
    """``raise`` itself, or an ``if`` directly below whose branch raises."""
    if isinstance(statement, ast.Raise):
        return True
    if isinstance(statement, ast.If):
        return any(isinstance(s, ast.Raise) for s in statement.body + statement.orelse)
    return False


def root_name(node: ast.AST) -> str | None:
    """The name an attribute/subscript chain starts from: ``self`` for ``self.state[p]``."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CACHE_READS:
            node = node.func.value
        else:
            break
    return node.id if isinstance(node, ast.Name) else None


def is_lazy_initialisation(test: ast.AST, body: list[ast.stmt], persistent: set[str]) -> bool:
    """The branch fills a cache that outlives the call when it misses or is stale, so it
    runs once (per key, per shape, per device), not every step.

    ``persistent``: the names whose state outlives the call (``self``, ``cls``, and
    local aliases of their state such as ``state = self.state[p]``). The test must say
    an entry is missing (``self.x is None``, ``key not in self.table``, ``not
    hasattr(self, "x")``, ``not self.x``) and the body fill it; in an ``or``, every other
    clause must be a miss or a staleness check (``self.table.shape[1] != n``), since
    ``if self.x is None or self.training:`` runs on every training step.
    """
    conditions = _conditions(test)
    missing_entries = [_missing_entry(condition) for condition in conditions]
    if all(missing is None for missing in missing_entries):
        return False  # nothing said to be missing (most tests): the body need not be read
    pairs = _assignments(body)
    kept = [(target, value) for target, value in pairs if root_name(target) in persistent]
    if not kept:
        return False
    is_or = isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)
    filled = False
    for condition, missing in zip(conditions, missing_entries):
        if missing is not None and _fills(missing, pairs, kept, persistent):
            filled = True
        elif is_or and missing is None and not _is_staleness_check(condition):
            return False
    return filled


def returns_on_cuda(statement: ast.stmt, rest: list[ast.stmt]) -> bool:
    """``if torch.cuda.is_available(): return decode_cuda(...)`` (retinanet-examples'
    ``decode`` and ``nms``), or any :func:`cuda_only_check` whose block, with no ``else``,
    always returns or raises: the statements after it (``rest``) run only off a CUDA device,
    the Python fallback."""
    return (isinstance(statement, ast.If) and not statement.orelse and bool(statement.body)
            and isinstance(statement.body[-1], (ast.Return, ast.Raise))
            and not any(isinstance(node, (ast.Break, ast.Continue)) for node in statement.body)
            and cuda_only_check(statement.test, rest))


def fills_after_a_hit(statement: ast.stmt, rest: list[ast.stmt], persistent: set[str]) -> bool:
    """``if self.cell_anchors is not None: return`` (nnDetection's anchor generator), then
    the rest of the block computes and stores ``self.cell_anchors``: what follows the early
    return runs only on a miss, as the body of ``if self.cell_anchors is None:`` would
    (:func:`is_lazy_initialisation`, asked of the test's negation). Or a cache that grows
    (:func:`_grows_after_a_hit`)."""
    if not (isinstance(statement, ast.If) and not statement.orelse and statement.body and rest):
        return False
    if _grows_after_a_hit(statement, rest, persistent):
        return True
    if not isinstance(statement.body[-1], ast.Return):
        return False
    missed = _negated(statement.test)
    if missed is None:
        return False
    # Only what every miss stores counts (not ``if not self.training: self.cache = out``, nor a
    # store after ``if n > 0: return out``), and it must store all the hit reads (``and
    # self.use_cache``: a flag the rest never sets misses on every call while it is off).
    # (``self.cache = None`` fills nothing: the next call misses too.)
    pairs = [(target, value) for target, value in _assignments(_run_on_every_miss(rest))
             if not (isinstance(value, ast.Constant) and value.value is None)]
    kept = [(target, value) for target, value in pairs if root_name(target) in persistent]
    missing = [_missing_entry(condition) for condition in _conditions(missed)]
    return bool(kept) and all(entry is not None and _fills(entry, pairs, kept, persistent) for entry in missing)


#: Methods that read a tensor's size (``self.pe.size(1)``, ``self.pe.numel()``); ``.shape`` and ``len()``
#: are read by :func:`_size_of` too.
_SIZE_METHODS = frozenset({"size", "numel"})


def _grows_after_a_hit(statement: ast.If, rest: list[ast.stmt], persistent: set[str]) -> bool:
    """ESPnet's ``PositionalEncoding.extend_pe`` (copied into wenet, FunASR, CosyVoice,
    auto_avsr...): ``if self.pe is not None: if self.pe.size(1) >= x.size(1): ...; return``,
    then the rest builds a longer table and stores ``self.pe``. The nested tests are one
    ``and``; each clause must say the state is there (``self.pe is not None``) or at least as
    large as the input (a size of it, ``>=`` or ``>`` something that reads a size of a
    value not in state: ``x.size(1)``, ``x.size(1) * 2 - 1``; not a capacity, which a bank
    appended to on every call reaches only after many misses), and the rest must store
    that state on every miss: it runs once per longer input, not every step (a size it is
    checked against that the rest never stores would send every longer input there)."""
    clauses, body = list(_and_clauses(statement.test)), statement.body
    while len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse:
        clauses += _and_clauses(body[0].test)
        body = body[0].body
    if not body or not isinstance(body[-1], ast.Return):
        return False
    states: list[ast.AST] = []
    sized = False
    for clause in clauses:
        if _compares_to_none(clause, ast.IsNot):
            states.append(clause.left)  # type: ignore[attr-defined]
            continue
        state = _size_of(_larger_side(clause))
        if state is None or not _reads_a_size_of_the_input(_smaller_side(clause), persistent):
            return False  # (``self.bank.size(0) >= self.capacity``: every call appends until full)
        states.append(state)
        sized = True
    if not sized or not all(isinstance(state, ast.Attribute) and root_name(state) in persistent for state in states):
        return False
    stored = {ast.dump(target) for target, _value in _assignments(_run_on_every_miss(rest))}
    return all(ast.dump(_as_store(state)) in stored for state in states)


def _smaller_side(condition: ast.AST) -> ast.AST | None:
    """The side ``a >= b`` or ``b < a`` says is the smaller (``b``), or None."""
    if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1):
        return None
    if isinstance(condition.ops[0], (ast.Gt, ast.GtE)):
        return condition.comparators[0]
    if isinstance(condition.ops[0], (ast.Lt, ast.LtE)):
        return condition.left
    return None


def _reads_a_size_of_the_input(node: ast.AST | None, persistent: set[str]) -> bool:
    """``node`` reads the size of something other than state (``x.size(1)``, ``x.size(1) * 2
    - 1``): the size the table must grow to, which one miss makes it reach."""
    return node is not None and any(
        (sized := _size_of(part)) is not None and root_name(sized) not in persistent for part in walk_nodes(node))


def _size_of(node: ast.AST | None) -> ast.AST | None:
    """``t`` of ``t.size(1)``, ``t.shape[1]``, ``t.shape``, ``len(t)`` or ``t.numel()``, else None."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return node.value
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _SIZE_METHODS:
            return node.func.value
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            return node.args[0]
    return None


def _run_on_every_miss(rest: list[ast.stmt]) -> list[ast.stmt]:
    """The simple statements of ``rest`` that run whenever it does: those before anything
    that may leave the block (``return``, ``break``, ``continue``, or a compound statement
    holding one), outside branches and loops (``with`` bodies run straight through)."""
    kept: list[ast.stmt] = []
    for statement in rest:
        if isinstance(statement, (ast.Return, ast.Break, ast.Continue)):
            break
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            kept.extend(_run_on_every_miss(statement.body))
            if _leaves(statement):
                break
            continue
        if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)) or (
            hasattr(ast, "TryStar") and isinstance(statement, ast.TryStar)
        ):
            if _leaves(statement):
                break
            continue
        kept.append(statement)
    return kept


def _negated(test: ast.AST) -> ast.AST | None:
    """The test that holds exactly when ``test`` fails, for the hits :func:`_missing_entry`
    reads the other way round (``self.x is not None``, ``key in d``, ``hasattr(self, "x")``,
    ``self.x``; ``and`` of them, by De Morgan), or None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        parts = [_negated(value) for value in test.values]
        return None if any(part is None for part in parts) else ast.BoolOp(op=ast.Or(), values=parts)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = test.ops[0]
        if isinstance(op, ast.IsNot):
            return ast.Compare(left=test.left, ops=[ast.Is()], comparators=test.comparators)
        if isinstance(op, ast.In):
            return ast.Compare(left=test.left, ops=[ast.NotIn()], comparators=test.comparators)
        return None
    if isinstance(test, (ast.Attribute, ast.Call)):
        return ast.UnaryOp(op=ast.Not(), operand=test)
    return None


def clears_its_flag(test: ast.AST, body: list[ast.stmt], persistent: set[str]) -> bool:
    """``if self.need_sync: ...; self.need_sync = False``: a one-shot flag in state that
    outlives the call, cleared unconditionally by the block it guards, so the block runs
    once, not every step, unless something sets the flag again (the caller asks
    :func:`rearmed_flags`). A local flag (``if first: ...; first = False``) is left
    alone: it is set again on every call."""
    if not (isinstance(test, ast.Attribute) and root_name(test) in persistent):
        return False
    flag = ast.dump(_as_store(test))
    for statement in body:  # the block's own statements: a clearing under a condition may not run
        if isinstance(statement, ast.Assign) and _false_constant(statement.value):
            if any(ast.dump(target) == flag for target in statement.targets):
                return True
    return False


def _false_constant(node: ast.AST | None) -> bool:
    """``False``, ``None``, ``0``, ``""``."""
    return isinstance(node, ast.Constant) and not node.value


#: Where setting a flag makes it one-shot rather than re-arms it.
_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__setstate__"})


def rearmed_flags(tree: ast.Module) -> frozenset[str]:
    """The attributes ``tree`` sets to anything but a false constant outside constructors
    (fairseq's ``backward`` sets ``self._needs_sync = True`` every step for the block that
    clears it): a flag among them is not one-shot, wherever the setting runs."""
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _CONSTRUCTORS:
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and not _false_constant(node.value):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                found.update(part.attr for part in walk_nodes(target)
                             if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store))
        stack.extend(child_nodes(node))
    return frozenset(found)


def refills_in_else(node: ast.If, persistent: set[str]) -> bool:
    """``if self.cached is not None and self.cached_len >= n: a = self.cached`` ``else:
    ... self.cached = a``: the ``else`` rebuilds a cache that outlives the call when it is
    missing or no longer fits, so it runs once per size, not every step. Every other
    clause of the test must say that state is at least as large as something
    (``self.cached_len >= n``): ``self.training`` alone would send every training step
    to the ``else``, and ``self.version == w._version`` every step that changed the key;
    only a cache that grows (the ``else`` stores that size too) is rebuilt rarely."""
    if not node.orelse:
        return False
    conditions = _conditions(node.test)
    if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or):
        return False
    present = [c.left for c in conditions if _compares_to_none(c, ast.IsNot) and root_name(c.left) in persistent]
    if not present:
        return False
    stored = {ast.dump(target) for target, _value in _assignments(node.orelse)}
    for condition in conditions:
        if _compares_to_none(condition, ast.IsNot):
            continue
        larger = _larger_side(condition)
        if not (isinstance(larger, ast.Attribute) and root_name(larger) in persistent):
            return False
        if ast.dump(_as_store(larger)) not in stored:
            return False  # the size it is checked against never grows: rebuilt on every larger input
    return any(ast.dump(_as_store(target)) in stored for target in present)


def _larger_side(condition: ast.AST) -> ast.AST | None:
    """The side ``a >= b`` or ``b < a`` says is the larger (``a``), or None."""
    if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1):
        return None
    if isinstance(condition.ops[0], (ast.Gt, ast.GtE)):
        return condition.left
    if isinstance(condition.ops[0], (ast.Lt, ast.LtE)):
        return condition.comparators[0]
    return None


def fills_loop_local(node: ast.If, loop: ast.AST) -> bool:
    """``for batch in loader: ... if features is None: features = torch.zeros(...)``: a
    local filled on the loop's first pass (``is None``, alone or in an ``and``), by a
    statement of the block itself, and bound nowhere else in the loop: the block runs
    once per loop, not once per iteration. A name the loop binds again (its target,
    ``mask = batch.get("mask")``, ``hidden, cell = None, None``) may be None on every pass."""
    # ``x is None`` must be the test or one clause of a top-level ``and`` (not inside an ``or``).
    clauses = _and_clauses(node.test)
    name = next((c.left.id for c in clauses if _compares_to_none(c, ast.Is) and isinstance(c.left, ast.Name)), None)
    if name is None:
        return False
    filled = any(
        isinstance(statement, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == name for target in statement.targets)
        and not (isinstance(statement.value, ast.Constant) and statement.value.value is None)
        for statement in node.body
    )
    if not filled:
        return False
    target = loop.target if isinstance(loop, (ast.For, ast.AsyncFor)) else None
    if target is not None and any(name in names_bound_by(part) for part in walk_nodes(target)):
        return False  # ``for images, masks in loader: if masks is None:``: a new value every pass
    block = {id(part) for part in own_nodes(node.body)}
    # The loop's own statements, nested blocks included: any other binding may be None again.
    return not any(id(other) not in block and name in names_bound_by(other) for other in own_nodes(loop.body))


def clears_loop_flag(node: ast.If, loop: ast.AST, rearmed: Collection[str] = ()) -> bool:
    """``for batch in loader: ... if first_batch and is_main(): dump(...) ... first_batch =
    False``: a local flag (the test, or a clause of a top-level ``and``) that the loop sets
    false unconditionally (a statement of the loop's body or of the block itself) and never
    sets to anything else: the block runs on the loop's first pass only (per call of the
    function, which runs a whole pass over the batches). Not when the loop binds the flag
    as its target, nor when a ``continue`` may skip the clearing, nor for a flag in
    ``rearmed`` (a nested function's ``nonlocal``: a call of it may set it again)."""
    flags = {clause.id for clause in _and_clauses(node.test) if isinstance(clause, ast.Name)}
    if not flags or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return False
    cleared = {
        target.id
        for statement in [*loop.body, *node.body]
        if isinstance(statement, ast.Assign) and _false_constant(statement.value)
        for target in statement.targets
        if isinstance(target, ast.Name)
    } & flags
    if not cleared:
        return False
    parts = own_nodes(loop.body)
    if any(isinstance(part, ast.Continue) for part in parts):
        return False  # the clearing after it may be skipped
    clearing = {
        id(target) for part in parts
        if isinstance(part, ast.Assign) and _false_constant(part.value) for target in part.targets
    }
    # Any other binding in the loop (its target, ``first = i == 0``, a ``global``) may set it again.
    return bool(cleared - _bound_in_loop(loop, parts, clearing, rearmed))


#: The largest bound :func:`bounded_by_counter` takes for "a few times per pass": a few
#: debug prints (``mistakes_printed < 5``). A larger one (``if warmed < 100000: warmed +=
#: 1``) may cover every batch of the pass.
_FEW_TIMES = 32


def bounded_by_counter(node: ast.If, loop: ast.AST, rearmed: Collection[str] = ()) -> int | None:
    """``if not correct[i] and mistakes_printed < 5: mistakes_printed += 1; print(...)``
    inside a loop over batches: a counter the block increments, tested against a small
    constant (the test, or a clause of a top-level ``and``; at most :data:`_FEW_TIMES`),
    that nothing else in the loop binds (nor a nested function, ``rearmed``) — the block
    runs at most that many times per pass over the batches. The bound, or None."""
    bounds = {}
    for clause in _and_clauses(node.test):
        if isinstance(clause, ast.Compare) and len(clause.ops) == 1 and isinstance(clause.left, ast.Name):
            limit = clause.comparators[0]
            if (isinstance(clause.ops[0], (ast.Lt, ast.LtE)) and isinstance(limit, ast.Constant)
                    and type(limit.value) is int and limit.value <= _FEW_TIMES):
                bounds[clause.left.id] = limit.value
    increments = {  # the increments' target names, by identity
        id(statement.target): statement.target.id for statement in node.body
        if incremented(statement) in bounds
    }
    counters = set(increments.values())
    if not counters or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return None
    # Any other binding in the loop (its target, a reset, a ``global``) may start the count again.
    kept = counters - _bound_in_loop(loop, own_nodes(loop.body), increments.keys(), rearmed)
    return max(bounds[name] for name in kept) if kept else None


def incremented(statement: ast.AST) -> str | None:
    """The name ``n += k`` (``k`` a positive integer literal) steps, or None."""
    if (
        isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add)
        and isinstance(statement.target, ast.Name) and is_positive_int(statement.value)
    ):
        return statement.target.id
    return None


def is_positive_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0


def _and_clauses(test: ast.AST) -> list[ast.AST]:
    """The clauses of a top-level ``and``, or the test itself (``or`` operands are not
    conditions the block needs)."""
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def _bound_in_loop(loop: ast.AST, parts: list[ast.AST], exempt: Collection[int], rearmed: Collection[str]) -> set[str]:
    """The names ``loop`` binds: its target, the bindings among ``parts`` (its body's own
    nodes) but the ``exempt`` ones (by identity), ``global``/``nonlocal`` names, and the
    ``rearmed`` names a nested function may set again."""
    target = loop.target if isinstance(loop, (ast.For, ast.AsyncFor)) else None
    bound = names_bound_in(target) if target is not None else set()
    bound.update(rearmed)
    for part in parts:
        if isinstance(part, (ast.Global, ast.Nonlocal)):
            bound.update(part.names)
        elif id(part) not in exempt:
            bound.update(names_bound_by(part))
    return bound


def _compares_to_none(condition: ast.AST, op: type[ast.cmpop]) -> bool:
    """``x is None`` (``op`` ``ast.Is``) or ``x is not None`` (``ast.IsNot``)."""
    return (
        isinstance(condition, ast.Compare)
        and len(condition.ops) == 1
        and isinstance(condition.ops[0], op)
        and isinstance(condition.comparators[0], ast.Constant)
        and condition.comparators[0].value is None
    )


def _fills(missing: tuple[str, ast.AST], pairs, kept, persistent: set[str]) -> bool:
    """The block stores what the condition says is missing into state that outlives the call."""
    kind, target = missing
    texts = {ast.dump(t) for t, _value in pairs}
    if kind == "value":
        if root_name(target) in persistent and (
            ast.dump(target) in texts
            or any(isinstance(t, ast.Subscript) and _same(t.value, target) for t, _value in kept)
        ):
            return True  # ``if self.x is None: self.x = ...``; ``if not self.cache: self.cache[k] = ...``
        return isinstance(target, ast.Name) and ast.dump(target) in texts and any(
            isinstance(value, ast.Name) and value.id == target.id for _target, value in kept
        )  # ``if x is None: x = ...; self.cache[key] = x``
    return root_name(target) in persistent and any(
        isinstance(t, ast.Subscript) and _same(t.value, target) for t, _value in kept
    )  # ``if key not in state: state[key] = ...``


def _same(a: ast.AST, b: ast.AST) -> bool:
    """The same expression, whether loaded or stored."""
    return ast.dump(_as_store(a)) == ast.dump(_as_store(b))


#: Attributes whose change makes a cached tensor stale (``cache.device != x.device``).
_STALENESS_ATTRIBUTES = frozenset({"shape", "device", "dtype", "size", "ndim", "layout"})


def _is_staleness_check(condition: ast.AST) -> bool:
    """``self.table.shape[1] != n``, ``cache.size(0) != n``, ``cache.device != x.device``."""
    if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1 and isinstance(condition.ops[0], ast.NotEq)):
        return False
    left = condition.left.value if isinstance(condition.left, ast.Subscript) else condition.left
    if isinstance(left, ast.Call):
        left = left.func
    return isinstance(left, ast.Attribute) and left.attr in _STALENESS_ATTRIBUTES


def _conditions(test: ast.AST) -> list[ast.AST]:
    """The operands of ``a or b`` / ``a and b`` (nested), or the test itself."""
    if isinstance(test, ast.BoolOp):
        return [part for value in test.values for part in _conditions(value)]
    return [test]


def _missing_entry(condition: ast.AST) -> tuple[str, ast.AST] | None:
    """What the condition says is not there yet: ("value", ``self.x``) for ``self.x is None``,
    ``not hasattr(self, "x")`` or ``not self.x``; ("container", ``d``) for ``key not in d``."""
    if isinstance(condition, ast.Compare) and len(condition.ops) == 1:
        op, right = condition.ops[0], condition.comparators[0]
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
            left = condition.left
            if _is_getattr(left):
                return "value", ast.Attribute(value=left.args[0], attr=left.args[1].value, ctx=ast.Store())
            return "value", _as_store(left)
        if isinstance(op, ast.NotIn):
            return "container", right
        return None
    if isinstance(condition, ast.UnaryOp) and isinstance(condition.op, ast.Not):
        operand = condition.operand
        if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Name) and operand.func.id == "hasattr":
            if len(operand.args) == 2 and isinstance(operand.args[1], ast.Constant) and isinstance(operand.args[1].value, str):
                return "value", ast.Attribute(value=operand.args[0], attr=operand.args[1].value, ctx=ast.Store())
            return None
        if isinstance(operand, ast.Attribute):
            return "value", _as_store(operand)
    return None


def _is_getattr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 3
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _as_store(node: ast.AST) -> ast.AST:
    """The node as an assignment target would spell it (``ast.dump`` includes the context)."""
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ast.Store())
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=node.value, attr=node.attr, ctx=ast.Store())
    if isinstance(node, ast.Subscript):
        return ast.Subscript(value=node.value, slice=node.slice, ctx=ast.Store())
    return node


def _assignments(body: list[ast.stmt]) -> list[tuple[ast.AST, ast.AST | None]]:
    """(target, assigned value) in the block (not in nested functions or classes); the
    value is None for the parts of an unpacking."""
    found: list[tuple[ast.AST, ast.AST | None]] = []
    for node in own_nodes(body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                parts = _unpacked(target)
                found.extend((part, node.value if len(parts) == 1 else None) for part in parts)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            found.extend((part, None) for part in _unpacked(node.target))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            args = node.args
            if len(args) == 3 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
                found.append((ast.Attribute(value=args[0], attr=args[1].value, ctx=ast.Store()), args[2]))
    return found


def _unpacked(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _unpacked(element)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value)
    return [target]


#: Longest string constant kept as an argument's value (longer ones are messages, not modes).
_MAX_CONSTANT_TEXT = 64


def constant_value(node: ast.AST | None) -> tuple[()] | tuple[object]:
    """``(value,)`` of a constant argument or default that can select a branch (``False``,
    ``None``, ``0``, ``"cpu"``), else ``()``: an empty tuple tells "not a constant" apart
    from the constant ``None``. A negative number is one too (``local_rank=-1``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str, type(None))):
        if not isinstance(node.value, str) or len(node.value) <= _MAX_CONSTANT_TEXT:
            return (node.value,)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) in (int, float)):
        return (-node.operand.value,)
    return ()


class ParamGuard(NamedTuple):
    """A block that runs only for some values of a parameter: ``if is_joined_rank:``
    (``test`` "truth"), ``if mask is not None:`` ("none"), ``if mode == "cpu":`` ("eq",
    against ``constant``). ``needs``: the test's outcome the block runs on."""

    first: int
    last: int
    param: str
    test: str
    constant: object
    needs: bool

    def entered(self, value: object) -> bool:
        """Whether a call passing ``value`` for the parameter runs the block."""
        if self.test == "truth":
            outcome = bool(value)
        elif self.test == "none":
            outcome = value is None
        else:
            outcome = value == self.constant
        return outcome == self.needs


def parameter_guards(node: ast.FunctionDef | ast.AsyncFunctionDef, params: Container[str]) -> list[ParamGuard]:
    """Blocks that run only for some value of a parameter the body never rebinds:
    ``if is_joined_rank: ...`` runs when it is true, its ``else`` and the body of
    ``if not flag:`` when it is false; the body of ``if a and mode == "cpu":`` only when
    ``mode == "cpu"``, the ``else`` of ``if a or b:`` only when neither holds. Not in
    nested functions."""
    found = []
    early_returns = False
    for current in function_nodes(node):
        if not isinstance(current, ast.If):
            continue
        test = current.test
        if isinstance(test, ast.BoolOp):
            # The body of an ``and`` needs every clause to hold; the ``else`` of an ``or``, none.
            conjunction = isinstance(test.op, ast.And)
            block = current.body if conjunction else current.orelse
            for clause in test.values:
                guard = _parameter_test(clause, params)
                if guard is not None and block:
                    param, kind, constant, needs = guard
                    found.append(_guard(block, param, kind, constant, needs if conjunction else not needs))
            continue
        guard = _parameter_test(test, params)
        if guard is None:
            continue
        param, kind, constant, needs = guard
        for block, outcome in ((current.body, needs), (current.orelse, not needs)):
            if block:
                found.append(_guard(block, param, kind, constant, outcome))
        early_returns = early_returns or (not current.orelse and isinstance(current.body[-1], ast.Return))
    # ``if gaussian: return fast(x)`` with no ``else``: what follows it in its block runs
    # only when the test fails.
    for block in _statement_lists(node) if early_returns else ():
        for position, statement in enumerate(block[:-1]):
            if isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return):
                guard = _parameter_test(statement.test, params)
                if guard is not None:
                    param, kind, constant, needs = guard
                    found.append(_guard(block[position + 1:], param, kind, constant, not needs))
    return found


def _statement_lists(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list[ast.stmt]]:
    """The function's body and every block nested in it (not in nested functions)."""
    found = [node.body]
    for current in function_nodes(node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(current, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt) and current is not node:
                found.append(block)
    return found


def _guard(block: list[ast.stmt], param: str, kind: str, constant: object, needs: bool) -> ParamGuard:
    return ParamGuard(block[0].lineno, block[-1].end_lineno or block[-1].lineno, param, kind, constant, needs)


def _parameter_test(test: ast.AST, params: Container[str]) -> tuple[str, str, object, bool] | None:
    """(parameter, test, constant, outcome needed for the test to hold) of ``p``, ``not p``,
    ``p is None``, ``p is not None``, ``p == "cpu"``, ``p != 0`` (either side), or None.
    ``p`` is a name, or ``self.attr`` / ``args.attr`` spelled so (see :func:`tested_name`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _parameter_test(test.operand, params)
        return None if inner is None else (*inner[:3], not inner[3])
    name = tested_name(test)
    if name is not None:
        return (name, "truth", None, True) if name in params else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Constant) and tested_name(right) is not None:
        left, right = right, left  # ``"cpu" == mode``
    name = tested_name(left)
    if name is None or name not in params:
        return None
    value = constant_value(right)
    if not value:
        return None
    if isinstance(op, (ast.Is, ast.IsNot)) and value[0] is None:
        return (name, "none", None, isinstance(op, ast.Is))
    if isinstance(op, (ast.Eq, ast.NotEq)):
        return (name, "eq", value[0], isinstance(op, ast.Eq))
    return None


def tested_name(node: ast.AST) -> str | None:
    """``mode`` for a name, ``self.stratified`` or ``args.masks`` for an attribute of a
    name, ``self.opt.masks`` for an attribute of one of ``self``'s, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = node.value
        if isinstance(owner, ast.Name):
            return f"{owner.id}.{node.attr}"
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
            return f"self.{owner.attr}.{node.attr}"
    return None


class GuardSubjects:
    """What :func:`parameter_guards` looks for: ``params``, every ``self.attr`` of a
    method (a flag attribute), and the attributes of ``receivers`` (``args.masks``: a
    command-line flag, see :mod:`synclint.project.command_flags`) and, in a method, of
    ``self``'s attributes (``self.opt.masks``: a flag of the namespace it was handed)."""

    def __init__(self, params: Container[str] = (), method: bool = False, receivers: Container[str] = ()) -> None:
        self.params = params
        self.method = method
        self.receivers = receivers

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        receiver, dot, _attr = name.partition(".")
        if not dot:
            return name in self.params
        return (self.method and receiver == "self") or receiver in self.receivers


#: Device types that are not a CUDA device: code only they run syncs no CUDA stream.
_OTHER_BACKENDS = frozenset({"mps", "xla", "npu", "hpu", "xpu", "cpu", "meta"})


def other_backend_check(test: ast.AST, flags: set[str]) -> bool:
    """``if mps:`` (``mps = "mps" in device.type``), ``if x.device.type == "mps":``, and
    the fallbacks for a tensor off the CUDA device, ``if not x.is_cuda:`` / ``if x.is_cpu:``
    / ``if x.device.type != "cuda":`` (``rays_d = rays_d.cuda()`` before a CUDA kernel):
    the branch runs only on another backend, or for inputs a CUDA step does not give."""
    if isinstance(test, ast.Name):
        return test.id in flags
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Attribute):
        return test.operand.attr == "is_cuda"
    if isinstance(test, ast.Attribute):
        return test.attr == "is_cpu"
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.In):
        return _backend_name(left) and _mentions_device(right)
    if isinstance(op, (ast.Eq, ast.Is)):
        return (_backend_name(right) and _mentions_device(left)) or (_backend_name(left) and _mentions_device(right))
    if isinstance(op, (ast.NotEq, ast.IsNot)):
        return (_is_cuda_name(right) and _mentions_device(left)) or (_is_cuda_name(left) and _mentions_device(right))
    return False


def cuda_only_check(test: ast.AST, orelse: list[ast.stmt] | None = None) -> bool:
    """``if device_type == "cuda":`` (nanoGPT's ``get_batch``), ``if x.is_cuda:``, ``if
    x.device.type == "cuda":``, ``if "cuda" in str(device):``, ``if torch.cuda.is_available():``
    (or an ``or`` or ``and`` of such checks): the ``else`` block runs only off a CUDA device
    (``x.to(device)`` on the CPU or MPS), where nothing waits for a CUDA stream. Not an
    ``and`` with another test: ``if device.type == "cuda" and amp:`` leaves CUDA steps
    without ``amp`` to its ``else``.

    A tensor's own check (``x.is_cuda``, ``x.device.type``) says where that tensor is, not
    what the machine has: an ``else`` that copies ``x`` to a device (``x = x.to(device)``)
    runs for host tensors on a CUDA machine too. ``device == "cuda"`` is false for a
    ``torch.device`` and for ``"cuda:0"``, and ``device.type is "cuda"`` for a string built at
    run time, so those (and ``"cuda" in device_ids``, a collection) do not count."""
    if isinstance(test, ast.BoolOp):
        # (An ``and`` of such checks too: ``if torch.cuda.is_available() and value.is_cuda:``
        # (detrex's deformable attention) leaves to its ``else`` only what one of them
        # rules off CUDA.)
        return all(cuda_only_check(value, orelse) for value in test.values)
    if isinstance(test, ast.Attribute):
        return test.attr == "is_cuda" and not _copies(orelse, test.value)
    if isinstance(test, ast.Call):
        return _dotted_text(test.func) == "torch.cuda.is_available" and not test.args
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.In):
        return _is_cuda_name(left) and _names_cuda_device(right, orelse, substring=True)
    if isinstance(op, ast.Eq):
        return (_is_cuda_name(right) and _names_cuda_device(left, orelse)) or (
            _is_cuda_name(left) and _names_cuda_device(right, orelse)
        )
    return False


def _names_cuda_device(node: ast.AST, orelse, substring: bool = False) -> bool:
    """``device.type``, ``x.device.type``, ``device_type`` (a backend name); with ``in`` also
    ``str(device)`` and ``device`` (a string such as ``"cuda:0"``). Not ``device_ids`` or
    ``devices``, and not the device of a tensor that the ``else`` block copies."""
    if isinstance(node, ast.Name) and node.id.lower().endswith("device_type"):
        return True
    if isinstance(node, ast.Attribute) and node.attr == "type":
        node = node.value
    elif substring and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        if len(node.args) != 1:
            return False
        node = node.args[0]
    elif not substring:
        return False
    if isinstance(node, ast.Attribute) and node.attr == "device":
        return not _copies(orelse, node.value)
    return _device_word(node)


def _device_word(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lower().endswith(("device", "device_type"))


def _copies(body: list[ast.stmt] | None, subject: ast.AST) -> bool:
    """Whether ``body`` copies ``subject`` to a device: ``subject.to(...)``, ``subject.cuda()``
    (through ``.pin_memory()`` and the like, or of rows of it: DenseCL's
    ``label_bank[idx.cpu()].cuda()`` for a memory bank kept on the host),
    ``buffer.copy_(subject)`` or a call with a ``device=`` keyword that takes it. The
    subject's container counts for an element of it (``batch[0]``, ``batch["x"]``: in "if
    ``batch[0].is_cuda``, return; else move", the move is of ``batch``), and so does a
    comprehension over it that moves what it walks (``[t.cuda() for t in batch]``, ``{k:
    v.cuda() for k, v in batch.items()}``)."""
    text = _dotted_text(_container(subject))
    if not text or not body:
        return False
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and any(
                    _dotted_text(_container(generator.iter)) == text for generator in node.generators) and any(
                    isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr in ("to", "cuda") for inner in ast.walk(node)):
                return True
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda"):
                receiver = func.value
                while (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)) or isinstance(
                        receiver, ast.Subscript):
                    receiver = receiver.value if isinstance(receiver, ast.Subscript) else receiver.func.value
                if _dotted_text(receiver) == text:
                    return True
            takes_it = any(_dotted_text(arg) == text for arg in node.args)
            if takes_it and ((isinstance(func, ast.Attribute) and func.attr == "copy_")
                             or any(keyword.arg == "device" for keyword in node.keywords)):
                return True
    return False


def _container(node: ast.AST) -> ast.AST:
    """What ``node`` is an element of, or a walk over: ``batch`` for ``batch[0]``,
    ``batch["x"]`` and ``batch.items()``; ``node`` itself otherwise."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
              and node.func.attr in ("items", "values")):
            node = node.func.value
        else:
            return node


def _is_cuda_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "cuda"


def _backend_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in _OTHER_BACKENDS


def _mentions_device(node: ast.AST) -> bool:
    """``device.type``, ``x.device.type``, ``str(device)``, ``device``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Attribute) and node.attr == "type":
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr == "device"
    return isinstance(node, ast.Name) and "device" in node.id


def tracing_only(test: ast.AST) -> bool:
    """``if torch.jit.is_scripting() or torchvision._is_tracing():`` (not negated): the
    body runs only under TorchScript or a tracer (``torch.compiler.is_compiling()``
    runs in compiled steps, so it does not count). Every clause of an ``or`` must be one
    (``if is_in_onnx_export() or not src.is_cuda:`` is taken in eager steps too); an
    ``and`` asks as much, which may leave such a branch hot."""
    if isinstance(test, ast.BoolOp):
        return all(tracing_only(value) for value in test.values)
    if not isinstance(test, ast.Call):
        return False
    name = _dotted_text(test.func)
    return bool(TRACING_CHECK.search(name)) and "compiling" not in name


def _dotted_text(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))
