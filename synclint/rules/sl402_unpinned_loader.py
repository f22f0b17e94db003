from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import libcst as cst

from synclint.analysis.flow import runs_once_by_name
from synclint.analysis.imports import callee_name
from synclint.analysis.inference import keyword
from synclint.analysis.loaders import DATALOADERS
from synclint.rules.base import Invalid, Rule
from synclint.rules.loader_copies import WRAPPING, asynchronous_copies, is_wrapper, names_read, receiving_parameter
from synclint.traversal import walk



SETUP = "construction or setup"
ONE_OFF = "a one-off pass (a loader iterated where it is built, in code that runs once)"
# The line that builds a loader runs once and waits for nothing: what waits is each copy of
# its batches that asks not to block. Where no such copy is seen in the code that builds it
# (the loader is returned, stored, handed to a training loop elsewhere or to Lightning's
# `trainer.fit`, or read by other functions), nothing here runs per step. (Also the reason of a
# loader its function iterates with blocking copies only, in a project that asks elsewhere:
# the words may not say it is handed on.)
LEAVES = ("built once, and no copy of its batches that asks not to block is seen where it is built: such "
          "copies, where it may be handed on or read elsewhere, are the ones that wait, reported where they are seen")


class UnpinnedLoader(Rule):
    """Flags the `non_blocking=True` copies of the batches of a `DataLoader` without `pin_memory=True`.

    ## What it does
    Follows each `torch.utils.data.DataLoader` built without `pin_memory=True`
    (in a file that mentions CUDA) to the copies of its batches that ask not to
    block. Where the function (or module) that builds the loader also iterates
    it (directly, through `enumerate`/`tqdm`/`iter`/`zip`, a name bound to
    those, or a `with tqdm(loader) as bar:`; or a loop that takes each batch
    with `next(it)` from such an iterator) and copies a batch, or a field
    taken from one, with a `non_blocking` that is not `False`, each such copy
    is reported: that line runs every step and waits. So are the copies in a
    function of the same module the loader is handed to (`train_one_epoch(model,
    train_loader)`, also as `tqdm(loader)` or by keyword; two calls deep at
    most), which iterates its parameter and never rebinds it: the message
    names the function. The fix, offered from
    the copy, pins the loader.

    The loader's own line runs once and waits for nothing, so it is cold
    (shown with `--include-cold`, with the fix and the reason), whatever
    happens to its batches:
    - copied where it is iterated: the copies are the findings;
    - handed on (returned, stored on an object, passed to a training loop of
      another file or to Lightning's `trainer.fit`): the copies are out of
      sight. Blind judges of earlier versions, which showed this line, found
      it TRUE in about a third of 70 real cases;
    - copied only by blocking copies (no `non_blocking` that is not `False`
      in the project, nor a Lightning, Composer, torchtnt or Catalyst
      trainer, timm `PrefetchLoader` or mmcv `MMDataParallel`, which copy
      that way): each copy waits, pinned or not, and SL401 reports it.

    Loaders that tests, benchmarks, export tools or test-only helpers build
    are cold for that reason, and so are one-off passes (a loader iterated
    where it is built, in code that runs once) and loaders bound to a name
    their function never reads.

    Names bound more than once there (or also a parameter, or declared
    `global`) are not followed; a loop that always breaks after one batch, and
    copies in a constructor or a one-off pass, are no per-step copies (cold).
    A suppression comment on the loader's line silences its copies too.

    ## Why is this bad?
    Batches in pageable memory cannot be copied asynchronously: even with
    `non_blocking=True` the copy is staged through a pinned buffer
    synchronously, so the host stalls on every batch.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True)
    ```

    ## Fix safety
    Adding `pin_memory=True` is safe: results are identical; it costs pinned
    host memory for the prefetched batches. An explicit `pin_memory=False`
    (or one passed positionally, or possibly through `**kwargs`) is never
    changed: the finding's message says so.
    """

    code = "SL402"
    name = "unpinned-loader"
    TOKENS = frozenset({"DataLoader"})  # see synclint.prefilter
    fix_applicability = "safe"
    hot_path_only = False
    follows_module_calls = True  # (a loader handed to a function of the module: see loader_copies)

    VALID = (
        "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=True)\nfor x in l:\n    x.cuda(non_blocking=True)\n",
        "from torch.utils.data import DataLoader\nl = DataLoader(ds)\n",
        "import torch\nl = MyLoader(ds)\nfor x in l:\n    x.cuda(non_blocking=True)\n",
        "import torch\nl = torch.utils.data.DataLoader(ds, **kwargs)\nfor x in l:\n    x.cuda(non_blocking=True)\n",
        "import torch\nl = torch.utils.data.DataLoader(ds, pin_memory=args.pin)\nfor x in l:\n    x.cuda(non_blocking=True)\n",
        # Every copy blocks: it waits (SL401) from pinned memory too.
        "from torch.utils.data import DataLoader\nl = DataLoader(ds)\nfor x in l:\n    x = x.cuda()\n",
        # Handed on: the line that builds it runs once; the copies are out of sight.
        "import torch.utils.data as tud\nimport pytorch_lightning as pl\nl = tud.DataLoader(ds, shuffle=True)\npl.Trainer(accelerator='cuda').fit(model, l)\n",
        "from torch.utils.data import DataLoader\ndef make(ds):\n    return DataLoader(dataset=ds)\ndef step(b):\n    return b.to('cuda', non_blocking=True)\n",
    )
    INVALID = (
        # The loader iterated where it is built: the copy that asks not to block is reported.
        Invalid("from torch.utils.data import DataLoader\ndef train(ds):\n    loader = DataLoader(ds)\n    for x, y in loader:\n        x = x.cuda(non_blocking=True)\n", 5, 13, "from torch.utils.data import DataLoader\ndef train(ds):\n    loader = DataLoader(ds, pin_memory=True)\n    for x, y in loader:\n        x = x.cuda(non_blocking=True)\n"),
        Invalid("import torch\nloader = torch.utils.data.DataLoader(ds, batch_size=4)\nfor i, (x, y) in enumerate(loader):\n    x = x.to('cuda', non_blocking=True)\n", 4, 9, "import torch\nloader = torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True)\nfor i, (x, y) in enumerate(loader):\n    x = x.to('cuda', non_blocking=True)\n"),
        Invalid("from torch.utils.data import DataLoader\ndef train(ds, model):\n    loader = DataLoader(ds)\n    for batch in loader:\n        model(batch['image'].cuda(non_blocking=True))\n", 5, 15, "from torch.utils.data import DataLoader\ndef train(ds, model):\n    loader = DataLoader(ds, pin_memory=True)\n    for batch in loader:\n        model(batch['image'].cuda(non_blocking=True))\n"),
        Invalid("from torch.utils.data import DataLoader\nfrom tqdm import tqdm\ndef train(ds, device):\n    loader = DataLoader(ds)\n    bar = tqdm(loader)\n    for x, y in bar:\n        y = y.cuda(non_blocking=True)\n", 7, 13, "from torch.utils.data import DataLoader\nfrom tqdm import tqdm\ndef train(ds, device):\n    loader = DataLoader(ds, pin_memory=True)\n    bar = tqdm(loader)\n    for x, y in bar:\n        y = y.cuda(non_blocking=True)\n"),
        Invalid("from torch.utils.data import DataLoader\ndef train(ds, model):\n    loader = DataLoader(ds)\n    for batch in loader:\n        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}\n", 5, 21, "from torch.utils.data import DataLoader\ndef train(ds, model):\n    loader = DataLoader(ds, pin_memory=True)\n    for batch in loader:\n        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}\n"),
        # An explicit `pin_memory=False` is never changed: reported, without a fix.
        Invalid("from torch.utils.data import DataLoader as DL\nl = DL(ds, pin_memory=False)\nfor x in l:\n    x = x.cuda(non_blocking=True)\n", 4, 9, None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        loader = self._copies.loader_of.get(id(node))
        if loader is not None:
            self._report_copy(node, loader)
            return
        if not self._unpinned(node):
            return
        uses = self._name_uses(node)
        if uses is not None and uses.loads == 0:
            cold = "a loader the code never uses (bound to a name its function never reads)"
        elif self._one_off_loader(node):
            cold = ONE_OFF
        elif self._copies.by_loader.get(id(node)) and not self._setup_loader(node):
            cold = ("its batches are copied with `non_blocking=True` where it is iterated: each such copy "
                    "waits, and is reported there")
        elif self.context.flow.facts.blocking_copies_only:
            cold = "every copy in the project blocks (none asks for `non_blocking=True`): each waits, pinned or not"
        elif self.context.flow.facts.blocking_copies_nearby and self._stays_in_file(node):
            cold = ("its batches stay in this file, and neither it nor a project module it imports asks for "
                    "`non_blocking=True`: each copy waits, pinned or not")
        else:
            cold = LEAVES
        self.report(
            node,
            "`DataLoader` without `pin_memory=True`: batches in pageable memory are copied "
            "to the device synchronously; pass `pin_memory=True`",
            self.propose_fix(node),
            cold=cold,
        )

    def _unpinned(self, node: cst.Call) -> bool:
        """A ``DataLoader(...)`` of a file that uses CUDA, without ``pin_memory`` that may be
        true (not through ``**kwargs`` either: it may come from there)."""
        if self.context.qualify(node.func) not in DATALOADERS or not self.context.mentions_cuda:
            return False
        if any(arg.star == "**" for arg in node.args):
            return False
        pin = keyword(node, "pin_memory")
        return pin is None or (isinstance(pin.value, cst.Name) and pin.value.value == "False")

    def _report_copy(self, node: cst.Call, loader: cst.Call) -> None:
        name = self._copies.names.get(id(loader))
        which = f"`{name}`" if name is not None else "the `DataLoader` it iterates"
        handed_to = self._copies.handed_to.get(id(node))
        if handed_to is not None:
            which += f" (handed to `{handed_to}`)"
            # Code of its own, visited before or after the loader's: whether this copy runs
            # once is its own function's matter (a ``setup(loader)`` that warms up on it),
            # and the loader's, built in a constructor: ``calibrate(model, loader)`` in
            # ``__init__`` makes one pass, as a loop over it there would (see ``_setup_loader``).
            flow = self.context.flow
            once = id(loader) in self._copies.built_once or (flow.function is not None and flow.in_cold_path)
            cold = SETUP if once else None
        else:  # (its copies run once too)
            cold = ONE_OFF if self._one_off_loader(loader) else SETUP if self._setup_loader(loader) else None
        self.report(
            node,
            f"`non_blocking=True` copy of a batch of {which}, which does not pin memory: from pageable "
            "memory the copy is staged synchronously, so the host waits for it; pass `pin_memory=True` "
            f"to the loader{self.context.context_phrase()}",
            self.propose_fix(loader),
            cold=cold,
            silenced_with=loader,
        )

    def _setup_loader(self, loader: cst.Call) -> bool:
        """Built (and its batches copied) in code that runs once (a constructor): those copies
        do not run per step, so the loader's own line keeps its finding."""
        memo = self.__dict__.setdefault("_setup_memo", {})
        if id(loader) not in memo:
            memo[id(loader)] = self.context.flow.function is not None and self.context.flow.in_cold_path
        return memo[id(loader)]

    def _one_off_loader(self, loader: cst.Call) -> bool:
        """:meth:`_one_off`, asked once per loader (where it is built, or at its first copy)."""
        memo = self.__dict__.setdefault("_one_off_memo", {})
        if id(loader) not in memo:
            memo[id(loader)] = self._one_off(loader, self._name_uses(loader))
        return memo[id(loader)]

    @cached_property
    def _copies(self) -> _LoaderCopies:
        """Every unpinned loader of the module and the copies of its batches that ask not to
        block in the scope that builds it (see :mod:`synclint.rules.loader_copies`)."""
        found = _UnpinnedLoaders(self._unpinned)
        walk(self.context.module, found)
        copies = _LoaderCopies({}, {}, {}, {}, found.built_once)
        for call, scope, name in found.loaders:
            copies.by_loader[id(call)] = asynchronous_copies(scope, call, name, self.context.module, copies.handed_to)
            for copy in copies.by_loader[id(call)]:
                copies.loader_of.setdefault(id(copy), call)
            if name is not None:
                copies.names[id(call)] = name
        return copies

    # A loader built and iterated in code that runs once (a dataset's ``process()``, a
    # normalisation estimate called from ``__init__``) makes one pass over its data; the
    # training loader is kept (``self.loader = ...``) or handed back (``return DataLoader(...)``).
    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and self._in_function_body:
            self._locals[id(node.value)] = node.targets[0].target.value
        elif len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and not self._scopes:
            self._globals[id(node.value)] = node.targets[0].target.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, cst.Name) and self._in_function_body:
            self._locals[id(node.value)] = node.target.value
        elif node.value is not None and isinstance(node.target, cst.Name) and not self._scopes:
            self._globals[id(node.value)] = node.target.value

    @property
    def _globals(self) -> dict[int, str]:
        return self.__dict__.setdefault("_module_loaders", {})

    def _stays_in_file(self, node: cst.Call) -> bool:
        """The loader and its batches stay in this file: iterated where it is built (also
        through ``enumerate``, ``tqdm``, ``iter``), or bound to a name that is only so
        iterated or handed to functions this file defines (pips' ``run_model(model,
        sample)``; what they are handed of the loader is followed in them); never
        returned, yielded (``yield from loader``, ``for b in loader: yield b``), stored on
        an object or handed to code of another file (``trainer.fit(model, loader)``,
        ``evaluate(loader)`` imported). A module's
        loader is read by the module's functions, unless another project file or a
        notebook of the project imports the module (``from train import loader``)."""
        if id(node) in self._iterated:
            return not _yields(self._loops[id(node)].body)  # (``for b in DataLoader(ds): yield b`` hands them on)
        function = self.context.flow.function
        name = self._locals.get(id(node)) if function is not None else self._globals.get(id(node))
        if name is None or (function is None and self.context.flow.facts.imported_elsewhere):
            return False  # (a module's loader another file imports is read there)
        scope = function.node if function is not None else self.context.module
        own = {statement.name.value: statement for statement in self.context.module.body
               if isinstance(statement, cst.FunctionDef)}
        reads = _LoaderReads(name, own)
        walk(scope, reads)
        return not reads.escapes

    # Only a function's own body binds its locals: a class body in it binds the class's
    # attributes (``class Data: loader = DataLoader(ds)``, read as ``Data.loader``).
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(True)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(False)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    @property
    def _in_function_body(self) -> bool:
        return bool(self._scopes) and self._scopes[-1]

    @property
    def _scopes(self) -> list[bool]:
        return self.__dict__.setdefault("_scope_is_function", [])

    def visit_For(self, node: cst.For) -> None:
        self._iterated.add(id(node.iter))
        self._loops[id(node.iter)] = node

    @property
    def _loops(self) -> dict[int, cst.For]:
        """Each loop by its iterable's id: whether it yields is asked only of a loader's."""
        return self.__dict__.setdefault("_loops_by_iterable", {})

    @property
    def _locals(self) -> dict[int, str]:
        return self.__dict__.setdefault("_local_loaders", {})

    @property
    def _iterated(self) -> set[int]:
        return self.__dict__.setdefault("_iterated_loaders", set())

    def _name_uses(self, node: cst.Call) -> _NameUses | None:
        """How the function reads the local name the loader ``node`` is bound to, or None
        when it is bound to none (module-level loaders may be read by any function). A
        name never read (YOLOS's prediction dump builds ``data_loader_train`` and passes
        on only the validation loader) copies no batch."""
        function = self.context.flow.function
        name = self._locals.get(id(node))
        if function is None or name is None:
            return None
        uses = _NameUses(name)
        walk(function.node, uses)
        return uses

    def _one_off(self, node: cst.Call, uses: _NameUses | None) -> bool:
        """Iterated where it is built (``for b in DataLoader(ds)``), or its name iterated
        and used nowhere else (``for b in enumerate(tqdm(loader))``), in code that runs once."""
        flow = self.context.flow
        if flow.function is None or not (flow.in_cold_path or flow.index_context().is_cold):
            return False
        if id(node) in self._iterated:
            return True
        return uses is not None and uses.iterated > 0 and uses.iterated == uses.loads


class _NameUses(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.loads = 0
        self.iterated = 0
        self._in_iter = 0

    def visit_For(self, node: cst.For) -> bool:
        # Count the iterable's uses as iteration (wrappers included), the rest as usual.
        self._in_iter += 1
        walk(node.iter, self)
        self._in_iter -= 1
        walk(node.target, self)
        walk(node.body, self)
        if node.orelse is not None:
            walk(node.orelse, self)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        walk(node.value, self)
        return False  # the targets are stores, not uses

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            walk(node.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.loads += 1
            self.iterated += bool(self._in_iter)

    def visit_Call(self, node: cst.Call) -> None:
        # ``return locals()``, ``run(**vars())``: every local is read, this one too.
        if isinstance(node.func, cst.Name) and node.func.value in ("locals", "vars") and not node.args:
            self.loads += 1


#: Callables that only look at a loader, or take a batch from it (``next(it)``): what
#: they return is no loader.
_CONSUMING = frozenset({"next", "len", "print"})


class _LoaderReads(cst.CSTVisitor):
    """Whether a loader's name (``name``) leaves its file: a read that is not iterated
    (by a loop that yields nothing), looked at (``len``, ``next``), handed to a function
    of ``own`` (the file's functions) that keeps it in turn, or wrapped for iteration
    where the loader itself would stay. A name bound to such a
    wrapper (``it = iter(loader)``) is followed like the loader: ``trainer.run(it)``
    hands the loader's batches on as surely as ``trainer.run(loader)``."""

    def __init__(self, name: str, own: dict[str, cst.FunctionDef],
                 followed: set[tuple[str, str]] | None = None, generator: bool = False) -> None:
        super().__init__()
        self.names = {name}
        self.own = own
        self.escapes = False
        self._safe = 0
        #: (function, parameter) already followed: a recursive helper is read once.
        self._followed = followed if followed is not None else set()
        #: Reading a generator of the file whose caller iterates it here: what it yields
        #: stays in the file.
        self._generator = generator
        #: Names declared ``global`` or ``nonlocal``: what is bound to them is read by other
        #: scopes (another function, another file), where it is not followed.
        self._shared: set[str] = set()

    def visit_Global(self, node: cst.Global) -> None:
        self._shared |= {item.name.value for item in node.names}

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._shared |= {item.name.value for item in node.names}

    def visit_For(self, node: cst.For) -> bool:
        self._safe += 1
        walk(node.iter, self)
        self._safe -= 1
        if not self._generator and _yields(node.body) and names_read(node.iter) & self.names:
            self.escapes = True  # ``for b in loader: yield b``: the generator's caller gets the batches
        walk(node.body, self)
        if node.orelse is not None:
            walk(node.orelse, self)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        callee = callee_name(node.func)
        if isinstance(node.func, cst.Name) and callee in self.own:
            self._hand_to_own(self.own[callee], node)
            return False
        if callee in _CONSUMING:
            self._safe += 1
            for arg in node.args:
                walk(arg.value, self)
            self._safe -= 1
            return False
        if callee in WRAPPING:  # (an iterator over the loader stays in the file only where the loader would)
            for arg in node.args:  # (as safe as the place the iterator goes to)
                walk(arg.value, self)
            return False
        self._outside_any_safe_place(node)
        return False

    def _hand_to_own(self, function: cst.FunctionDef, node: cst.Call) -> None:
        """A call of a function of the file: what it is handed of the loader (``epoch(loader,
        model)``, ``run(data=iter(loader))``) is followed into its body, under the
        parameter's name; anything else it is handed (``next(it)``, a batch) stays here. A
        generator of the file (``for b in batches(loader)``) keeps the loader here when its
        iterator stays (iterated here), what it yields going to that loop."""
        generator = _yields(function.body)
        if generator and not self._safe and any(names_read(arg.value) & self.names for arg in node.args):
            self.escapes = True  # (a generator's batches go where its iterator goes: not to a loop here)
            return
        for place, arg in enumerate(node.args):
            if not (names_read(arg.value) & self.names) or arg.value is None:
                continue
            handed = isinstance(arg.value, cst.Name) or is_wrapper(arg.value)
            param = receiving_parameter(function, node, place)
            if not handed:  # (``run(model, next(it))``: a batch, or a look at the loader)
                self._safe += 1
                walk(arg.value, self)
                self._safe -= 1
            elif param is None:
                self.escapes = True  # into ``*args``/``**kwargs``: followed no further
            elif (function.name.value, param) not in self._followed:
                self._followed.add((function.name.value, param))
                if not isinstance(arg.value, cst.Name):  # (``tqdm(loader)``: its arguments, then the iterator)
                    self._safe_wrappers(arg.value)
                inner = _LoaderReads(param, self.own, self._followed, generator)
                walk(function.body, inner)
                self.escapes = self.escapes or inner.escapes
            if self.escapes:
                return
        for arg in node.args:  # (the rest: batches, models, numbers)
            if not (names_read(arg.value) & self.names):
                self._safe += 1
                walk(arg.value, self)
                self._safe -= 1

    def _safe_wrappers(self, node: cst.BaseExpression) -> None:
        saved, self._safe = self._safe, 1
        walk(node, self)
        self._safe = saved

    def _outside_any_safe_place(self, node: cst.Call) -> None:
        saved, self._safe = self._safe, 0
        walk(node.func, self)
        for arg in node.args:
            walk(arg.value, self)
        self._safe = saved

    def visit_Assign(self, node: cst.Assign) -> bool:
        # ``it = iter(loader)`` keeps it here, if ``it`` stays too; ``self.loader = loader`` or
        # ``d["l"] = loader`` hands it to whoever reads the object; ``alias = loader`` is
        # followed no further.
        saved = self._safe
        targets = [target.target for target in node.targets]
        wrapper = is_wrapper(node.value)
        if wrapper and all(isinstance(target, cst.Name) and target.value not in self._shared for target in targets):
            if names_read(node.value) & self.names:
                self.names |= {target.value for target in targets}
            self._safe = 1
        else:
            self._safe = 0
        walk(node.value, self)  # (the targets are stores)
        self._safe = saved
        return False

    def visit_WithItem(self, node: cst.WithItem) -> bool:
        # ``with tqdm(loader) as bar:`` binds ``bar`` as ``bar = tqdm(loader)`` would (Grad-TTS);
        # any other item is read as usual, and its ``as`` target is a store. A bar that only
        # counts the loader (``tqdm(total=len(loader))``) iterates none of it: not followed.
        if (is_wrapper(node.item) and _wrapped(node.item) & self.names and node.asname is not None
                and isinstance(node.asname.name, cst.Name) and node.asname.name.value not in self._shared):
            self.names.add(node.asname.name.value)
            self._safe_wrappers(node.item)
        else:
            walk(node.item, self)
        return False

    def visit_Return(self, node: cst.Return) -> bool:
        saved, self._safe = self._safe, 0
        if node.value is not None:
            walk(node.value, self)
        self._safe = saved
        return False

    def visit_Yield(self, node: cst.Yield) -> bool:
        saved, self._safe = self._safe, 0
        if isinstance(node.value, cst.BaseExpression):
            walk(node.value, self)
        elif isinstance(node.value, cst.From):  # ``yield from loader``: each batch to the caller
            self._safe = int(self._generator)
            walk(node.value.item, self)
        self._safe = saved
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # ``loader.dataset``, ``loader.sampler.set_epoch(e)``: reads of the loader, not hand-offs.
        if isinstance(node.value, cst.Name) and node.value.value in self.names:
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and not self._safe:
            self.escapes = True


class _LoaderCopies(NamedTuple):
    by_loader: dict[int, list[cst.Call]]  # each unpinned loader (by id): its batches' asynchronous copies
    loader_of: dict[int, cst.Call]  # each such copy (by id): its loader
    names: dict[int, str]  # the name each loader is bound to where it is built
    handed_to: dict[int, str]  # each copy in a function the loader was handed to (by id): that function
    built_once: set[int]  # the loaders (by id) built in a function that runs once by its name (``__init__``)


class _UnpinnedLoaders(cst.CSTVisitor):
    """The module's unpinned loaders, each with the scope that builds it (its function, or
    the module) and the name it is bound to there (None: iterated where it is built, or
    kept otherwise)."""

    def __init__(self, unpinned) -> None:
        super().__init__()
        self._unpinned = unpinned
        self._scopes: list[cst.CSTNode] = []
        self._bound: dict[int, str] = {}
        self.loaders: list[tuple[cst.Call, cst.CSTNode, str | None]] = []
        #: Loaders (by id) built inside a function that runs once by its name (a constructor).
        self.built_once: set[int] = set()

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(node)  # (its body binds attributes; its methods are scopes of their own)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and not isinstance(self._scopes[-1], cst.ClassDef):
            self._bound[id(node.value)] = node.targets[0].target.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        # ``loader: DataLoader = DataLoader(ds)`` binds the name as a plain assignment does
        # (the rule's ``visit_AnnAssign`` and ``_Bindings`` count it so too): its loops are followed.
        if node.value is not None and isinstance(node.target, cst.Name) \
                and not isinstance(self._scopes[-1], cst.ClassDef):
            self._bound[id(node.value)] = node.target.value

    def visit_Call(self, node: cst.Call) -> None:
        if self._scopes and self._unpinned(node):
            self.loaders.append((node, self._scopes[-1], self._bound.get(id(node))))
            if any(isinstance(scope, cst.FunctionDef) and runs_once_by_name(scope.name.value) for scope in self._scopes):
                self.built_once.add(id(node))


def _wrapped(node: cst.BaseExpression) -> set[str]:
    """The names ``node`` reads other than through a look at them (``len(loader)``,
    ``next(it)``): what an iterator it builds may go over."""
    return names_read(node, skipping=_CONSUMING)


class _Yields(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # (a nested generator's yields are its own)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _yields(body: cst.CSTNode) -> bool:
    """Whether ``body`` yields (not in a function nested in it)."""
    finder = _Yields()
    walk(body, finder)
    return finder.found
