"""Which code runs every step: hotness along the project's call graph.

Roots are ``forward`` methods, losses, training/validation steps, optimizer
``step`` and the bodies of loops over batches. Hotness flows along resolved
calls, except calls made on error paths or under periodic guards
(``if step % 100 == 0``), which run rarely. Functions that are construction,
setup, export or test code are cold whoever calls them, and so is what only
they call. What ``Dataset.__getitem__``/``__iter__`` and collate functions
reach is the data pipeline (host tensors in loader workers): cold for sync
rules, wherever the file lives.

Each function gets a :class:`Context`: ``hot`` with the chain that makes it
hot, ``cold`` with the reason, or ``unknown`` (nothing in the project reaches
it from a root, and nothing marks it cold: a library function, an entry point
the project does not call itself).
"""

from __future__ import annotations

import builtins
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from weakref import WeakKeyDictionary

from synclint.project.cold_reasons import (  # re-exported: the reasons hotness gives
    CONVERSION_TOOL,
    DEMO_CODE,
    DOCUMENTATION_CODE,
    PLOTTING_CODE,
    SELF_TEST,
    SELF_TEST_HELPER,
    TEMPLATE_CODE,
    TEST_OR_BENCHMARK_CODE,
    TYPE_STUB,
    UNREACHED,
    is_never_named,
    never_named,
    outside_the_program,
)
from synclint.project.index import ClassId, FunctionId, ProjectIndex
from synclint.project.run_once import within_spans
from synclint.project.step_branches import SkippedBlocks, blocks_the_step_skips
from synclint.project.summary import (
    CONSTRUCTION,
    EPOCH_HOOK,
    STEP_NAMES,
    is_optimizer_class,
    is_test_file,
    steps_an_optimizer,
)

HOT, UNKNOWN, COLD = "hot", "unknown", "cold"
_MAX_CHAIN = 4  # names shown in a "why"; longer chains are elided in the middle


@dataclass(frozen=True)
class Context:
    kind: str  # "hot" | "unknown" | "cold"
    why: str = ""  # hot: "`train`'s loop over `loader` -> `Net.forward`"; cold: the reason
    #: hot only: how many calls separate the code from its root (0: the root itself).
    depth: int = 0

    @property
    def is_hot(self) -> bool:
        return self.kind == HOT

    @property
    def is_cold(self) -> bool:
        return self.kind == COLD


UNKNOWN_CONTEXT = Context(UNKNOWN)
#: The ``why`` of an unknown finding shown on the strength of the op alone: it syncs on
#: every call (``.item()``, ``nonzero``) of an operand proven to be a device tensor. Library
#: code is called per step by its users, whom the project does not contain.
PROVEN_SYNC = "not reached from a step of the project, but it syncs on every call"


#: The ``why`` of a sync a helper applies to its parameter (``def item(t): return t.item()``):
#: reported at each call of the helper, in the caller's context, so hidden at the helper.
AT_CALL_SITES = "it syncs on a parameter: reported at each call of the function instead"


#: Top-level classes nothing in the project builds (see :mod:`synclint.project.unnamed_classes`;
#: and methods, ``Class.method``, nothing names: :mod:`synclint.project.unnamed_methods`):
#: why, when the only code that names one never runs (cold) or when only imports name it
#: (unreached, a why of :func:`never_named`'s); else None (unreached).
Unnamed = Mapping[ClassId, "str | None"]
_NONE_UNNAMED: Unnamed = MappingProxyType({})


def is_hidden(kind: str | None, why: str) -> bool:
    """Findings not shown without ``--include-cold``: cold ones, unknown ones without
    evidence in a project the index saw whole (code in a class nothing names among
    them), and syncs reported at the calls instead."""
    return kind == COLD or (kind == UNKNOWN and (why in (UNREACHED, AT_CALL_SITES) or is_never_named(why)))


_TEST_DIRS = frozenset({"test", "tests", "testing", "unittests", "unit_tests", "benchmarks", "benchmark"})
_EXPORT_DIRS = frozenset({"onnx", "export", "_export", "exporters", "tracing"})
#: ``docs/source/snippets/``: what the documentation shows or runs to build itself.
_DOC_DIRS = frozenset({"docs", "doc"})
#: Export modules by their own name. Not ``tracing.py``: it holds the checks eager code
#: calls every step (detectron2's ``assert_fx_safe``, skipped only under a tracer).
_EXPORT_MODULES = _EXPORT_DIRS - {"tracing"}


_STRONGLY_COLD = frozenset(
    {"__init__", "__post_init__", "__repr__", "__str__", "extra_repr", "reset_parameters", "_reset_parameters",
     "init_weights", "_init_weights", "__setstate__", "__getstate__", "__del__", "configure_optimizers",
     "prepare_data", "reset"}
)


#: ``convert_raw_llama_weights_to_neox.py``, ``convert_checkpoint.py``,
#: ``inspect_checkpoints.py``: scripts run once over saved weights, on the host.
_CONVERSION_TOOL = re.compile(r"^(convert|conversion|inspect)_\w*(checkpoint|ckpt|weights|state_dict|_to_)")

#: ``demo/``, ``Demo/``, ``demo_video/``, ``demos/``, ``demo.py``, ``image_demo.py``,
#: ``StyleTTS2_Demo_LJSpeech.ipynb``: scripts and notebooks that show a model on a few
#: inputs (Mask2Former's ``demo/predictor.py`` draws each prediction), not the program's
#: training or inference steps. A folder named ``*_demo`` is not one of them: it is as
#: often the package a small project keeps its program in (``ddpm_demo/``). An interactive
#: GUI (``gui/``, ``run_gui.py``: Cutie's click-to-segment tool and the RITM model only it
#: runs) is one too: it runs a model per click, not the program's steps. Not a training
#: script with an optional GUI (SC-GS's and Deformable-3D-Gaussians' ``train_gui.py``: ``if
#: args.gui: gui.render() else: gui.train(iterations)``), the program's own training loop.
_DEMO_DIR = re.compile(r"^(demos?(_\w+)?|gui)$", re.I)
_DEMO_MODULE = re.compile(r"(^|_)(demos?|(?<!train_)(?<!training_)gui)(_|$)", re.I)

#: ``tools/visualization.py``, ``utils/visualizer.py``, ``plotting.py``, ``attention_plot.py``:
#: modules that draw what a model computed (SlowFast's TensorBoard image writer), once or
#: periodically, not a step. (Functions named so are cold by their own name already.) A
#: module so named that holds a step root (a ``forward``, a training step, a loss) holds the
#: model, its name a word: PLOT's ``trainers/plot.py`` (the paper's name) is its trainer.
#: Also as a word of a longer name (Attention-Gated-Networks' ``visualise_attention.py``,
#: ``plot_utils.py``; ``viz`` too: ffjord's ``diagnostics/viz_cnf.py``), and directories of
#: such tools (deepcluster's ``visu/``, motion-diffusion-model's ``visualize/``, ``viz/``).
_PLOTTING_MODULE = re.compile(r"^(\w+_)?(visuali[sz](e|es|ation|ations|er|ers)|viz|plot(s|ting)?)(_\w+)?$")
_PLOTTING_DIR = re.compile(r"^(visu|viz|visuali[sz]e|visuali[sz]ations?|plots|plotting)$")


def called_only_from(why: str) -> str:
    """The why of a function only cold code calls, named after the root of the chain:
    "called only from test or benchmark code", never "called only from called only
    from ... code code" (nor "called only from called only where it runs rarely: error
    path code": a callee of such a function keeps its why)."""
    if why.startswith("called only "):
        return why
    if why.startswith("never runs: "):  # (a block or a module that never runs)
        return f"called only from code that {why}"
    base = why.split(" (")[0]
    return f"called only from {base if base.endswith(' code') else base + ' code'}"


def _weakly_cold(name: str, why: str) -> bool:
    """Cold by a naming convention that hot code may break (``build_*``, ``setup_*``, an
    epoch hook a training step calls itself)."""
    return (why == CONSTRUCTION and name not in _STRONGLY_COLD) or why == EPOCH_HOOK


def path_context(parts: tuple[str, ...]) -> str | None:
    """Templates (``{{...}}`` in a path), test, benchmark, export, documentation and demo code by the directories it lives in (inside the
    project), and export, conversion and demo modules by their own name (``utils/onnx.py``,
    ``export_onnx_model.py``, ``demo.py``): why a file is outside the program by its path
    alone, or None. Also asked for a notebook, whose cells the index never reads (see
    :func:`synclint.project.facts.notebook_facts`)."""
    if any("{{" in part and "}}" in part for part in parts):
        return TEMPLATE_CODE  # ``{{cookiecutter.directory_name}}/run_{{cookiecutter.name}}.py``
    for part in parts[:-1]:
        if part in _TEST_DIRS:
            return TEST_OR_BENCHMARK_CODE
        if part in _EXPORT_DIRS:
            return "export code"
        if part in _DOC_DIRS:
            return DOCUMENTATION_CODE
        if _DEMO_DIR.match(part):
            return DEMO_CODE
        if _PLOTTING_DIR.match(part):
            return PLOTTING_CODE
    stem = parts[-1].rsplit(".", 1)[0] if parts else ""
    if _DEMO_MODULE.search(stem):
        return DEMO_CODE
    if _PLOTTING_MODULE.match(stem):
        return PLOTTING_CODE
    if stem in _EXPORT_MODULES or stem.startswith(("export_", "onnx_")) or stem.endswith(("_onnx", "_export")):
        return "export code"
    if _CONVERSION_TOOL.match(stem):
        return CONVERSION_TOOL
    return None


def _packages_named_doc_unnamed(key: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    """``parts`` with every ``doc``/``docs`` folder that is a package (an ``__init__.py``:
    a document model's ``pkg/doc/``, which the program imports) renamed to nothing, so that
    only documentation folders (Sphinx's ``docs/source/snippets/``) make code documentation."""
    if not any(part in _DOC_DIRS for part in parts[:-1]):
        return parts
    folders = Path(key).parents  # parts[i] is the folder parents[len(parts) - 2 - i]
    renamed = list(parts)
    for i, part in enumerate(parts[:-1]):
        at = len(parts) - 2 - i
        if part in _DOC_DIRS and at < len(folders) and folders[at].name == part and (folders[at] / "__init__.py").is_file():
            renamed[i] = ""
    return tuple(renamed)


def is_type_stub(path: str) -> bool:
    return path.endswith(".pyi")


#: Array frameworks whose tensors are not torch's: a file that imports one of them and not
#: torch (RT-DETR's ``rtdetr_paddle/`` beside its ``rtdetr_pytorch/``) is another framework's code.
_OTHER_FRAMEWORKS = frozenset({"paddle", "tensorflow", "jax", "mindspore", "oneflow", "mxnet", "megengine", "jittor"})


#: Each index's :func:`file_context` answers, by file key: asked once per call site
#: (which files' calls count, which functions are cold), thousands of times per project.
_FILE_CONTEXTS: WeakKeyDictionary[ProjectIndex, dict[str, str | None]] = WeakKeyDictionary()


def file_context(index: ProjectIndex, key: str) -> str | None:
    """Why a whole file is cold (a type stub, test, benchmark or export code, another
    framework's code), or None."""
    known = _FILE_CONTEXTS.setdefault(index, {})
    if key not in known:
        known[key] = _file_context(index, key)
    return known[key]


def _file_context(index: ProjectIndex, key: str) -> str | None:
    if is_type_stub(key):
        return TYPE_STUB
    if is_test_file(key):
        return "test code"
    entry = index.entries.get(key)
    if entry is not None:
        imported = {module.split(".", 1)[0] for level, module, _name in entry.summary.imports.values() if level == 0}
        other = sorted(imported & _OTHER_FRAMEWORKS)
        if other and "torch" not in imported:
            return f"another framework's code (it imports {other[0]}, not torch)"
    why = path_context(_packages_named_doc_unnamed(key, index.relative_parts(key)))
    if why is None and entry is not None and entry.summary.web_demo is not None:
        why = f"{DEMO_CODE} (a {entry.summary.web_demo.capitalize()} app)"
    if why is not None and (why == PLOTTING_CODE or why.startswith(f"{DEMO_CODE} (")) and entry is not None and any(
        f.root and f.cls is not None for f in entry.summary.functions.values()
    ):
        # Named like plotting code (or a web demo's app), holds the model: a step root of a
        # class (a module's ``forward``, a trainer's step), which the program may import. Not
        # a tool's top-level helper that happens to be called ``forward`` (deepcluster's
        # ``visu/activ-retrieval.py``).
        return None
    return why


def _chain_text(names: list[str]) -> str:
    if len(names) > _MAX_CHAIN:
        names = [*names[:2], "...", *names[-(_MAX_CHAIN - 2):]]
    return " -> ".join(names)


def _short(qualname: str) -> str:
    return f"`{qualname}`"


#: Rounds of taking the calls in skipped blocks out of the hot graph (see
#: :func:`contexts_and_skipped_blocks`); one more round is needed only when a helper's
#: skipped block holds the only hot call of another helper with its own guarded blocks.
_MAX_SKIP_ROUNDS = 4


def contexts_and_skipped_blocks(
    index: ProjectIndex, unnamed: Unnamed = _NONE_UNNAMED, closed: Mapping[FunctionId, SkippedBlocks] | None = None,
    unimported: Mapping[str, str] = MappingProxyType({}), split: bool = False,
) -> tuple[dict[FunctionId, Context], dict[FunctionId, SkippedBlocks], set[FunctionId]]:
    """The context of every function, the blocks the step's calls never enter
    (:mod:`synclint.project.step_branches`). A call made in such a block makes its callee
    hot no more than a call on an error path does, which can leave the step's calls of
    another function all passing one value: so the two are computed until they agree.
    ``unnamed``: top-level classes nothing in the project builds, whose code roots nothing;
    ``closed``: the blocks a constant never lets run
    (:func:`~synclint.project.step_branches.blocks_closed_by_constants`); ``unimported``: the
    modules that never run (:mod:`synclint.project.unimported_modules`), with why; ``split``:
    the index is a piece of a split project, whose callers in other pieces it does not
    hold, so it shows no function called only from construction (no pass at construction,
    see :func:`passes_at_construction`). And the passes at construction of those contexts,
    whose loops' lines are cold and whose calls in them the contexts count as quiet."""
    skipped: dict[FunctionId, SkippedBlocks] = {}
    quiet: dict[int, str] = {}
    contexts = compute_contexts(index, unnamed=unnamed, unimported=unimported)
    for _round in range(_MAX_SKIP_ROUNDS):
        found = blocks_the_step_skips(index, contexts, quiet, closed or {})
        # (The calls in the loops of a pass made at construction are no steps' either.)
        passes = set() if split else passes_at_construction(index, contexts)
        found_quiet = {**_pass_calls(index, passes), **_calls_in(index, found)}
        if found == skipped and found_quiet == quiet:
            break
        skipped, quiet = found, found_quiet
        contexts = compute_contexts(index, quiet, unnamed, unimported)
    else:  # (out of rounds: the passes of the contexts last computed)
        passes = set() if split else passes_at_construction(index, contexts)
    return contexts, skipped, passes


def _pass_calls(index: ProjectIndex, passes: set[FunctionId]) -> dict[int, str]:
    """The calls (by identity) made in the loops over batches of ``passes``, with why."""
    calls = index.resolved_calls()
    return {id(call): CONSTRUCTION_PASS for fid in sorted(passes) for call, _callee in calls.get(fid, ())
            if call.batch_loop is not None}


def _calls_in(index: ProjectIndex, skipped: dict[FunctionId, SkippedBlocks]) -> dict[int, str]:
    """The calls (by identity) made in the skipped blocks, with the blocks' why."""
    quiet: dict[int, str] = {}
    calls = index.resolved_calls()
    for fid, blocks in skipped.items():
        for call, _callee in calls.get(fid, ()):
            for first, last, why in blocks:
                if first <= call.line <= last:
                    quiet[id(call)] = why
                    break
    return quiet


def compute_contexts(
    index: ProjectIndex, quiet_calls: dict[int, str] | None = None, unnamed: Unnamed = _NONE_UNNAMED,
    unimported: Mapping[str, str] = MappingProxyType({}),
) -> dict[FunctionId, Context]:
    """The context of every function in the project. ``quiet_calls``: calls (by identity)
    that make nothing hot beyond those the summaries know, with why; ``unnamed``: top-level
    classes nothing builds, whose methods are no roots (unreached, unless a call reaches
    them; cold when they are built only in blocks that never run, whose why they carry);
    ``unimported``: modules that never run (file key -> why), cold as a whole."""
    quiet_calls = quiet_calls or {}
    #: Functions of an unnamed class (its methods and what they nest) -> the class's name.
    inert: dict[FunctionId, str] = {}
    contexts: dict[FunctionId, Context] = {}
    cold_own: dict[FunctionId, str] = {}
    hot_roots: list[tuple[FunctionId, list[str]]] = []
    data_roots: list[tuple[FunctionId, str]] = []
    loop_calls: list[tuple[FunctionId, list[str]]] = []
    resolved: dict[FunctionId, list[tuple[FunctionId, str | None]]] = {}
    #: ``build_*``/``setup_*``: cold by name unless hot code calls them (``build_packed_seq_idx``
    #: called from ``forward`` runs every step).
    weak_cold: dict[FunctionId, str] = {}
    #: Functions the project calls, each call where it runs rarely or once per call of its
    #: caller (outside the caller's loops): True; a call elsewhere: False.
    rarely_called: dict[FunctionId, bool] = {}
    calls = index.resolved_calls()
    #: Methods of a class built only as a base that every subclass replaces
    #: (:mod:`synclint.project.replaced_methods`): only an explicit ``super().m()`` runs one.
    replaced = {cid for cid, why in unnamed.items() if why is not None and "." in cid[1]}

    for key, entry in index.entries.items():
        summary = entry.summary
        # From the path, not the summary: summaries are shared by files of the same content.
        file_cold = file_context(index, key) or unimported.get(key)
        for qualname, function in summary.functions.items():
            fid = (key, qualname)
            if file_cold is not None:
                cold_own[fid] = file_cold
            elif function.cold is not None and _weakly_cold(function.name, function.cold):
                weak_cold[fid] = function.cold
            elif function.cold is not None:
                cold_own[fid] = function.cold
            owner = qualname.split(".", 1)[0]
            method = ".".join(qualname.split(".", 2)[:2])
            if (key, owner) in unnamed:  # a method of a class, or a function, nothing names
                inert[fid] = owner
            elif (key, method) in unnamed:  # a method nothing names (or what it nests)
                inert[fid] = method
            elif function.root is not None and fid not in cold_own:
                hot_roots.append((fid, [function.root]))
            # (Code nothing names never runs: no data pipeline starts in it either.)
            if function.data_root is not None and fid not in inert:
                data_roots.append((fid, function.data_root))
            edges = []
            for call, callee in calls.get(fid, ()):
                if unnamed and index.dispatched(call, callee) and not _inherited_by_a_built_class(index, callee, unnamed):
                    continue  # (no instance runs that override: nothing builds a class that has it)
                if callee in replaced and call.target.startswith("self."):
                    continue  # (every instance there is runs a subclass's method instead)
                quiet = call.quiet or quiet_calls.get(id(call))
                edges.append((callee, quiet))
                rare = quiet is not None or within_spans(call.line, function.once_spans)
                rarely_called[callee] = rarely_called.get(callee, True) and rare
                # (A loop in code nothing names never runs: its calls are no steps.)
                if call.batch_loop is not None and quiet is None and fid not in cold_own and fid not in inert:
                    where = "module code" if qualname == "<module>" else f"`{qualname}`"
                    loop_calls.append((callee, [f"the loop over `{call.batch_loop}` in {where}", _short(callee[1])]))
            for name in () if fid in inert else function.data_callbacks:
                callee = index.resolve_call(key, function, name)
                if callee is not None:
                    data_roots.append((callee, f"`{name}`"))
            resolved[fid] = edges
        for class_name, klass in summary.classes.items():
            # An optimizer whose ``step`` comes from a base or mixin (``class FP16Optimizer(
            # _FP16OptimizerMixin, FairseqOptimizer)``): that ``step`` is this optimizer's.
            if (
                "step" not in klass.methods and is_optimizer_class(klass) and file_cold is None
                and (key, class_name.split(".", 1)[0]) not in unnamed
            ):
                inherited = index.method(key, class_name, "step")
                if inherited is not None:
                    hot_roots.append((inherited, [f"optimizer step `{class_name}.step` (inherited from `{inherited[1]}`)"]))

    # A function (not a method) that is a step by its name only (``eval_step`` nested in
    # ``train``), that the project calls only where the call runs rarely (every
    # ``save_interval`` steps) or once per call of its caller (after the loop), is no step
    # by name: nothing but those calls runs it. A caller that turns out to be hot still
    # makes it hot below, and one that runs once leaves its straight-line code cold
    # (``called_once``). A method keeps its name: a framework calls its hooks
    # (``compute_loss``, ``training_step``) every step, whatever else the project does.
    hot_roots = [(fid, chain) for fid, chain in hot_roots if not _named_step_called_rarely(index, fid, chain, rarely_called)]

    # Hot: breadth first, so each function keeps its shortest chain.
    queue: deque[tuple[FunctionId, list[str]]] = deque()
    for fid, chain in sorted(hot_roots) + sorted(loop_calls):
        if fid in cold_own or fid in contexts:
            continue
        contexts[fid] = Context(HOT, _chain_text(chain), len(chain) - 1)
        queue.append((fid, chain))
    while queue:
        fid, chain = queue.popleft()
        for callee, quiet in resolved.get(fid, ()):
            if quiet is not None or callee in contexts or callee in cold_own:
                continue
            longer = [*chain, _short(callee[1])]
            contexts[callee] = Context(HOT, _chain_text(longer), len(longer) - 1)
            queue.append((callee, longer))

    # Data pipeline: reachable from a dataset's item access or a collate function.
    data_queue: deque[tuple[FunctionId, str]] = deque()
    for fid, root in sorted(data_roots):
        if fid not in contexts:
            contexts[fid] = Context(COLD, f"data pipeline (reached from {root})")
            data_queue.append((fid, root))
    while data_queue:
        fid, root = data_queue.popleft()
        for callee, _quiet in resolved.get(fid, ()):
            if callee not in contexts and callee not in cold_own:
                contexts[callee] = Context(COLD, f"data pipeline (reached from {root})")
                data_queue.append((callee, root))

    # Cold: construction, setup, export, tests, and what only they (or rare calls) reach.
    cold_queue: deque[FunctionId] = deque()
    callers: dict[FunctionId, set[FunctionId]] = {}
    for caller, edges in resolved.items():
        for callee, _quiet in edges:
            callers.setdefault(callee, set()).add(caller)
    for fid, why in sorted(weak_cold.items()):
        # Evidence over names: a ``build_*`` that code of no known context calls (a public
        # ``add_request`` building each request) is that code's; only cold callers keep it cold.
        if fid not in contexts and all(
            caller in cold_own or (caller in contexts and contexts[caller].is_cold)
            for caller in callers.get(fid, ())
        ):
            cold_own[fid] = why
    for fid, why in sorted(cold_own.items()):
        contexts[fid] = Context(COLD, why)
        cold_queue.append(fid)
    # A function only self-tests call (``_test_scaled_adam`` under ``__main__``) is theirs,
    # loops and all, unless something may run it unseen (see synclint.project.self_tests).
    # A self-test's call says nothing of a function the program calls too: it runs outside
    # the program, not rarely in it. Its other callers decide (a library API's caller leaves
    # it unknown), and the self-test counts for none of them.
    self_test_edges: set[tuple[FunctionId, FunctionId]] = set()
    other_edges: set[tuple[FunctionId, FunctionId]] = set()
    for caller, edges in resolved.items():
        for callee, quiet in edges:
            (self_test_edges if quiet == SELF_TEST else other_edges).add((caller, callee))
    self_test_calls = self_test_edges - other_edges
    self_tests_only = {callee for _caller, callee in self_test_edges} - {callee for _caller, callee in other_edges}
    for fid, edges in sorted(resolved.items()):
        for callee, quiet in edges:
            if quiet == SELF_TEST and callee not in self_tests_only:
                continue
            if quiet is not None and callee not in contexts:
                why = f"called only where it runs rarely: {quiet}"
                if callee in self_tests_only and not index.runs_unseen(callee):
                    why = SELF_TEST_HELPER
                contexts[callee] = Context(COLD, why)
                cold_queue.append(callee)
    while cold_queue:
        fid = cold_queue.popleft()
        for callee, _quiet in resolved.get(fid, ()):
            # (A method of a class nothing builds, which no call reached, never runs: its calls decide nothing.)
            deciding = sorted(caller for caller in callers.get(callee, ())
                              if (caller, callee) not in self_test_calls and not (caller in inert and caller not in contexts))
            if callee not in contexts and deciding and all(
                caller in contexts and contexts[caller].is_cold for caller in deciding
            ):
                why = called_only_from(
                    _program_why([contexts[caller].why for caller in deciding], contexts[fid].why)
                )
                if why == SELF_TEST_HELPER and index.runs_unseen(callee):
                    why = f"called only where it runs rarely: {SELF_TEST}"  # (its loops may be steps)
                contexts[callee] = Context(COLD, why)
                cold_queue.append(callee)
    for fid, owner in inert.items():
        built_only = unnamed[(fid[0], owner)]
        if not built_only:
            built_only = never_named(owner)
        context = Context(UNKNOWN if built_only.startswith(UNREACHED) else COLD, built_only)
        if "." in owner and unnamed[(fid[0], owner)] is None:
            contexts[fid] = context  # (a method nothing names: only its own calls reach it, which never run)
        else:
            contexts.setdefault(fid, context)
    return contexts


def _inherited_by_a_built_class(index: ProjectIndex, override: FunctionId, unnamed: Unnamed) -> bool:
    """Some class that has ``override`` (a subclass's method, which a base class's
    ``self.method(...)`` reaches) as its method may be built: the subclass that defines it,
    or one of its own subclasses that does not replace it, is not among the ``unnamed``
    classes nothing builds. conditional-flow-matching's ``CFMLitModule.step`` calls
    ``self.preprocess_batch``, which ``SplineCFMLitModule`` overrides; nothing names that
    class (its configs build the others), so its override never runs."""
    key, qualname = override
    class_name, _dot, name = qualname.rpartition(".")
    for cid in [(key, class_name), *index.subclasses((key, class_name))]:
        if (cid[0], cid[1].split(".", 1)[0]) not in unnamed and index.method(cid[0], cid[1], name) == override:
            return True
    return False


def _named_step_called_rarely(index: ProjectIndex, fid: FunctionId, chain: list[str],
                              rarely_called: Mapping[FunctionId, bool]) -> bool:
    """``fid`` is a function, not a method, a root by its name alone (``STEP_NAMES``), that
    runs from no call the index does not see, and the project calls it only where a call
    runs rarely or once (``rarely_called``)."""
    if not rarely_called.get(fid, False):
        return False
    function = index.function(fid)
    return (function is not None and function.cls is None and function.name in STEP_NAMES
            and chain == [function.root] and not index.runs_unseen(fid))


def _program_why(caller_whys: list[str], default: str) -> str:
    """The cold reason to name a function after, among those of its (all cold) callers:
    one inside the program when there is one. A helper that a test and the trainer's
    ``__init__`` both call builds the training loader: "called only from test code"
    would hide rules that matter in setup code too (see :func:`outside_the_program`)."""
    return next((why for why in caller_whys if not outside_the_program(why)), default)


#: Why a loop over batches in a function only construction calls runs once per object.
CONSTRUCTION_PASS = "runs once: a pass over batches in code called only from construction or setup"


def passes_at_construction(index: ProjectIndex, contexts: dict[FunctionId, Context]) -> set[FunctionId]:
    """The functions only construction or setup code calls (``__init__``, ``setup``,
    ``build_*``, directly or through other such functions: their context says so) that reach
    no backward pass (their own code or any project function they call, as far as the index
    resolves calls) and step no optimizer, take no ``autograd.grad`` and call no step by
    its name (:data:`STEP_NAMES`, evaluation steps too: a backward pass the index cannot see: see :func:`_trains_itself`), and
    that loop over batches. Those loops are a pass the object makes once, as it is built,
    not a step: ChangeFormer's ``get_alpha``, called from ``CDTrainer.__init__``, counts
    each class's pixels over the training loader to weigh a focal loss. (Other cold
    callers leave such a loop a step: an epoch hook's validation pass runs an inference step
    per batch. So does a loop that trains: a ``Trainer.__init__`` that runs the training; one
    the ``__init__`` of a class built every step calls, directly or through construction
    code (the class, or a subclass, built in a loop over batches or in hot code: see
    :func:`_built_per_step`); and one of a function the
    project passes as a value, ``self.refresh = self.class_weights``: it may run where the
    index sees no call, see :meth:`ProjectIndex.runs_unseen`.)"""
    why = called_only_from(CONSTRUCTION)
    whys = (CONSTRUCTION, why)
    callers = index.callers()
    owners = index.call_owners()
    # (Only a function with a loop over batches has anything a pass would make cold: most
    # projects have none, and pay for nothing below.)
    candidates = [fid for fid, context in contexts.items()
                  if context.is_cold and context.why == why
                  and (function := index.function(fid)) is not None
                  and any(region.kind == HOT for region in function.regions)
                  and not index.runs_unseen(fid)]
    if not candidates:
        return set()
    built_per_step = _built_per_step(index, contexts)
    # (The context's why names one of the callers' roots: every caller must be construction's.)
    candidates = [fid for fid in candidates
                  if all(contexts.get(owner := owners[id(call)], UNKNOWN_CONTEXT).why in whys
                         and owner not in built_per_step
                         for call, _plain in callers.get(fid, ()))]
    if not candidates:
        return set()
    training = _training_functions(index)
    # (Nor one that a caller which trains calls: RobustVideoMatting's ``Trainer.__init__``
    # runs ``self.train()``, whose epochs call ``validate()``, a loop over batches each epoch.)
    return {fid for fid in candidates if fid not in training
            and not any(owners[id(call)] in training for call, _plain in callers.get(fid, ()))
            and not _may_run_a_model(index, fid)}


def _may_run_a_model(index: ProjectIndex, fid: FunctionId) -> bool:
    """Whether a loop over batches of ``fid`` calls something that may be a model: a name
    other than a builtin's, or an attribute of ``self``, that is no project function
    (``model(toks)``, ``self.classifier(x)``), a module's ``forward``/``__call__``, or a
    project function that calls such a thing itself. Such a loop is an inference pass, each
    batch an inference step, however rarely it runs: DiffDock's dataset computes ESM
    embeddings with ``model(toks)`` over a loader in its ``__init__``. A pass that only counts
    (``torch.unique``, ``.item()``, ``max``, a helper that does the same) is not."""
    function = index.function(fid)
    if function is None:
        return True
    seen: set[FunctionId] = {fid}
    pending = [(fid, function, True)]
    while pending:
        current, summary, in_loop_only = pending.pop()
        for call in summary.calls:
            if in_loop_only and call.batch_loop is None:
                continue
            target = call.target
            if "." in target and not target.startswith("self."):
                continue  # (``torch.unique``, ``labels.bincount``: a library's or a value's method)
            if hasattr(builtins, target):
                continue  # (``max``, ``len``, ``list``...: no model)
            callee = index.resolve_call(current[0], summary, target)
            callee_summary = index.function(callee) if callee is not None else None
            if callee_summary is None or callee_summary.name in ("forward", "__call__"):
                return True
            if callee not in seen:
                seen.add(callee)
                pending.append((callee, callee_summary, False))
    return False


def _built_per_step(index: ProjectIndex, contexts: dict[FunctionId, Context]) -> set[FunctionId]:
    """The ``__init__`` methods of classes the project builds, itself or a subclass, in a loop
    over batches or in hot code (``Weigher(val_loader)`` in a training loop): each runs every
    step, and so does what it calls; with the functions called only from construction code
    that they call, transitively (one walk down the call graph)."""
    construction = called_only_from(CONSTRUCTION)
    found: set[FunctionId] = set()
    for cid, sites in index.constructions().items():
        if any(call.batch_loop is not None or contexts.get(builder, UNKNOWN_CONTEXT).is_hot for call, builder in sites):
            for base in index.class_bases(cid):
                if index.function((base[0], f"{base[1]}.__init__")) is not None:
                    found.add((base[0], f"{base[1]}.__init__"))
    calls = index.resolved_calls()
    pending = list(found)
    while pending:
        for _call, callee in calls.get(pending.pop(), ()):
            if callee not in found and contexts.get(callee, UNKNOWN_CONTEXT).why == construction:
                found.add(callee)
                pending.append(callee)
    return found


def _training_functions(index: ProjectIndex) -> set[FunctionId]:
    """The functions that run a backward pass, or train where the index cannot follow it
    (:func:`_trains_itself`), and those that call one of them, transitively, as far as the
    index resolves calls: one walk of the call graph backwards, not one forwards per function."""
    callers, owners = index.callers(), index.call_owners()
    found = {fid for fid in {*index.resolved_calls(), *callers} if _trains_itself(index, fid)}
    pending = list(found)
    while pending:
        for call, _plain in callers.get(pending.pop(), ()):
            if (caller := owners[id(call)]) not in found:
                found.add(caller)
                pending.append(caller)
    return found


def _trains_itself(index: ProjectIndex, fid: FunctionId) -> bool:
    """Whether ``fid``'s own code runs a backward pass, or trains where the index cannot
    follow it: it steps an optimizer (``optimizer.step()`` after a loss a callee the index
    cannot resolve backpropagates), takes gradients with ``autograd.grad``, or calls a step
    by its name (``model.train_step(batch)``; any of :data:`STEP_NAMES`, an evaluation
    step's too, which is a step either way). (A function the index does not hold may.)"""
    function = index.function(fid)
    return function is None or function.backward or function.trains or any(
        _trains_out_of_sight(call.target) for call in function.calls
    )


def _trains_out_of_sight(target: str) -> bool:
    """A call that trains whatever the index resolves: an optimizer's step (``optimizer.step``,
    ``scaler.step``, ``opt.zero_grad``), ``autograd.grad``, a step by its name (:data:`STEP_NAMES`)."""
    receiver, _, name = target.rpartition(".")
    return (steps_an_optimizer(target) or (name == "grad" and receiver.endswith("autograd"))
            or name in STEP_NAMES)
