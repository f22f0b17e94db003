"""Scopes, bindings and the loop / hot-path context, updated during the traversal.

:class:`FlowState` is driven by the engine's single traversal: it is told when
a node is entered and left, and keeps

* a stack of scopes (module, class, function), each with the kinds bound so
  far and the flow-insensitive evidence of its body;
* per class, the kinds of ``self.<attr>`` assigned anywhere in it;
* the loops enclosing the current node inside the current function.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import libcst as cst

from synclint.analysis.batch_derivation import VIEW, VIEWS, derivation
from synclint.analysis.evidence import Evidence
from synclint.analysis.grown_names import grown_in_place, rebound_or_grown_in
from synclint.analysis.host_batches import host_batch_names, objects_moved, root_name, string_key
from synclint.analysis.host_lists import appended_in, growth, is_empty_list, only_grown_by_appends
from synclint.analysis.imports import ImportMap, callee_name, dotted_name
from synclint.analysis.devices import (
    DeviceInference,
    empty_construction,
    is_device_argument,
    moves_to_a_device,
    values_but_none,
)
from synclint.analysis.inference import KindInference, is_shape
from synclint.analysis.kinds import Kind
from synclint.analysis.loaders import is_loader, sets_a_start_method, yields_host_batches
from synclint.analysis.loop_bindings import loop_bindings, scope_bound_names
from synclint.analysis.step_names import STEP_NAME
from synclint.analysis.targets import target_name_nodes
from synclint.project.facts import FileFacts
from synclint.project.hotness import UNKNOWN_CONTEXT, Context
from synclint.project.loss_names import is_loss_class, is_loss_function
from synclint.project.rare_blocks import TRACING_CHECK
from synclint.traversal import walk

_COLLATE_NAME = re.compile(r"collate", re.IGNORECASE)


_TENSOR_SEQUENCE_ANNOTATION = re.compile(
    r"^(typing\.)?(List|list|Sequence|Tuple|tuple|Iterable)\[\s*(torch\.)?Tensor\s*(,\s*\.\.\.\s*)?\]$"
)
_TENSOR_DICT = r"(typing\.)?(Dict|dict)\[\s*str\s*,\s*(torch\.)?Tensor\s*\]"
_TENSOR_DICT_ANNOTATION = re.compile(_TENSOR_DICT)
_TENSOR_DICT_SEQUENCE_ANNOTATION = re.compile(
    r"(typing\.)?(List|list|Sequence|Iterable|Tuple|tuple)\[\s*" + _TENSOR_DICT + r"\s*(,\s*\.\.\.\s*)?\]"
)
#: Names that say they hold a list or tuple: ``attn_list``, ``feats_lst``, ``outputs_tuple``.
_LIST_NAME = re.compile(r"_(list|lst|tuple|seq)$", re.I)
#: ``forward`` parameters that name sizes, positions, counters and flags, not tensors
#: (``forward(self, x, H, W)``, a relative position bias's ``forward(self, i, j)``,
#: pytracking's ``forward(self, center, output_sz)``, a loss wrapper's ``struc_flag``,
#: PreSumm's layer index ``forward(self, iter, query, inputs, mask)``, CMC's ``layer``).
_SIZE_LIKE_NAME = re.compile(
    r"^([BCDHLNSTW]|[hwijk]|size|sz|shape|dim|height|width|(\w+_)?resolution|scale|stride|padding|mode|training|train|deterministic|"
    r"iter|iteration|epoch|layer|level|stage|"
    r"num_\w+|n_\w+|\w+_(size|sz|shape|dim|len|length|count|idx|index|id|only)|return_\w+|use_\w+|is_\w+|need_\w+|has_\w+|"
    r"(\w+_)?flags?)$"
)
#: Methods that run once, not per step: their findings are not hot-path hazards.
_ONCE_METHODS = frozenset({"__init__", "__repr__", "__str__", "extra_repr", "__post_init__", "reset_parameters"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# The node types enter()/leave() act on: a set lookup spares every other node a
# chain of (slow, ABC) isinstance checks. Keep in step with the two methods.
_QUIET_REGION_TYPES = frozenset({cst.Raise, cst.Assert, cst.If, cst.FunctionDef})
#: Statements whose body may not run: assignments in them do not prove host-ness.
#: (``with`` bodies always run: ``with torch.no_grad(): out = model(x).cpu()``.)
_BRANCHES = (cst.If, cst.Try, cst.TryStar, cst.Match)
_ENTERED = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While, *_BRANCHES, *_COMPREHENSIONS})
_LEFT = _ENTERED | {cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.WithItem, cst.Return, cst.Expr}


@dataclass
class Scope:
    kind: str  # "module" | "class" | "function"
    name: str
    node: cst.CSTNode
    #: What the scope's own code does with each name (collected when first asked for).
    evidence: Evidence | dict[str, Kind]
    env: dict[str, Kind] = field(default_factory=dict)
    self_attributes: dict[str, Kind] | None = field(default_factory=dict)
    loops: list[cst.CSTNode] = field(default_factory=list)
    #: Names bound to tensors known to live in host memory (``torch.tensor(data)``).
    host: set[str] = field(default_factory=set)
    #: Names bound to a tensor built visibly empty (``torch.Tensor([])``): moving one copies nothing.
    empty: set[str] = field(default_factory=set)
    #: Names bound to tensors moved to an accelerator (``x.to(device="cuda")``) and to
    #: accelerator devices (``device = torch.cuda.current_device()``): proof of a sync.
    accelerator: set[str] = field(default_factory=set)
    #: Loop variables of unknown kind: function-wide evidence does not apply to
    #: them (``for v in model.parameters()`` says nothing of ``[v for v in hyp]``).
    opaque: set[str] = field(default_factory=set)
    #: Names bound to data loaders or wrappers of them (``pbar = tqdm(loader)``).
    loaders: set[str] = field(default_factory=set)
    #: Names bound to a ``DataLoader`` whose settings rule out device tensors in its
    #: batches (``pin_memory=True``, workers: :func:`~synclint.analysis.loaders.yields_host_batches`).
    host_loaders: set[str] = field(default_factory=set)
    #: Host names that hold what a loader yields (a batch the loop moves to the device):
    #: on the host, but not "built without a device" — moving them is the loop's job.
    loader_batches: set[str] = field(default_factory=set)
    #: Host names bound to a view or a conversion of such a batch (``images =
    #: images.float()``): a view (one of :data:`~synclint.analysis.batch_derivation.VIEWS`)
    #: or the conversion's method name (see :mod:`synclint.analysis.batch_derivation`).
    batch_derived: dict[str, str] = field(default_factory=dict)
    #: Loader batches whose loop moves the batch object itself anywhere, not only as a
    #: statement (``model(data.to(device))``, ``data.apply(...)``, ``setattr(data, ...)``):
    #: PyG's ``Data`` moves its own fields and returns itself, so its fields read as
    #: attributes (``data.y``) may be on the device (see ``DeviceInference._attribute_on_host``).
    moved_objects: set[str] = field(default_factory=set)
    #: Host batches (in ``host``) whose fields at these keys the loop replaced with device
    #: values (``batch["pred"] = model(x)``): see :mod:`synclint.analysis.host_batches`.
    device_keys: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Names bound to what feeds a device: a loader Accelerate prepared, one over a dataset
    #: of CUDA tensors (``TensorDataset(x.cuda(), y.cuda())``): their batches are not host.
    device_fed: set[str] = field(default_factory=set)
    #: Module and class scopes: what their functions return (``-> Tensor``, or the
    #: kinds of their ``return`` values once the function has been analysed).
    returns: dict[str, Kind] = field(default_factory=dict)
    #: Function scopes: the kinds of the ``return`` values seen so far.
    returned: list[Kind] = field(default_factory=list)
    #: Function scopes: whether every tensor returned so far lives in host memory.
    returns_host_only: bool = True
    #: Module and class scopes: functions whose tensors all come back in host memory.
    host_returns: set[str] = field(default_factory=set)
    #: Function scopes: names on the host for the rest of the body
    #: (after ``if x.is_cuda: return ...``).
    narrowed: set[str] = field(default_factory=set)
    #: Function scopes: what the project index says of the function, once asked
    #: (rules ask at every call they look at).
    index_context: Context | None = None


class Narrowings:
    """The names the checks around the code being visited narrowed (``if isinstance(x,
    list):``), innermost last, each with the number of scopes open where it holds. A binding
    of the name at that depth ends it (``x = x[0]``: a new value); a function defined in the
    block has its own names (``def f(x): ...``). Ended entries keep their place, for the
    block's end to pop."""

    __slots__ = ("_names", "_depths")

    def __init__(self) -> None:
        self._names: list[str] = []
        self._depths: list[int] = []

    def __bool__(self) -> bool:
        return bool(self._names)

    def push(self, name: str, depth: int) -> None:
        self._names.append(name)
        self._depths.append(depth)

    def pop(self) -> None:
        self._names.pop()
        self._depths.pop()

    def holds(self, name: str, scopes: list) -> bool:
        """Whether ``name``, looked up with ``scopes`` open, is one a check narrowed."""
        for narrowed, depth in zip(reversed(self._names), reversed(self._depths)):
            if narrowed == name:
                return not any(name in scope.env for scope in scopes[depth:])
        return False

    def rebound(self, name: str, depth: int) -> None:
        """``name`` is bound anew with ``depth`` scopes open."""
        if name in self._names:
            self._names[:] = ["" if n == name and d == depth else n for n, d in zip(self._names, self._depths)]


class FlowState:
    def __init__(
        self, module: cst.Module, imports: ImportMap, path: str = "", facts: FileFacts | None = None
    ) -> None:
        self.imports = imports
        #: What the project index knows of this file: hotness of its functions,
        #: host attributes of its classes, helpers returning host tensors.
        self.facts = facts or FileFacts()
        #: ``if x.is_cuda: ... else: <here x is on the host>``: narrowed names per block.
        self._host_narrowing: dict[int, str] = {}
        self.narrowed_host: list[str] = []
        #: ``if torch.is_tensor(v): ... else: <here v is a Python value>``.
        self._python_narrowing: dict[int, str] = {}
        self.narrowed_python = Narrowings()
        #: ``if isinstance(outputs, (list, tuple)): <here outputs is a sequence>``.
        self._sequence_narrowing: dict[int, str] = {}
        self.narrowed_sequence = Narrowings()
        # The helpers see this state through weak proxies: with strong references back,
        # state and helpers would form a cycle holding the whole libcst tree, which only
        # the cyclic collector could free (a pass over every node of every file).
        self.inference = KindInference(weakref.proxy(self))
        self.devices = DeviceInference(weakref.proxy(self))
        self.scopes: list[Scope] = [
            Scope("module", "<module>", module, Evidence(module, imports))
        ]
        self.scopes[0].returns = self._annotated_returns(module.body)
        #: Every kind each module-level name was bound to (the env keeps only the last).
        self.module_bindings: dict[str, set[Kind]] = {}
        self._comprehension_saved: list[tuple[dict[str, Kind], set[str], set[str], dict[str, str]]] = []
        # Code that never runs in an eager training step: raise statements, assert
        # messages, ONNX helpers (branches taken only under TorchScript or a tracer are
        # ``_tracing_roots``).
        self._error_roots: set[int] = set()
        self._error_depth = 0
        # Code that runs once, not per step: ``__init__``, ``__repr__``.
        self._cold_roots: set[int] = set()
        self._cold_depth = 0
        self._tracing_roots: set[int] = set()  # bodies of ``if torch.jit.is_tracing():``
        self._tracing_depth = 0
        self._lambda_depth = 0
        #: Blocks of branches (``if`` bodies, ``else``, ``except`` handlers): host-ness
        #: assigned in one holds to its end, not after it (``if mps: x = x.cpu()``
        #: says nothing about the CUDA path). Snapshot of the host names at each entry.
        self._branch_blocks: set[int] = set()
        self._host_snapshots: list[tuple[set[str], set[str], set[str]]] = []
        #: Per branch block entered: ``scope.batch_derived``, the names bound and the names
        #: holding a loader's batch, on entry.
        self._derived_snapshots: list[tuple[dict[str, str], frozenset[str], frozenset[str]]] = []
        #: But an ``if`` with an ``else`` runs one of its blocks: what every block that
        #: reaches the end of the ``if`` leaves on the host is on the host after it. Per
        #: ``if`` (its identity), what each of its blocks left on the host (None: a block
        #: that returns, or raises outside any ``try``; a jump: a block that breaks or
        #: continues, with all it left on the host); per block, its ``if``.
        self._if_blocks: dict[int, int] = {}
        self._host_after_blocks: dict[int, list[set[str] | _Jump | None]] = {}
        #: The ``else`` (or ``elif``) block of an ``if`` runs instead of its body, so it sees
        #: the names as they were before the body, not as the body left them (``if start ==
        #: 'random': start = x.new(n).random_() / elif start == 'first':`` compares the
        #: string). Per such block: the bindings at the ``if`` and, once the block is
        #: entered, what the body bound (put back after the block where it bound nothing).
        #: Inside a loop an ``else`` block may run on a pass after one that ran the body: it
        #: sees the body's bindings of names bound before the loop (``prev = None``, then ``if
        #: prev is None: prev = out / else: ... prev ...``), and those before the ``if`` of the
        #: names bound earlier on the same pass (``labels = batch[1]``, then ``if args.amp:``).
        self._else_blocks: dict[int, _ElseBindings] = {}
        #: The ``else`` blocks being visited, innermost last: ``bind`` notes what each rebinds.
        self._open_else_blocks: list[_ElseBindings] = []
        #: Per loop of ``scope.loops`` being visited (by id): the names bound on its pass so far.
        self._pass_bindings: dict[int, set[str]] = {}
        self._binding_comprehension_targets = False
        #: A block that breaks or continues reaches the end of its loop (``continue`` on the
        #: last pass): per loop entered, the names an ``if`` left on the host that such a
        #: block did not, off the host after the loop. And the scope depth of each ``try``
        #: entered: a ``raise`` inside one may reach its handlers and the code after it.
        self._loop_jumps: list[set[str]] = []
        #: id(scope node) -> the names its code binds (asked of names imports bind to modules).
        self._scope_bound: dict[int, set[str]] = {}
        self._try_depths: list[int] = []
        #: (id(scope node), name): names bound to a field of a batch an enclosing ``for``
        #: loop draws (see :meth:`_field_of_a_drawn_batch`).
        self._drawn_fields: set[tuple[int, str]] = set()
        #: ``if x is not None:`` bodies -> ``x``: on the other path ``x`` is None, so what
        #: the body binds it to (``x = x.to(device)``) holds after the branch for any use.
        self._none_guards: dict[int, str] = {}

    # -- queries -------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def kind_of(self, node: cst.BaseExpression) -> Kind:
        return self.inference.kind_of(node)

    def lookup(self, name: str) -> Kind:
        """The kind bound to ``name``, searching enclosing function and module scopes."""
        if self.narrowed_python and self.narrowed_python.holds(name, self.scopes):
            return Kind.PYTHON  # the non-tensor branch of an isinstance check
        if self.narrowed_sequence and self.narrowed_sequence.holds(name, self.scopes):
            # A list or tuple: of tensors if the name was taken for a tensor (``forward(self,
            # outputs)`` given each discriminator's outputs), else of what is not known.
            unnarrowed = self._lookup(name)
            return Kind.TENSOR_SEQUENCE if unnarrowed.is_tensor or unnarrowed is Kind.TENSOR_SEQUENCE else Kind.UNKNOWN
        return self._lookup(name)

    def _lookup(self, name: str) -> Kind:
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                continue
            bound = scope.env.get(name)
            if bound is None and name in self.imports.modules and name not in self._bound_in(scope):
                # ``np.sum(...)`` is no evidence that ``np`` is a tensor: it names a module,
                # unless a scope binds it (``F = np.sum(...)`` after ``import ... as F``), even
                # further down (``loss`` of ``import loss.focal``, read before the loop body
                # binds it: the previous pass's).
                continue
            if bound is not None and bound is not Kind.UNKNOWN:
                return bound
            if bound is Kind.UNKNOWN and name in scope.opaque:
                return bound
            evidence = scope.evidence.get(name)
            if evidence is not None:
                return evidence
            if bound is Kind.UNKNOWN:
                return bound
        return Kind.UNKNOWN

    def binding_scope(self, name: str) -> Scope | None:
        """The innermost function or module scope that binds ``name`` (closures see the
        names of the functions around them; a class body's do not reach its methods)."""
        for scope in reversed(self.scopes):
            if scope.kind != "class" and name in scope.env:
                return scope
        return None

    def _bound_in(self, scope: Scope) -> set[str]:
        names = self._scope_bound.get(id(scope.node))
        if names is None:
            names = self._scope_bound[id(scope.node)] = scope_bound_names(scope.node)
        return names

    def self_attribute(self, attr: str) -> Kind:
        if self.narrowed_python and self.narrowed_python.holds(f"self.{attr}", self.scopes):
            return Kind.PYTHON  # the non-tensor branch of ``isinstance(self.scale, float)``
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                if scope.self_attributes is None:  # collected on first use: most classes never ask
                    scope.self_attributes = {}  # ``self.a = self.b * 2`` while collecting: not yet known
                    scope.self_attributes = _SelfAttributeCollector.collect(scope.node, self, scope)
                    for name, kind in _NumberOrTensorAttributes.collect(scope.node, self, scope).items():
                        scope.self_attributes.setdefault(name, kind)
                return scope.self_attributes.get(attr, Kind.UNKNOWN)
        return Kind.UNKNOWN

    @property
    def function(self) -> Scope | None:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope
        return None

    @property
    def class_name(self) -> str | None:
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope.name
        return None

    @property
    def in_loop(self) -> bool:
        return bool(self.scope.loops)

    @property
    def in_function_body(self) -> bool:
        """In the statements of a function, as the fixers see it: not at module level,
        nor in a class body (even one inside a function), nor in a lambda. Elsewhere a fix
        looks for names in the whole module (``fixers.tree.enclosing_function`` is None)."""
        return self.function is not None and self.scope.kind == "function" and not self._lambda_depth

    def qualname(self) -> str:
        """``Cls.method`` / ``outer.inner`` for the innermost function or class."""
        return ".".join(scope.name for scope in self.scopes[1:])

    def class_qualname(self) -> str | None:
        for index in range(len(self.scopes) - 1, 0, -1):
            if self.scopes[index].kind == "class":
                return ".".join(scope.name for scope in self.scopes[1 : index + 1])
        return None

    def index_context(self) -> Context:
        """What the project's call graph says of the innermost function (hot, unknown, cold)."""
        for index in range(len(self.scopes) - 1, 0, -1):
            function = self.scopes[index]
            if function.kind == "function":
                if function.index_context is None:
                    name = ".".join(scope.name for scope in self.scopes[1 : index + 1])
                    function.index_context = self.facts.function_context(name)
                return function.index_context
        return UNKNOWN_CONTEXT

    def hot_path(self) -> str | None:
        """A phrase naming the hot function we are in (``forward``, a loss, a step)."""
        function = self.function
        if function is None:
            return None
        cls = self.class_name or ""
        if function.name == "forward":
            return f"`{cls}.forward`" if cls else "`forward`"
        if is_loss_function(function.name) or (cls and is_loss_class(cls)):
            label = f"{cls}.{function.name}" if cls else function.name
            return f"loss `{label}`"
        if STEP_NAME.match(function.name):
            return f"training step `{function.name}`"
        return None

    def context_phrase(self, enclosing_only: bool = False) -> str:
        """`` (inside a loop in `Net.forward`)``-style suffix for messages.

        ``enclosing_only`` ignores the innermost loop (for findings about that loop).
        """
        parts = []
        if len(self.scope.loops) > (1 if enclosing_only else 0):
            parts.append("inside a loop")
        hot = self.hot_path()
        if hot:
            parts.append(f"in {hot}")
        return f" ({' '.join(parts)})" if parts else ""

    @contextmanager
    def comprehension_bindings(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp):
        """Temporarily bind a comprehension's targets (to type its element early)."""
        saved = self._snapshot()
        self._bind_comprehension_targets(node)
        try:
            yield
        finally:
            self._restore(saved)

    def _bind_comprehension_targets(self, node) -> None:
        # (The targets are the comprehension's own names: no rebinding in an ``else`` block
        # or on a loop's pass.)
        self._binding_comprehension_targets = True
        try:
            clause = node.for_in
            while clause is not None:
                self.bind_loop_target(clause.target, clause.iter)
                clause = clause.inner_for_in
        finally:
            self._binding_comprehension_targets = False

    def _snapshot(self) -> tuple[dict[str, Kind], set[str], set[str], dict[str, str]]:
        """Comprehension variables do not leak: save what binding them may change."""
        scope = self.scope
        return dict(scope.env), set(scope.host), set(scope.opaque), dict(scope.batch_derived)

    def _restore(self, saved: tuple[dict[str, Kind], set[str], set[str], dict[str, str]]) -> None:
        scope = self.scope
        env, host, opaque, batch_derived = saved
        scope.batch_derived.clear()
        scope.batch_derived.update(batch_derived)
        scope.env.clear()
        scope.env.update(env)
        scope.host.clear()
        scope.host.update(host)
        scope.opaque.clear()
        scope.opaque.update(opaque)

    @property
    def in_data_pipeline(self) -> bool:
        """Inside ``Dataset.__getitem__``, a ``collate`` function or a dataset class:
        code that runs in loader workers on host tensors."""
        for scope in reversed(self.scopes):
            if scope.kind == "function" and _COLLATE_NAME.search(scope.name):
                return True
            if scope.kind == "class" and _is_dataset_class(scope.node):
                return True
        return False

    def is_loader(self, node: cst.BaseExpression) -> bool:
        """A data loader, a wrapper of one, or a name bound to either."""
        known = set().union(*(scope.loaders for scope in self.scopes))
        return is_loader(node, known)

    @property
    def in_error_path(self) -> bool:
        """Code that never runs in an eager step (error messages, tracing-only branches)."""
        return self._error_depth > 0

    @property
    def in_tracing_path(self) -> bool:
        """Code that runs only under TorchScript, a tracer or an ONNX export."""
        return self._tracing_depth > 0

    @property
    def in_cold_path(self) -> bool:
        """Code that runs once rather than per step (constructors, reprs)."""
        return self._cold_depth > 0

    # -- traversal hooks -------------------------------------------------------------
    def enter(self, node: cst.CSTNode) -> None:
        node_type = type(node)
        if self._else_blocks and id(node) in self._else_blocks:
            self._else_blocks[id(node)].enter(self.scope)
            self._open_else_blocks.append(self._else_blocks[id(node)])
        if self._branch_blocks and id(node) in self._branch_blocks:
            self._host_snapshots.append((set(self.scope.host), set(self.scope.accelerator), set(self.scope.empty)))
            self._derived_snapshots.append((dict(self.scope.batch_derived), frozenset(self.scope.env),
                                            frozenset(self.scope.loader_batches)))
        if node_type in _QUIET_REGION_TYPES:
            self._mark_quiet_regions(node)
        if self._host_narrowing and id(node) in self._host_narrowing:
            self.narrowed_host.append(self._host_narrowing[id(node)])
        if self._python_narrowing and id(node) in self._python_narrowing:
            self.narrowed_python.push(self._python_narrowing[id(node)], len(self.scopes))
        if self._sequence_narrowing and id(node) in self._sequence_narrowing:
            self.narrowed_sequence.push(self._sequence_narrowing[id(node)], len(self.scopes))
        if self._error_roots or self._cold_roots or self._tracing_roots:
            node_id = id(node)
            if node_id in self._error_roots:
                self._error_depth += 1
            if node_id in self._cold_roots:
                self._cold_depth += 1
            if node_id in self._tracing_roots:
                self._tracing_depth += 1
        if node_type not in _ENTERED:
            return
        if isinstance(node, cst.FunctionDef):
            self._enter_function(node)
        elif isinstance(node, cst.ClassDef):
            self._enter_class(node)
        elif node_type is cst.Lambda:
            self._lambda_depth += 1
        elif isinstance(node, _BRANCHES):
            self._branch_blocks.update(id(block) for block in _blocks(node))
            if isinstance(node, cst.If) and node.orelse is not None:
                scope = self.scope
                # (In a loop, only the names bound earlier on the pass: see ``_else_blocks``.)
                this_pass = set(self._pass_bindings.get(id(scope.loops[-1]), ())) if scope.loops else None
                self._else_blocks[id(node.orelse)] = _ElseBindings(
                    scope, dict(scope.env), set(scope.opaque), (set(scope.host), set(scope.accelerator), set(scope.empty)),
                    this_pass)
                self._host_after_blocks[id(node)] = []
                self._if_blocks.update((id(block), id(node)) for block in _blocks(node))
            elif isinstance(node, (cst.Try, cst.TryStar)):
                self._try_depths.append(len(self.scopes))
        elif isinstance(node, (cst.For, cst.While)):
            self._loop_jumps.append(set())
            if self.scope.empty:  # the second pass sees what the first bound after a move
                self.scope.empty.difference_update(rebound_or_grown_in(node))
            if self.scope.host and not _runs_at_most_once(node):
                self.scope.host.difference_update(self._rebound_off_host(node))
            if isinstance(node, cst.For):
                self.bind_loop_target(node.target, node.iter)
                self._bind_host_batch(node)
            if not _runs_at_most_once(node):  # (a first pass and ``break``: no repetition)
                self.scope.loops.append(node)
                self._pass_bindings[id(node)] = (
                    {name.value for name in target_name_nodes(node.target)} if isinstance(node, cst.For) else set())
        elif isinstance(node, _COMPREHENSIONS):
            # The element is visited before the ``for`` clauses: bind targets first,
            # and restore the enclosing bindings on leave (comprehension names don't leak).
            self._comprehension_saved.append(self._snapshot())
            self._bind_comprehension_targets(node)
            self.scope.loops.append(node)

    def _rebound_off_host(self, loop: cst.For | cst.While) -> set[str]:
        """Host names ``loop``'s body rebinds to what is not known to be on the host (judged
        as the loop starts): from the second pass on they may hold a device tensor, before
        the rebinding too (``hidden = torch.zeros(...)`` before the loop, ``out, hidden =
        model(x, hidden)`` in it), unless a later statement of the body binds them on the
        host again. ``count += 1`` and ``boxes = boxes[keep]`` keep them there, and so does
        any ``tokens += value``: on a host tensor it is an in-place operation, which leaves it
        in host memory whatever ``value`` is (torchtitan's ``local_valid_tokens``)."""
        host, off_host = self.scope.host, set()
        # A list of host tensors the body grows with what may be on the device holds it from
        # the second pass on, before the growth too.
        off_host.update(self._grown_off_host(loop))
        for binding in loop_bindings(loop):
            if binding.name not in host or binding.in_place:
                continue
            value = binding.value
            if value is None or not self._stays_on_host(value):
                off_host.add(binding.name)
            elif binding.unconditional:  # every pass ends with it on the host again
                off_host.discard(binding.name)
        return off_host

    def _grown_off_host(self, loop: cst.For | cst.While) -> set[str]:
        """Host lists ``loop``'s body grows with what may be on the device. The values are
        judged as the loop starts, so a host name the loop rebinds (its target, or ``x =
        layer(x.cuda())`` before ``outs.append(x)``, even if ``x = x.cpu()`` follows) is
        taken for what it may hold then: not on the host."""
        host, grown = self.scope.host, appended_in(loop.body)
        rebound = {
            binding.name for binding in loop_bindings(loop)
            if binding.name in host and not binding.in_place
            and (binding.value is None or not self._stays_on_host(binding.value))
        }
        if isinstance(loop, cst.For):
            rebound.update(name.value for name in target_name_nodes(loop.target) if name.value in host)
        rebound.difference_update(name for name, _value in grown)  # (the lists themselves: judged here)
        host.difference_update(rebound)
        try:
            return {name for name, value in grown if name in host and not self._stays_on_host(value)}
        finally:
            host.update(rebound)

    def _stays_on_host(self, value: cst.BaseExpression) -> bool:
        """A value that keeps a host name on the host when bound to it, or a list of host
        tensors when appended to it: a host value or a Python one."""
        return self.kind_of(value) is Kind.PYTHON or self.devices.on_host(value)

    def _mark_quiet_regions(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Raise):
            self._error_roots.add(id(node))
        elif isinstance(node, cst.Assert) and node.msg is not None:
            self._error_roots.add(id(node.msg))
        elif isinstance(node, cst.If) and _is_tracing_check(node.test):
            self._tracing_roots.add(id(node.body))
        if isinstance(node, cst.If):
            guarded = _none_guard(node.test)
            if guarded is not None and node.orelse is None:
                self._none_guards[id(node.body)] = guarded
            # A guard names what it narrows and whether its body (True) or else-block holds there.
            for guard_of, narrowing in (
                (_python_guard, self._python_narrowing),
                (_host_guard, self._host_narrowing),
                (_sequence_guard, self._sequence_narrowing),
            ):
                guard = guard_of(node.test)
                if guard is not None:
                    name, holds_when_true = guard
                    block = node.body if holds_when_true else node.orelse
                    if block is not None:
                        narrowing[id(block)] = name
        elif isinstance(node, cst.FunctionDef):
            name = node.name.value
            # (``@script_if_tracing`` and ``@torch.jit.unused`` functions do run eagerly.)
            if name.startswith("_onnx"):
                self._error_roots.add(id(node.body))
            elif runs_once_by_name(name) or _is_test_case(self.scope.node):
                self._cold_roots.add(id(node.body))

    def leave(self, node: cst.CSTNode) -> None:
        if self._else_blocks and id(node) in self._else_blocks:
            self._else_blocks.pop(id(node)).leave(self.scope)
            self._open_else_blocks.pop()
        if self._host_after_blocks and id(node) in self._host_after_blocks:
            # ``if flag: mask = torch.zeros(n) / else: mask = torch.ones(n)``: host after
            # the ``if``, whichever block ran (an ``elif`` is the ``else``'s one ``if``,
            # joined first, so its share is what all of its own blocks left).
            blocks = self._host_after_blocks.pop(id(node))
            reaching = [host for host in blocks if isinstance(host, set)]
            if reaching:
                joined = set.intersection(*reaching)
                self.scope.host.update(joined)
                for jump in blocks:
                    if isinstance(jump, _Jump) and self._loop_jumps:
                        self._loop_jumps[-1].update(joined - jump.host)
        if self._branch_blocks and id(node) in self._branch_blocks:
            self._branch_blocks.discard(id(node))
            # What became host in the block is host only there; what stopped being host stays so.
            host, accelerator, empty = self._host_snapshots.pop()
            self._join_batch_derived(*self._derived_snapshots.pop())
            owner = self._if_blocks.pop(id(node), None)
            if owner is not None:
                self._host_after_blocks[owner].append(self._left_on_host(node, host))
            self.scope.host.intersection_update(host)
            self.scope.empty.intersection_update(empty)  # ``if not data: x = torch.zeros(0)``: one path
            guarded = self._none_guards.pop(id(node), None)
            self.scope.accelerator.intersection_update(accelerator | ({guarded} & self.scope.accelerator))
        if self._host_narrowing and id(node) in self._host_narrowing:
            del self._host_narrowing[id(node)]
            self.narrowed_host.pop()
        if self._python_narrowing and id(node) in self._python_narrowing:
            del self._python_narrowing[id(node)]
            self.narrowed_python.pop()
        if self._sequence_narrowing and id(node) in self._sequence_narrowing:
            del self._sequence_narrowing[id(node)]
            self.narrowed_sequence.pop()
        if self._error_roots or self._cold_roots or self._tracing_roots:
            node_id = id(node)
            if node_id in self._error_roots:
                self._error_roots.discard(node_id)
                self._error_depth -= 1
            if node_id in self._cold_roots:
                self._cold_roots.discard(node_id)
                self._cold_depth -= 1
            if node_id in self._tracing_roots:
                self._tracing_roots.discard(node_id)
                self._tracing_depth -= 1
        if type(node) not in _LEFT:
            return
        if isinstance(node, cst.If):
            self._narrow_after_early_exit(node)
        elif isinstance(node, (cst.Try, cst.TryStar)) and self._try_depths:
            self._try_depths.pop()
        if isinstance(node, cst.FunctionDef):
            self._record_return_kind(self.scopes.pop())
        elif isinstance(node, cst.ClassDef):
            self.scopes.pop()
        elif type(node) is cst.Lambda:
            self._lambda_depth -= 1
        elif isinstance(node, cst.Return):
            if node.value is not None and self.scope.kind == "function":
                kind = self.kind_of(node.value)
                self.scope.returned.append(kind)
                if kind.is_tensor and not self.devices.on_host(node.value):
                    self.scope.returns_host_only = False
        elif isinstance(node, (cst.For, cst.While) + _COMPREHENSIONS):
            if isinstance(node, (cst.For, cst.While)) and self._loop_jumps:
                self.scope.host.difference_update(self._loop_jumps.pop())
            loops = self.scope.loops
            if loops and loops[-1] is node:
                loops.pop()
            self._pass_bindings.pop(id(node), None)
            if isinstance(node, _COMPREHENSIONS) and self._comprehension_saved:
                self._restore(self._comprehension_saved.pop())
        elif isinstance(node, cst.Assign):
            if self.is_loader(node.value):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        self.scope.loaders.add(target.target.value)
            kind = self.kind_of(node.value)
            if kind is Kind.UNKNOWN and isinstance(node.value, cst.Call) and (
                self.returns_host_tensor(node.value) or self.devices.loss_of_host_tensors(node.value)
            ):
                kind = Kind.TENSOR  # a project helper whose tensors all come back on the host, a loss of host tensors
            # Inside a branch, host-ness holds to the end of the branch's block (see enter).
            # (``ref_imgs = sample["ref_img"]``: a field of a host batch is the loader's, its copy
            # to the device the loop's business, SL401/SL402's: see :meth:`_value_state`.)
            state = self._value_state(node.value, kind)
            on_host = state.host
            # (Read before any target is bound: ``images = images.float()`` rebinds its base.
            # What it derives from is a host batch: the loader's.)
            derived = self.batch_derivation(node.value)
            # Names keep proof of a *move* to an accelerator (``x = x.to(device)``), not of a
            # factory (``n = torch.tensor(k, device=dev)``: a scalar for a collective, often set-up).
            on_accelerator = self.devices.made_on_accelerator(node.value, factories=False) or self.devices.is_accelerator(node.value)
            fed = _feeds_a_device(node.value, self.scope.device_fed)  # also ``[(x.cuda(), y.cuda()) for x, y in loader]``
            empty = on_host and empty_construction(node.value, self.imports.qualify)
            host_batches = yields_host_batches(node.value, self.imports.qualify, lambda: not self.sets_a_start_method) or (
                self._iterator_of_a_host_loader(node.value))
            # ``images, labels = batch[0], batch[1]``, ``im, seg = im, seg``: each name takes
            # what its own value holds, read before any of them is bound.
            unpacked = self._element_states(node.value, node.targets)
            # (``images, labels = images.float(), labels.unsqueeze(1)``: each as its own value.)
            derived_elements = None if unpacked is None else [
                self.batch_derivation(element.value) for element in node.value.elements]  # type: ignore[attr-defined]
            for target in node.targets:
                names = [name.value for name in target_name_nodes(target.target)]
                (self.scope.device_fed.update if fed else self.scope.device_fed.difference_update)(names)
                self.bind(target.target, kind, node.value)
                if host_batches and isinstance(target.target, cst.Name):
                    self.scope.host_loaders.add(target.target.value)  # (after ``bind``, which forgets it)
                if isinstance(target.target, cst.Name):
                    # (Opaque only while the value's kind is unknown: a field cast or moved is a tensor.)
                    self._hold_state(target.target.value, state if kind is Kind.UNKNOWN else state._replace(opaque=False))
                    (self.scope.empty.add if empty else self.scope.empty.discard)(target.target.value)
                    if derived is not None:
                        self.scope.batch_derived[target.target.value] = derived
                    (self.scope.accelerator.add if on_accelerator else self.scope.accelerator.discard)(target.target.value)
                elif unpacked is not None:
                    self._hold_element_states(target.target, unpacked)
                    for element, element_derived in zip(target.target.elements, derived_elements or ()):
                        name = element.value.value  # type: ignore[attr-defined]  (names only)
                        if element_derived is not None:
                            self.scope.batch_derived[name] = element_derived
                        else:  # (``x, x = x.float(), y``: the last binding holds)
                            self.scope.batch_derived.pop(name, None)
                elif state.batch and isinstance(node.value, cst.Name) and _names_only(target.target):
                    # ``mel, audio = batch``: each is a field of the loader's batch (its move is
                    # SL401's copy), of unknown kind as the loader yields it.
                    fields = _ElementState(state.host, True, True, frozenset())
                    self._hold_element_states(target.target, [fields] * len(target.target.elements))
                else:
                    self._track_unpacked_host(target.target, node.value, on_host)
            self._bind_drawn_host_batch(node)
            if (
                len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and is_empty_list(node.value)
                and only_grown_by_appends(self.scope.node, node.targets[0].target.value, self.imports.qualify)
            ):
                # ``logits = []``, then only ``logits.append(out.cpu())``: a list of host tensors
                # for as long as what is appended is on the host (see leave of ``Expr``).
                self.scope.host.add(node.targets[0].target.value)
        elif isinstance(node, cst.Expr):
            grown = growth(node)
            if grown is not None and grown[0] in self.scope.host and not self._stays_on_host(grown[1]):
                self.scope.host.discard(grown[0])
        elif isinstance(node, cst.AnnAssign):
            kind = self._annotation_kind(node.annotation.annotation)
            if kind is Kind.UNKNOWN and node.value is not None:
                kind = self.kind_of(node.value)
            self.bind(node.target, kind, node.value)
        elif isinstance(node, cst.AugAssign):
            if isinstance(node.target, cst.Name):
                name = node.target.value
                self.scope.empty.discard(name)  # ``x += y`` broadcasts: it may hold elements now
                current = self.lookup(name)
                if current is Kind.UNKNOWN:
                    self.bind(node.target, self.kind_of(node.value))
                elif current is Kind.PYTHON and (added := self.kind_of(node.value)) is not Kind.PYTHON:
                    # ``loss = 0; loss += criterion(...)``: a number plus a tensor (or a value of
                    # unknown kind) is no longer known to be a number
                    self.bind(node.target, added)
                    on_host = added.is_tensor and self.devices.on_host(node.value)
                    (self.scope.host.add if on_host else self.scope.host.discard)(name)
        elif isinstance(node, cst.NamedExpr):
            self.bind(node.target, self.kind_of(node.value), node.value)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self.bind(node.asname.name, Kind.UNKNOWN)

    def _join_batch_derived(self, before: dict[str, str], bound: frozenset[str], batches: frozenset[str]) -> None:
        """A branch block ends: a name it bound to a view of a loader batch holds a view after
        it only where it held one (or nothing) on entry. A conversion on entry stays (``z =
        x.float()`` then ``if half: z = x.unsqueeze(1)``: one path copies pageable memory;
        an ``else`` block enters with what its ``if`` block left); a value of another kind
        (``z = torch.zeros(4)``) leaves no view to judge by; the batch itself is its own view
        (``if half: images = images.unsqueeze(1)``: the batch or a view of it)."""
        derived = self.scope.batch_derived
        for name, made in list(derived.items()):
            held = before.get(name, VIEW if name in batches else None)
            if made not in VIEWS or held == made:
                continue
            if held is not None and held not in VIEWS:
                derived[name] = held
            elif held is None and name in bound:
                del derived[name]

    def _narrow_after_early_exit(self, node: cst.If) -> None:
        """``if x.is_cuda: return fast(x)`` at the top of a body: below it, ``x`` is on the host."""
        function = self.function
        if function is None or node.orelse is not None or not isinstance(function.node, cst.FunctionDef):
            return
        body = function.node.body
        if not isinstance(body, cst.IndentedBlock) or not any(statement is node for statement in body.body):
            return
        guard = _host_guard(node.test)
        if guard is None or guard[1]:
            return
        last = node.body.body[-1] if isinstance(node.body, cst.IndentedBlock) and node.body.body else None
        if isinstance(last, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Return, cst.Raise)) for small in last.body
        ):
            function.narrowed.add(guard[0])

    def is_narrowed_to_host(self, name: str) -> bool:
        if name in self.narrowed_host:
            return True
        function = self.function
        return function is not None and name in function.narrowed

    # -- bindings ----------------------------------------------------------------------
    def bind(
        self,
        target: cst.BaseExpression,
        kind: Kind,
        value: cst.BaseExpression | None = None,
    ) -> None:
        if isinstance(target, cst.Name):
            # ``outputs = outputs[0]`` in the list branch, ``v = torch.as_tensor(v)`` in the
            # number branch: a new value, no longer what the check narrowed.
            self.narrowed_sequence.rebound(target.value, len(self.scopes))
            self.narrowed_python.rebound(target.value, len(self.scopes))
            # ``if batch.is_cuda: return batch`` then ``batch = batch.cuda()``: the early
            # exit narrowed the old value; where the new one lives the assignment says
            # (a cast of the host value is on the host through ``scope.host``). Not a
            # comprehension's own target (it does not leak), nor a name bound to a value on
            # the host (``x: Tensor = x.float()``, ``(x := x.float())``, which do not record
            # host-ness in ``scope.host`` as a plain assignment does): still on the host.
            if (self.function is not None and target.value in self.function.narrowed
                    and not self._binding_comprehension_targets
                    and not (value is not None and self.devices.on_host(value))):
                self.function.narrowed.discard(target.value)
            self.scope.env[target.value] = kind
            self.scope.opaque.discard(target.value)
            if not self._binding_comprehension_targets:
                for block in self._open_else_blocks:
                    if block.scope is self.scope:
                        block.rebound.add(target.value)
                for loop in self.scope.loops:
                    if id(loop) in self._pass_bindings:
                        self._pass_bindings[id(loop)].add(target.value)
            # ``model, loader = fabric.setup(model, loader)``: whatever it holds now, it is
            # no longer the ``DataLoader`` of host batches (an assignment of one says so).
            self.scope.host_loaders.discard(target.value)
            self.scope.empty.discard(target.value)  # a new value (an assignment says if it is empty)
            self.scope.batch_derived.pop(target.value, None)  # (an assignment says anew)
            self.scope.device_keys.pop(target.value, None)  # no longer the loop's batch (its loop says anew)
            if len(self.scopes) == 1:
                self.module_bindings.setdefault(target.value, set()).add(kind)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            for element, element_kind in zip(elements, self._unpacked_kinds(kind, value, len(elements))):
                if element_kind.is_tensor and isinstance(element, cst.Name) and _LIST_NAME.search(element.value):
                    # ``z, log_s_list, attn_list = model_output``: a part named a list is one
                    # (flowtron's per-flow outputs), whatever the whole was taken for.
                    element_kind = Kind.TENSOR_SEQUENCE
                self.bind(element, element_kind)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, Kind.TENSOR_SEQUENCE if kind.is_tensor else Kind.UNKNOWN)

    def _alias_of_a_batch(self, value: cst.BaseExpression) -> _ElementState | None:
        """What a name bound to ``value`` holds when ``value`` is a name that holds a loader's
        batch drawn by an enclosing loop (``sample = batch``); else None."""
        if not (isinstance(value, cst.Name) and self.is_loader_batch(value.value)
                and self._field_of_a_drawn_batch(value)):
            return None
        name = value.value
        return _ElementState(name in self.scope.host, True, name in self.scope.opaque,
                             self.scope.device_keys.get(name, frozenset()))

    def _element_states(self, value: cst.BaseExpression, targets) -> list[_ElementState] | None:
        """For ``a, b = x, y`` (one target, a tuple or list of names, and a value of as many
        elements, no starred one): what each element holds, as :meth:`leave` reads a value
        bound to one name; None for any other assignment."""
        if len(targets) != 1 or not isinstance(targets[0].target, (cst.Tuple, cst.List)):
            return None
        names = targets[0].target.elements
        if not (isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names)):
            return None
        if any(isinstance(e, cst.StarredElement) or not isinstance(e.value, cst.Name) for e in names) or any(
                isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [self._value_state(element.value, self.kind_of(element.value)) for element in value.elements]

    def _value_state(self, value: cst.BaseExpression, kind: Kind) -> _ElementState:
        """What a name bound to ``value`` (of ``kind``) holds: the batch itself for a name that
        holds one (``sample = batch``: :meth:`_alias_of_a_batch`); else a host tensor (a list
        of them too: ``qs = [p.cpu() for p in ps]``; a field of a host batch whose kind is
        unknown, ``chunk_nb = batch[3]``, is what the loader's collate built), and a field of
        a batch an enclosing ``for`` loop draws (not of one drawn once, ``fixed =
        next(iter(loader))["img"]``, moved every step: SL403's copy), opaque while its kind is
        unknown: what the loader yields may be any object (a custom batch whose ``.cuda()``
        takes no ``non_blocking``), so function-wide evidence does not make it a tensor."""
        alias = self._alias_of_a_batch(value)
        if alias is not None:
            return alias
        host = (kind.is_tensor or kind is Kind.TENSOR_SEQUENCE
                or (kind is Kind.UNKNOWN and self._batch_field(_without_copies_in_place(value)))
                ) and self.devices.on_host(value)
        field = host and self._batch_field(value) and self._field_of_a_drawn_batch(value)
        return _ElementState(host, field, field and kind is Kind.UNKNOWN, frozenset())

    def _hold_state(self, name: str, state: _ElementState) -> None:
        """Bind ``name`` (just bound) to what :meth:`_value_state` read of its value."""
        (self.scope.host.add if state.host else self.scope.host.discard)(name)
        (self.scope.loader_batches.add if state.batch else self.scope.loader_batches.discard)(name)
        (self._drawn_fields.add if state.batch else self._drawn_fields.discard)((id(self.scope.node), name))
        if state.opaque:
            self.scope.opaque.add(name)
        if state.device_keys:
            self.scope.device_keys[name] = state.device_keys

    def _hold_element_states(self, target: cst.Tuple | cst.List, states: list[_ElementState]) -> None:
        """Bind each name of ``target`` to what :meth:`_element_states` read of its value."""
        for element, state in zip(target.elements, states):
            self._hold_state(element.value.value, state)  # type: ignore[attr-defined]  (names only)

    def _track_unpacked_host(self, target: cst.BaseExpression, value: cst.BaseExpression, on_host: bool) -> None:
        """``a, b = x[0], x[1]`` (each name as its value) and ``a, b = host_tensor`` (all on the host)."""
        if not isinstance(target, (cst.Tuple, cst.List)):
            return
        names = [e.value for e in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names):
            pairs = [(name, self.kind_of(v.value).is_tensor and self.devices.on_host(v.value))
                     for name, v in zip(names, value.elements)]
        else:
            pairs = [(name, on_host) for name in names]
        for name, host in pairs:
            if isinstance(name, cst.Name):
                (self.scope.host.add if host else self.scope.host.discard)(name.value)

    def _unpacked_kinds(self, kind: Kind, value: cst.BaseExpression | None, n: int) -> list[Kind]:
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == n:
            return [self.kind_of(e.value) for e in value.elements]
        if isinstance(value, cst.Call) and self.inference.values_indices_call(value):
            return [Kind.TENSOR, Kind.INT_TENSOR] + [Kind.UNKNOWN] * (n - 2)
        if value is not None and is_shape(value):
            return [Kind.PYTHON] * n  # ``_, _, h, w = x.shape``: Python ints
        if kind is Kind.TENSOR_TUPLE:
            return [Kind.INT_TENSOR] * n
        if kind.is_tensor:
            return [kind] * n  # unpacking along dim 0 keeps the dtype (``j, k = mask.T``)
        if kind is Kind.TENSOR_SEQUENCE:
            return [Kind.TENSOR] * n
        return [Kind.UNKNOWN] * n

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """Bind ``for target in iterable``, through ``zip`` and ``enumerate``."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and isinstance(
            target, (cst.Tuple, cst.List)
        ):
            elements = [e.value for e in target.elements]
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if iterable.func.value == "zip" and len(args) == len(elements):
                for element, arg in zip(elements, args):
                    self.bind_loop_target(element, arg)
                return
            if iterable.func.value == "enumerate" and len(elements) == 2 and args:
                self.bind(elements[0], Kind.PYTHON)
                self.bind_loop_target(elements[1], args[0])
                return
        kind = self._iteration_kind(iterable)
        self.bind(target, kind)
        names = [n.value for n in target_name_nodes(target)]
        if kind is Kind.UNKNOWN:
            self.scope.opaque.update(names)
        # The items of a host tensor, or of a host batch's field of unknown kind (a tensor
        # of ids from a loader), live on the host; a name bound anew loses what it held.
        if (kind.is_tensor or kind is Kind.UNKNOWN) and self.devices.on_host(iterable):
            self.scope.host.update(names)
        else:
            self.scope.host.difference_update(names)
        self.scope.loader_batches.difference_update(names)

    def _bind_host_batch(self, node: cst.For) -> None:
        """``for n, (image, question, qid) in enumerate(loader): image = image.to(device)``:
        what the loop does not move (``qid``) stays on the host, and what it moves is on the
        host until rebound (see :mod:`synclint.analysis.host_batches`). (A dataset that
        makes CUDA tensors itself leaves nothing for the loop to move.)"""
        if not self.is_loader(node.iter) or _feeds_a_device(node.iter, self.scope.device_fed):
            return
        counters = frozenset()  # (``i`` of ``for i, batch in enumerate(loader)``)
        if _enumerates(node.iter) and isinstance(node.target, (cst.Tuple, cst.List)) and node.target.elements:
            counters = frozenset(name.value for name in target_name_nodes(node.target.elements[0].value))
        batches = host_batch_names(
            node.body, {name.value for name in target_name_nodes(node.target)}, self._iterates_a_host_loader(node.iter),
            counters=counters,
        )
        self._hold_host_batches(batches, node.body)

    def _hold_host_batches(self, batches: dict[str, frozenset[str]], body: cst.BaseSuite) -> None:
        """The names of ``batches`` (see :func:`host_batch_names`) hold a loader's host batches in
        ``body``: their device keys, and whether ``body`` moves the batch object itself."""
        self.scope.host.update(batches)
        self.scope.loader_batches.update(batches)
        self.scope.moved_objects.difference_update(batches)
        self.scope.moved_objects.update(objects_moved(body, set(batches)))
        for name, keys in batches.items():
            if keys:
                self.scope.device_keys[name] = keys
            else:
                self.scope.device_keys.pop(name, None)

    @functools.cached_property
    def sets_a_start_method(self) -> bool:
        """The file sets the start method of its processes (``spawn``): its loaders' workers
        may not be forked (see :func:`~synclint.analysis.loaders.yields_host_batches`)."""
        return sets_a_start_method(self.scopes[0].node)

    def _iterator_of_a_host_loader(self, node: cst.BaseExpression) -> bool:
        """``iter(DataLoader(ds, pin_memory=True))`` or ``iter(loader)`` of a loader of host
        batches: what ``next`` draws from it are that loader's batches."""
        if not (isinstance(node, cst.Call) and dotted_name(node.func) == "iter" and len(node.args) == 1
                and node.args[0].keyword is None and not node.args[0].star):
            return False
        source = node.args[0].value
        return yields_host_batches(source, self.imports.qualify, lambda: not self.sets_a_start_method) or (
            self._iterates_a_host_loader(source))

    def _bind_drawn_host_batch(self, node: cst.Assign) -> None:
        """``batch, wid = next(data_iter)`` of ``data_iter = iter(DataLoader(..., pin_memory=True))``
        (pydreamer's training loop draws its batches by hand): a batch of a loader of host
        batches, as a ``for`` loop over the loader would bind it (:meth:`_bind_host_batch`).
        Its fields stay on the host but where the outermost enclosing loop (or, outside one,
        the function) stores device values in it or changes it in place."""
        value = node.value
        if not (isinstance(value, cst.Call) and dotted_name(value.func) == "next" and value.args
                and value.args[0].keyword is None and not value.args[0].star):
            return
        source = value.args[0].value  # ``data_iter``, or ``iter(loader)`` itself
        if not (self._iterator_of_a_host_loader(source) or (isinstance(source, cst.Name) and self._iterates_a_host_loader(source))):
            return
        loops = [loop for loop in self.scope.loops if isinstance(loop, (cst.For, cst.While))]
        # (The outermost loop: a batch drawn in an inner loop lives on in the outer one, which
        # may move it in place after the inner loop ends.)
        body = loops[0].body if loops else getattr(self.scope.node, "body", None)
        if not isinstance(body, cst.BaseSuite):
            return
        if isinstance(source, cst.Name) and loops and self._rebinds_off_a_host_loader(loops[0], source.value):
            return  # (``data_iter = CudaPrefetcher(loader)`` later in the loop: the next pass draws from that)
        names = {name.value for target in node.targets for name in target_name_nodes(target.target)}
        self._hold_host_batches(host_batch_names(body, names, host_loader=True, drawn_by=node), body)

    def _rebinds_off_a_host_loader(self, loop: cst.For | cst.While, name: str) -> bool:
        """``loop`` binds ``name`` (an iterator ``next`` draws from) to anything but an
        iterator of a loader of host batches, anywhere in it: a later pass may draw from
        that (``data_iter = CudaPrefetcher(loader)``). ``data_iter = iter(loader)`` where
        the loader runs out draws the same batches."""
        found = False

        class _Rebinds(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_Assign(inner, node: cst.Assign) -> None:
                nonlocal found
                bound = {n.value for target in node.targets for n in target_name_nodes(target.target)}
                if name in bound and not (
                    len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                    and self._iterator_of_a_host_loader(node.value)
                ):
                    found = True

            def visit_AugAssign(inner, node: cst.AugAssign) -> None:
                nonlocal found
                found = found or (isinstance(node.target, cst.Name) and node.target.value == name)

            def visit_NamedExpr(inner, node: cst.NamedExpr) -> None:
                nonlocal found
                found = found or (isinstance(node.target, cst.Name) and node.target.value == name)

            def visit_For(inner, node: cst.For) -> None:
                nonlocal found
                found = found or name in {n.value for n in target_name_nodes(node.target)}

            def visit_WithItem(inner, node: cst.WithItem) -> None:
                nonlocal found
                if node.asname is not None:
                    found = found or name in {n.value for n in target_name_nodes(node.asname.name)}

        walk(loop.body, _Rebinds())
        return found

    def _iterates_a_host_loader(self, node: cst.BaseExpression) -> bool:
        """``loader``, ``enumerate(loader, 1)`` or ``tqdm(enumerate(loader))`` of a name the
        innermost scope binding it bound to a loader of host batches. Only such wrappers
        pass the loader's own batches on: ``CudaPrefetcher(loader)`` uploads them."""
        while (
            isinstance(node, cst.Call)
            and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in _PASSING_WRAPPERS
            and node.args
            and node.args[0].keyword is None
            and not node.args[0].star
        ):
            node = node.args[0].value
        if not isinstance(node, cst.Name):
            return False
        scope = self.binding_scope(node.value)
        return scope is not None and node.value in scope.host_loaders

    def _left_on_host(self, block: cst.CSTNode, before: set[str]) -> set[str] | _Jump | None:
        """What a block of an ``if`` with an ``else`` hands the code after the ``if``: the
        names it put on the host (``before``: the host names as it started); nothing if it
        returns, or raises where no ``try`` of this function may catch it; a :class:`_Jump`
        if it breaks or continues, which reaches the code after its loop instead."""
        last = _exit_of(block)
        if isinstance(last, (cst.Break, cst.Continue)):
            return _Jump(set(self.scope.host))
        if isinstance(last, cst.Return) or (
            isinstance(last, cst.Raise) and not (self._try_depths and self._try_depths[-1] == len(self.scopes))
        ):
            return None
        return self.scope.host - before

    def holds_an_empty_tensor(self, name: str) -> bool:
        """``name`` was last bound, in this scope and on every path to here, to a tensor
        built visibly empty, and nothing grows it in place (``x.resize_(n)``, ``out=x``)."""
        return name in self.scope.empty and name not in grown_in_place(self.scope.node)

    def _batch_field(self, node: cst.BaseExpression) -> bool:
        """``batch[3]``, ``batch["H"]``, or ``batch["H"] if "H" in batch else None``, of a
        host batch (see :meth:`_bind_host_batch`)."""
        if isinstance(node, cst.IfExp):
            values = values_but_none(node)
            return bool(values) and all(self._batch_field(v) for v in values)
        batch, indexed = root_name(node, cst.Subscript)
        return indexed and batch is not None and self.is_loader_batch(batch) and not self.device_field(node)

    def _field_of_a_drawn_batch(self, node: cst.BaseExpression) -> bool:
        """``batch["img"]`` (or a field of such a field) of a batch an enclosing ``for``
        loop of this scope draws (``for batch in loader:``): its move is that loop's copy
        (SL401's). Not of a batch drawn once (``sample = next(iter(loader))``) or by ``next``
        in a loop over steps."""
        if isinstance(node, cst.IfExp):
            values = values_but_none(node)
            return bool(values) and all(self._field_of_a_drawn_batch(v) for v in values)
        batch, _indexed = root_name(node, cst.Subscript)
        if batch is None:
            return False
        if (id(self.scope.node), batch) in self._drawn_fields:
            return True
        return any(
            isinstance(loop, cst.For) and batch in {name.value for name in target_name_nodes(loop.target)}
            for loop in self.scope.loops
        )

    def device_field(self, node: cst.BaseExpression) -> bool:
        """``batch["pred"]`` (or ``batch["pred"][0]``, ``batch[k]``) of a host batch whose
        field at that key the loop replaced with a device value, or at a key it does not
        spell (see :func:`~synclint.analysis.host_batches.host_batch_names`)."""
        while isinstance(node, cst.Subscript) and not isinstance(node.value, cst.Name):
            node = node.value
        if not isinstance(node, cst.Subscript):
            return False
        keys = self.device_keys(node.value.value)
        if not keys:
            return False
        key = string_key(node)
        return key is None or key in keys

    def device_keys(self, name: str) -> frozenset[str]:
        """The keys at which the loop stored device values in host batch ``name``, as the
        scope binding it says (a closure in the loop reads the loop's batch)."""
        scope = self.binding_scope(name)
        return scope.device_keys.get(name, frozenset()) if scope is not None else frozenset()

    def object_moved(self, name: str) -> bool:
        """The loop over ``name``'s loader moves the batch object itself (see ``Scope.moved_objects``)."""
        return name in self.scope.moved_objects

    def is_loader_batch(self, name: str) -> bool:
        """``name`` holds what a loader yields, on the host (see :meth:`_bind_host_batch`)."""
        return name in self.scope.loader_batches

    def batch_derivation(self, node: cst.BaseExpression) -> str | None:
        """What ``node`` makes of the host batch an enclosing ``for`` loop draws from a loader:
        :data:`~synclint.analysis.batch_derivation.VIEW` (``images.unsqueeze(1)``, the
        loader's own memory), the method of a conversion (``"float"`` for ``images.float()``,
        or a name bound to one), or None (see :mod:`synclint.analysis.batch_derivation`)."""
        if isinstance(node, cst.Name):
            return self.scope.batch_derived.get(node.value)
        return derivation(node, self._batch_origin)

    def _batch_origin(self, base: cst.BaseExpression) -> str | None:
        if isinstance(base, cst.Name) and base.value in self.scope.batch_derived:
            return self.scope.batch_derived[base.value]
        # (On the host still: ``out, y = accelerator.gather_for_metrics((out, y))`` leaves ``y``
        # among the loader's batches, unpacked from a call, but not on the host.)
        if not self._field_of_a_drawn_batch(base) or not self.devices.on_host(base):
            return None
        if isinstance(base, cst.Name):
            return VIEW if self.is_loader_batch(base.value) else None
        return VIEW if self._batch_field(base) else None

    def _iteration_kind(self, iterable: cst.BaseExpression) -> Kind:
        """Kind of the loop variable for ``for x in iterable``."""
        kind = self.kind_of(iterable)
        if kind.is_tensor:
            return kind
        if kind is Kind.TENSOR_SEQUENCE:
            return Kind.TENSOR
        if kind is Kind.TENSOR_DICT_SEQUENCE:
            return Kind.TENSOR_DICT
        if kind.is_host_array:
            # The rows of a host array, or its numpy scalars (``for tgt in targets.cpu().numpy():
            # tgt.item()``, LAVIS's classification task): host values. (A DataFrame's items are
            # its column labels; a Series', its values: host values too.)
            return Kind.NUMPY
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            if iterable.func.value == "range":
                return Kind.PYTHON
        return Kind.UNKNOWN

    def _annotation_kind(self, annotation: cst.BaseExpression) -> Kind:
        text = _annotation_text(annotation)
        if text is None:
            return Kind.UNKNOWN
        optional = re.fullmatch(r"(typing\.)?Optional\[(.*)\]", text.strip())
        if optional:
            text = optional.group(2).strip()
        if _TENSOR_SEQUENCE_ANNOTATION.search(text):
            return Kind.TENSOR_SEQUENCE
        if _TENSOR_DICT_SEQUENCE_ANNOTATION.fullmatch(text):
            return Kind.TENSOR_DICT_SEQUENCE
        if _TENSOR_DICT_ANNOTATION.fullmatch(text):
            return Kind.TENSOR_DICT
        if re.search(r"\[", text) and not re.fullmatch(r"(typing\.)?Optional\[\s*(torch\.)?Tensor\s*\]", text):
            return Kind.UNKNOWN  # containers of mixed things: say nothing
        if re.search(r"\bTensor\b", text):
            return Kind.TENSOR
        if re.search(r"\b(ndarray|NDArray)\b", text):
            return Kind.NUMPY
        if re.fullmatch(r"(int|float|bool|str|complex)(\s*\|\s*None)?|Optional\[(int|float|bool|str)\]", text):
            return Kind.PYTHON
        return Kind.UNKNOWN

    # -- scopes -------------------------------------------------------------------------
    def _enter_function(self, node: cst.FunctionDef) -> None:
        scope = Scope("function", node.name.value, node, Evidence(node, self.imports))
        in_class = self.scope.kind == "class"
        is_forward = (
            in_class
            and node.name.value == "forward"
            and not any(_decorator_name(d) == "staticmethod" for d in node.decorators)
            and not self._class_is_autograd_function()
        )
        params = node.params
        every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        for index, param in enumerate(every):
            name = param.name.value
            kind = Kind.UNKNOWN
            if param.annotation is not None:
                kind = self._annotation_kind(param.annotation.annotation)
            qualified = (self._function_qualname(node.name.value), name)
            if qualified in self.facts.tensor_params:
                kind = Kind.TENSOR  # every call site in the project passes a tensor (even to ``n: int``)
            elif qualified in self.facts.number_params:
                kind = Kind.PYTHON  # every call site passes a number (even to ``forward(self, n)``)
            elif param.annotation is not None:
                pass
            elif param.default is not None:
                default = self.kind_of(param.default)
                kind = default if default is Kind.PYTHON and not _is_none(param.default) else Kind.UNKNOWN
            elif is_forward and index > 0 and scope.evidence.get(name) is Kind.TENSOR_SEQUENCE:
                kind = Kind.TENSOR_SEQUENCE  # ``forward(self, feats)`` given to ``torch.cat(feats, 1)``
            elif (
                is_forward
                and index > 0
                and scope.evidence.get(name) is not Kind.PYTHON
                and not _SIZE_LIKE_NAME.match(name)
            ):
                kind = Kind.TENSOR  # forward(self, x, ...): inputs are tensors (not dicts, not sizes)
            scope.env[name] = kind
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.env[star.name.value] = Kind.UNKNOWN
        self.scopes.append(scope)

    def _function_qualname(self, name: str) -> str:
        """The qualname of a function being entered (its scope is not pushed yet)."""
        return ".".join([*(scope.name for scope in self.scopes[1:]), name])

    def _class_is_autograd_function(self) -> bool:
        node = self.scope.node
        return isinstance(node, cst.ClassDef) and any(
            (dotted_name(base.value) or "").endswith("Function") for base in node.bases
        )

    def _enter_class(self, node: cst.ClassDef) -> None:
        scope = Scope("class", node.name.value, node, {})
        self.scopes.append(scope)
        scope.self_attributes = None
        scope.returns = self._annotated_returns(node.body.body)

    def _annotated_returns(self, statements) -> dict[str, Kind]:
        """``def f(...) -> Tensor`` defined in these statements, usable before the def."""
        found = {}
        for statement in statements:
            if isinstance(statement, cst.FunctionDef) and statement.returns is not None:
                kind = self._annotation_kind(statement.returns.annotation)
                if kind is not Kind.UNKNOWN:
                    found[statement.name.value] = kind
        return found

    def _record_return_kind(self, function: Scope) -> None:
        """After analysing ``function``, remember what it returns for later callers."""
        owner = self.scope
        name = function.name
        if name in owner.returns or not function.returned:
            return
        # Tensors and Python values only: a returned tuple says too little about
        # its parts (``return idx, b, c`` mixes host indices and factors).
        kinds = set(function.returned)
        if not all(kind.is_tensor or kind is Kind.PYTHON for kind in kinds):
            return
        if len(kinds) == 1:
            owner.returns[name] = kinds.pop()
        elif all(kind.is_tensor for kind in kinds):
            owner.returns[name] = Kind.TENSOR
        if owner.returns.get(name, Kind.UNKNOWN).is_tensor and function.returns_host_only:
            owner.host_returns.add(name)  # ``torch.randperm(n)``-style helpers

    def function_return(self, name: str) -> Kind:
        """What a call of the function ``name`` (module-level or nested) returns."""
        for scope in reversed(self.scopes):
            if scope.kind != "class" and name in scope.returns:
                return scope.returns[name]
        return Kind.UNKNOWN

    def returns_host_tensor(self, call: cst.Call) -> bool:
        """A call of a project function whose tensors all live in host memory (always,
        or given the host arguments this call passes)."""
        func = call.func
        if self.facts.host_calls or self.facts.host_when:
            target = self.project_target(func)
            if target is not None:
                if target in self.facts.host_calls:
                    return True
                condition = self.facts.host_when.get(target)
                if condition is not None and self.devices.arguments_keep_host(call, condition):
                    return True
        if isinstance(func, cst.Name):
            return any(func.value in scope.host_returns for scope in self.scopes if scope.kind != "class")
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            for scope in reversed(self.scopes):
                if scope.kind == "class":
                    return func.attr.value in scope.host_returns
        return False

    def project_target(self, func: cst.BaseExpression) -> str | None:
        """How the project facts spell a call of ``func``: ``helper``, ``utils.item``,
        ``Cls:self.method`` for methods."""
        target = dotted_name(func)
        if target is not None and target.startswith("self."):
            return f"{self.class_qualname()}:{target}"
        return target

    def method_return(self, name: str) -> Kind:
        """What ``self.name(...)`` returns, from the enclosing class."""
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope.returns.get(name, Kind.UNKNOWN)
        return Kind.UNKNOWN


#: Wrappers of an iterable that yield its items as they are (with a count, a progress bar).
_PASSING_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "track"})


def _enumerates(iterable: cst.BaseExpression) -> bool:
    """``enumerate(loader)``, also inside the other :data:`_PASSING_WRAPPERS` (``tqdm(enumerate(
    loader))``): what it yields starts with a running count (as the project index's
    ``summary._enumerates`` reads it)."""
    while isinstance(iterable, cst.Call) and iterable.args and callee_name(iterable.func) in _PASSING_WRAPPERS:
        if callee_name(iterable.func) == "enumerate":
            return True
        iterable = iterable.args[0].value
    return False


@dataclass
class _Jump:
    """A block of an ``if`` that breaks or continues, and what it left on the host."""

    host: set[str]


_UNBOUND = object()


@dataclass
class _ElseBindings:
    """The names an ``if``'s ``else`` block sees: those bound before the ``if``. After the
    block, a name it left alone holds what the body bound (the later binding in the text,
    as everywhere else in this single pass), and one it rebound holds its own."""

    scope: Scope
    env: dict[str, Kind]
    opaque: set[str]
    #: ``host``, ``accelerator`` and ``empty`` at the ``if``: the block sees them too (``counts
    #: = torch.zeros(n)`` stays a host tensor there when the body binds ``counts = 'none'``).
    residency: tuple[set[str], set[str], set[str]]
    #: In a loop, the names bound earlier on its pass, the only ones the block sees as they
    #: were at the ``if`` (None: all names; see ``FlowState._else_blocks``).
    this_pass: set[str] | None = None
    body: dict[str, object] | None = None  # name -> what the body bound it to (_UNBOUND: nothing)
    body_opaque: set[str] | None = None
    body_residency: tuple[set[str], set[str], set[str]] | None = None
    #: The names the block binds (noted by ``FlowState.bind``): a kind alone cannot tell,
    #: since ``x = torch.ones(n)`` in the block may rebind a tensor to a tensor.
    rebound: set[str] = field(default_factory=set)

    def enter(self, scope: Scope) -> None:
        env = scope.env
        changed = {name for name in env.keys() | self.env.keys()
                   if env.get(name, _UNBOUND) is not self.env.get(name, _UNBOUND)}
        changed.update(scope.opaque ^ self.opaque)  # (``for v in items()`` over an unknown name)
        if self.this_pass is not None:
            changed &= self.this_pass
        self.body = {name: env.get(name, _UNBOUND) for name in changed}
        self.body_opaque = set(scope.opaque)
        for name in changed:
            _put(env, name, self.env.get(name, _UNBOUND))
            (scope.opaque.add if name in self.opaque else scope.opaque.discard)(name)
        current = (scope.host, scope.accelerator, scope.empty)
        self.body_residency = tuple(set(names) for names in current)  # type: ignore[assignment]
        for names, before in zip(current, self.residency):
            differing = names ^ before
            if self.this_pass is not None:
                differing &= self.this_pass
            for name in differing:
                (names.add if name in before else names.discard)(name)

    def leave(self, scope: Scope) -> None:
        env = scope.env
        for name, bound in (self.body or {}).items():
            if name not in self.rebound:  # the block left it alone
                _put(env, name, bound)
                (scope.opaque.add if name in (self.body_opaque or ()) else scope.opaque.discard)(name)
        # What the body took off the host (or the accelerator) is off it after the ``if``, as
        # when the block started so; what each block put there joins later (``FlowState.leave``).
        if self.body_residency is not None:
            current = (scope.host, scope.accelerator, scope.empty)
            for names, before, body in zip(current, self.residency, self.body_residency):
                names.difference_update(before - body)


def _put(env: dict[str, Kind], name: str, value: object) -> None:
    if value is _UNBOUND:
        env.pop(name, None)
    else:
        env[name] = value  # type: ignore[assignment]


def _exit_of(block: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """The last statement of a block of an ``if`` when it returns, raises, breaks or
    continues: the block never reaches the code after the ``if``."""
    if isinstance(block, cst.Else):
        block = block.body
    if isinstance(block, cst.SimpleStatementSuite):  # ``else: raise ValueError(mode)``
        last = block.body[-1] if block.body else None
    elif isinstance(block, cst.IndentedBlock) and block.body and isinstance(block.body[-1], cst.SimpleStatementLine):
        last = block.body[-1].body[-1] if block.body[-1].body else None
    else:
        return None
    return last if isinstance(last, (cst.Return, cst.Raise, cst.Break, cst.Continue)) else None


def _blocks(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The blocks of a branching statement, each of which may run without the others."""
    if isinstance(node, cst.If):
        return [node.body] + ([node.orelse] if node.orelse is not None else [])
    if isinstance(node, (cst.Try, cst.TryStar)):
        blocks = [node.body, *node.handlers]
        return blocks + [part for part in (node.orelse, getattr(node, "finalbody", None)) if part is not None]
    if isinstance(node, cst.Match):
        return list(node.cases)
    return []


def _none_guard(test: cst.BaseExpression) -> str | None:
    """``x`` for ``if x is not None:``."""
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return test.left.value
    return None


def _is_tracing_check(test: cst.BaseExpression) -> bool:
    """``if torch.jit.is_scripting() or torchvision._is_tracing():`` (not negated). Every
    clause of an ``or`` must be one: ``if is_in_onnx_export() or not x.is_cuda:`` is taken
    in eager steps too (an ``and`` asks as much, which may leave such a branch hot)."""
    if isinstance(test, cst.BooleanOperation):
        return _is_tracing_check(test.left) and _is_tracing_check(test.right)
    return (
        isinstance(test, cst.Call)
        and bool(TRACING_CHECK.search(dotted_name(test.func) or ""))
        and "compiling" not in (dotted_name(test.func) or "")
    )


_NUMBER_TYPES = frozenset({"int", "float", "bool", "complex", "numbers.Number", "Number", "numbers.Real", "str"})


def _without_not(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """``test`` without its leading ``not``s, and whether their number is odd."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    return test, negated


def _isinstance_types(call: cst.Call) -> list[str]:
    """The dotted names of the types an ``isinstance(v, T)`` or ``isinstance(v, (T, U))``
    call tests (``""`` for one that is not a dotted name)."""
    kinds = call.args[1].value
    types = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return [dotted_name(t) or "" for t in types]


def _python_guard(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(name, whether the true branch has a Python value) for ``isinstance(v, (int, float))``,
    ``torch.is_tensor(v)`` and ``isinstance(v, torch.Tensor)`` (Python in the else branch)."""
    test, negated = _without_not(test)
    if not isinstance(test, cst.Call) or not test.args:
        return None
    subject = test.args[0].value
    if isinstance(subject, cst.Name):
        name = subject.value
    elif _self_attribute_name(subject) is not None:
        name = f"self.{_self_attribute_name(subject)}"  # ``isinstance(self.scale, float)``
    else:
        return None
    func = dotted_name(test.func) or ""
    if func.endswith("is_tensor") and len(test.args) == 1:
        return name, negated  # python when false
    if func != "isinstance" or len(test.args) != 2:
        return None
    names = _isinstance_types(test)
    if all(n in _NUMBER_TYPES for n in names):
        return name, not negated
    if all(n.endswith("Tensor") for n in names):
        return name, negated
    return None


#: Types whose instances are sequences: ``isinstance(x, (list, tuple))`` says ``x`` is no tensor.
_SEQUENCE_TYPES = frozenset({"list", "tuple", "List", "Tuple", "Sequence", "typing.Sequence", "abc.Sequence",
                             "collections.abc.Sequence", "typing.List", "typing.Tuple"})


def _sequence_guard(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(name, whether the true branch has a sequence) for ``isinstance(v, (list, tuple))``
    and ``not isinstance(v, list)`` (a sequence in the else branch)."""
    test, negated = _without_not(test)
    if not (isinstance(test, cst.Call) and dotted_name(test.func) == "isinstance" and len(test.args) == 2):
        return None
    subject = test.args[0].value
    if not isinstance(subject, cst.Name):
        return None
    names = _isinstance_types(test)
    if names and all(n in _SEQUENCE_TYPES for n in names):
        return subject.value, not negated
    return None


#: Methods of a tensor (or array) whose result lives where it does: ``input_ids =
#: batch[1].squeeze(1)`` of a field of a host batch is in host memory, whatever its kind
#: (open_flamingo's labels, cloned from it and masked on the host before their move).
_COPIES_IN_PLACE = frozenset({"clone", "detach", "contiguous", "float", "long", "int", "half", "double", "bool",
                              "squeeze", "unsqueeze", "view", "reshape", "flatten", "permute", "transpose", "t"})


def _without_copies_in_place(node: cst.BaseExpression) -> cst.BaseExpression:
    """``batch[1]`` of ``batch[1].squeeze(1).long()``: what a chain of :data:`_COPIES_IN_PLACE`
    calls starts from."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _COPIES_IN_PLACE:
        node = node.func.value
    return node


def _host_guard(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(name, whether the true branch has it on the host) for ``x.is_cuda``,
    ``not x.is_cuda``, ``x.is_cpu``, ``x.device.type == "cpu"`` and the like."""
    test, negated = _without_not(test)
    found = None
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name):
        if test.attr.value == "is_cuda":
            found = (test.value.value, False)
        elif test.attr.value == "is_cpu":
            found = (test.value.value, True)
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, target = test.left, test.comparisons[0]
        right = target.comparator
        if isinstance(right, cst.Attribute):
            left, right = right, left
        name = dotted_name(left) or ""
        if name.endswith(".device.type") and name.count(".") == 2 and isinstance(right, cst.SimpleString):
            value = right.evaluated_value
            equal = isinstance(target.operator, (cst.Equal, cst.Is))
            unequal = isinstance(target.operator, (cst.NotEqual, cst.IsNot))
            if value == "cpu" and (equal or unequal):
                found = (name.split(".")[0], equal)
            elif value == "cuda" and (equal or unequal):
                found = (name.split(".")[0], unequal)
    if found is None:
        return None
    return found[0], found[1] != negated


class _DeviceFeedScan(cst.CSTVisitor):
    """Whether an expression builds on device tensors: a move to a device, a call of
    ``prepare`` (Accelerate places the batches of the loaders it prepares, as Lightning
    Fabric's ``setup_dataloaders`` does unless told ``move_to_device=False``), or a name
    in ``fed`` (see also :func:`_given_a_device`)."""

    def __init__(self, fed: set[str]) -> None:
        super().__init__()
        self.fed = fed
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        if moves_to_a_device(node) or _places_batches(node):
            self.found = True
        return not self.found

    def visit_Name(self, node: cst.Name) -> bool:
        self.found = self.found or node.value in self.fed
        return False


#: Methods that wrap loaders to yield batches on the device (Accelerate, Lightning Fabric).
_PLACING_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})


def _places_batches(call: cst.Call) -> bool:
    """``accelerator.prepare(model, loader)``, ``fabric.setup_dataloaders(loader)``; not
    with ``move_to_device=False`` or ``device_placement=False``."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in _PLACING_METHODS):
        return False
    return not any(
        arg.keyword is not None
        and arg.keyword.value in ("move_to_device", "device_placement")
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "False"
        for arg in call.args
    )


def _names_only(target: cst.BaseExpression) -> bool:
    """``a, b`` or ``[a, b]``: a tuple or list of plain names, none starred."""
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        isinstance(element, cst.Element) and isinstance(element.value, cst.Name) for element in target.elements)


class _ElementState(NamedTuple):
    """What a name bound to one element of an unpacked tuple holds (see ``FlowState._element_states``)."""

    host: bool  # a host tensor (or a field of a host batch)
    batch: bool  # a loader's batch, or a field of one, drawn by an enclosing loop
    opaque: bool  # of unknown kind, as the loader yields it: no function-wide evidence makes it a tensor
    device_keys: frozenset[str]  # the keys at which the loop stored device values in it


def _feeds_a_device(node: cst.BaseExpression, fed: set[str]) -> bool:
    scan = _DeviceFeedScan(fed)
    walk(node, scan)  # read-only: ``node.visit`` would rebuild every node
    return scan.found or _given_a_device(node)


def _given_a_device(node: cst.BaseExpression) -> bool:
    """``DeviceDataLoader(loader, device)``, ``enumerate(prefetch(loader, device=dev))``: a
    wrapper of a loader that is given a device puts its batches there. Only the chain of
    wrappers counts, through their positional arguments: ``DataLoader(ds,
    generator=torch.Generator(device=dev), pin_memory_device="cuda")`` yields host batches;
    and the first is what they wrap (``DataLoader(dev)`` loads a development set)."""
    if not isinstance(node, cst.Call):
        return False
    positional = [arg.value for arg in node.args if arg.keyword is None]
    devices = [*positional[1:], *(arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "device")]
    return any(is_device_argument(value) for value in devices) or any(_given_a_device(value) for value in positional)


def runs_once_by_name(name: str) -> bool:
    """A function that runs once or never per step by its name alone (a constructor, a
    repr, ``reset_parameters``, a test): flow's cold path."""
    return name in _ONCE_METHODS or name.startswith("test_")


def _is_test_case(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.ClassDef) and (
        node.name.value.startswith("Test")
        or any((dotted_name(b.value) or "").endswith("TestCase") for b in node.bases)
    )


def _is_dataset_class(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.ClassDef):
        return False
    if node.name.value.endswith("Dataset"):
        return True
    return any((dotted_name(base.value) or "").endswith("Dataset") for base in node.bases)


def _decorator_name(decorator: cst.Decorator) -> str | None:
    target = decorator.decorator
    if isinstance(target, cst.Call):
        target = target.func
    return dotted_name(target)


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


#: Renders annotations: code generation needs a module only for its indentation and newline.
_RENDERER = cst.Module(body=[])


def _annotation_text(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    plain = _plain_code(node)
    if plain is not None:
        return plain  # what code generation gives, without it (most annotations)
    try:
        return _RENDERER.code_for_node(node)
    except Exception:  # pragma: no cover - defensive: odd annotation nodes
        return dotted_name(node)


def _plain_code(node: cst.BaseExpression) -> str | None:
    """The code of a name, a dotted name or a subscript of them (``torch.Tensor``,
    ``Optional[Tuple[Tensor, int]]``) on one line and without parentheses, exactly as code
    generation writes it; None for anything else (then generated)."""
    node_type = type(node)
    if node.lpar:
        return None
    if node_type is cst.Name:
        return node.value
    if node_type is cst.Attribute:
        value = _plain_code(node.value)
        dot = node.dot
        if value is None or type(dot) is not cst.Dot:
            return None
        before, after = _space(dot.whitespace_before), _space(dot.whitespace_after)
        if before is None or after is None:
            return None
        return f"{value}{before}.{after}{node.attr.value}"
    if node_type is cst.Subscript:
        value = _plain_code(node.value)
        opening, closing = _space(node.lbracket.whitespace_after), _space(node.rbracket.whitespace_before)
        if value is None or opening is None or closing is None:
            return None
        parts = [value, "[", opening]
        last = len(node.slice) - 1
        for position, element in enumerate(node.slice):
            index = element.slice
            if type(index) is not cst.Index or index.star is not None:
                return None
            code = _plain_code(index.value)
            comma = element.comma
            if code is None:
                return None
            parts.append(code)
            if type(comma) is cst.Comma:
                before, after = _space(comma.whitespace_before), _space(comma.whitespace_after)
                if before is None or after is None:
                    return None
                parts += (before, ",", after)
            elif position != last:
                return None  # (code generation would add a comma of its own)
        parts += (closing, "]")
        return "".join(parts)
    return None


def _space(whitespace: cst.BaseParenthesizableWhitespace) -> str | None:
    """Whitespace on the line (None: a line break, written by code generation)."""
    return whitespace.value if type(whitespace) is cst.SimpleWhitespace else None


@contextmanager
def _at_class_statement(flow: FlowState, scope: Scope) -> Iterator[None]:
    """Scopes as they stand at the class statement of ``scope``: what was pushed
    inside it (a method's locals) is out of view until the block ends."""
    saved = flow.scopes
    flow.scopes = saved[: next(i for i, s in enumerate(saved) if s is scope) + 1]
    try:
        yield
    finally:
        flow.scopes = saved


class _SelfAttributeCollector(cst.CSTVisitor):
    """Kinds of ``self.x = <torch expr>`` and ``register_buffer`` in a class body."""

    def __init__(self, flow: FlowState) -> None:
        super().__init__()
        self.flow = flow
        self.attributes: dict[str, Kind] = {}

    @classmethod
    def collect(cls, node: cst.ClassDef, flow: FlowState, scope: Scope) -> dict[str, Kind]:
        """Evaluated as if at the class statement: the methods' locals are not in view."""
        with _at_class_statement(flow, scope):
            collector = cls(flow)
            # Fill the scope's own table, so ``self.b = self.a * 2`` sees ``self.a``.
            collector.attributes = scope.self_attributes if scope.self_attributes is not None else {}
            walk(node.body, collector)
            return collector.attributes

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = _self_attribute_name(target.target)
            if attr is None:
                continue
            kind = self.flow.kind_of(node.value)
            if kind in (Kind.MODULE,) or kind.is_tensor:
                self._note(attr, kind)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("register_buffer", "register_parameter")
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            name = node.args[0].value.evaluated_value
            if isinstance(name, str):
                self._note(name, Kind.TENSOR)

    def _note(self, attr: str, kind: Kind) -> None:
        previous = self.attributes.get(attr)
        self.attributes[attr] = kind if previous in (None, kind) else Kind.UNKNOWN


class _NumberOrTensorAttributes(cst.CSTVisitor):
    """Attributes that hold a Python number at times and a tensor at others:
    ``self._multiply_factor = 1.0`` in ``__init__``, ``self._multiply_factor *= clip_coef``
    (a tensor) in another method. Their kind is the union over every assignment in the
    class, read with each method's locals in view: a tensor, as far as a sync goes (a
    comparison of it used as a bool waits for the device whenever it holds one).
    Attributes only ever bound to Python values stay unknown; assignments of unknown
    values say nothing either way."""

    def __init__(self, flow: FlowState) -> None:
        super().__init__()
        self.flow = flow
        self.kinds: dict[str, set[Kind]] = {}
        self.depth = 0

    @classmethod
    def collect(cls, node: cst.ClassDef, flow: FlowState, scope: Scope) -> dict[str, Kind]:
        with _at_class_statement(flow, scope):
            collector = cls(flow)
            walk(node.body, collector)
        return {
            attr: Kind.TENSOR
            for attr, kinds in collector.kinds.items()
            if any(kind.is_tensor for kind in kinds) and Kind.PYTHON in kinds
            and all(kind.is_tensor or kind is Kind.PYTHON for kind in kinds)
        }

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # The method's locals, bound as the walk meets them (parameters stay unknown).
        self.flow.scopes = [*self.flow.scopes, Scope("function", node.name.value, node, {})]

    def visit_Assign(self, node: cst.Assign) -> bool:
        # An expression holds no statement: the walk need not enter a simple statement's
        # expressions (most of a class's nodes). ``leave_Assign`` still runs.
        return False

    visit_AugAssign = visit_AnnAssign = visit_Expr = visit_Return = visit_Assign

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.flow.scopes = self.flow.scopes[:-1]

    def leave_Assign(self, original_node: cst.Assign) -> None:
        kind = self.flow.kind_of(original_node.value)
        for target in original_node.targets:
            attr = _self_attribute_name(target.target)
            if attr is not None:
                self._note(attr, kind)
            elif isinstance(target.target, cst.Name) and self.flow.scope.kind == "function":
                self.flow.scope.env[target.target.value] = kind

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        attr = _self_attribute_name(original_node.target)
        if attr is not None:
            self._note(attr, self.flow.kind_of(original_node.value))

    def _note(self, attr: str, kind: Kind) -> None:
        if kind is not Kind.UNKNOWN:
            self.kinds.setdefault(attr, set()).add(kind)


def _self_attribute_name(node: cst.BaseExpression) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def _runs_at_most_once(loop: cst.For | cst.While) -> bool:
    """The loop's body ends with an unconditional ``break`` no ``continue`` can skip (see
    :func:`synclint.project.scopes.runs_at_most_once`): it is no repetition."""
    body = loop.body
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    last = statements[-1] if statements else None
    if not (isinstance(last, cst.SimpleStatementLine) and last.body and isinstance(last.body[-1], cst.Break)):
        return False
    return not any(isinstance(node, cst.Continue) for node in _outside_inner_loops(statements))


def _outside_inner_loops(nodes: list[cst.CSTNode]):
    """``nodes`` and their descendants, not entering loops, functions, classes or lambdas
    (whose ``continue`` belongs to them), but for a loop's ``else``."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (cst.For, cst.While)):
            if node.orelse is not None:
                pending.append(node.orelse)
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(node.children)
