"""What the analysis of one file needs from the project: :class:`FileFacts`.

The facts are plain, picklable data (they travel to worker processes) with a
digest, which the results cache folds into its key: when another file changes
in a way that changes this file's facts (a caller makes a helper hot, a base
class gains a host buffer), this file is checked again; otherwise its cached
findings stand.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from synclint.project.argument_syncs import CallSiteSync, call_site_syncs
from synclint.project.async_copies import notebook_code, text_copies_asynchronously
from synclint.project.called_once import functions_called_once, runs_once
from synclint.project.cold_reasons import (
    HOST_ONLY_PROJECT,
    TEST_CONTEXTS,
    TEST_OR_BENCHMARK_CODE,
    is_never_named,
    is_self_test,
)
from synclint.project.hotness import (
    COLD,
    CONSTRUCTION_PASS,
    HOT,
    UNKNOWN_CONTEXT,
    Context,
    contexts_and_skipped_blocks,
    file_context,
)
from synclint.project.host_returns import HostCondition
from synclint.project.index import ClassId, FunctionId, ProjectIndex, argument_places
from synclint.project.layout import dotted_tails
from synclint.project.replaced_methods import replaced_methods
from synclint.project.run_once import RUN_ONCE_WHYS
from synclint.project.self_tests import self_test_blocks
from synclint.project.step_branches import SkippedBlocks, blocks_closed_by_constants
from synclint.project.summary import DEVICE_WORD, EPOCH_HOOK, FileSummary, FunctionSummary
from synclint.project.unimported_modules import unimported_modules
from synclint.project.unnamed_classes import unnamed_classes
from synclint.project.unnamed_methods import unnamed_methods


@dataclass(frozen=True)
class FileFacts:
    #: (first line, last line, qualname, context) of every function, sorted by first line.
    functions: tuple[tuple[int, int, str, Context], ...] = ()
    #: (first line, last line, context) of loops over batches (hot), and quiet blocks and
    #: module code that runs once (cold).
    regions: tuple[tuple[int, int, Context], ...] = ()
    #: class qualname -> attributes holding host tensors (``device="cpu"``, ``.cpu()``).
    host_attributes: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Call targets whose project function returns only host tensors: ``helper``,
    #: ``utils.to_host``; ``Cls:self.method`` for methods.
    host_calls: frozenset[str] = frozenset()
    digest: str = ""
    #: ``(function qualname, parameter)`` that every project call site passes a tensor.
    tensor_params: frozenset[tuple[str, str]] = frozenset()
    #: Built from a whole project (not one source on its own) in which the index found
    #: steps (forward, losses, loops over batches): a function nothing reaches from them
    #: is then really unreached, not merely called from elsewhere.
    whole_project: bool = False
    #: Call targets (spelled as in ``host_calls``) whose project function returns host
    #: tensors when the call's arguments for the named parameters are host.
    host_when: dict[str, HostCondition] = field(default_factory=dict)
    #: Call targets (spelled as in ``host_calls``) of project helpers that sync on a
    #: parameter (``item(t)``: ``t.item()``): the sync is reported at the call.
    argument_syncs: dict[str, tuple[CallSiteSync, ...]] = field(default_factory=dict)
    #: (line, 0-based UTF-8 column, rule code) of this file's syncs on a parameter that
    #: are reported at the calls instead (every call of the helper binds its arguments).
    synced_at_callers: frozenset[tuple[int, int, str]] = frozenset()
    #: ``(function qualname, name)`` holding a host tensor (or ``None``) throughout the
    #: function: locals (``batch_sizes`` of a ``PackedSequence``) and parameters every
    #: project call site passes one.
    host_names: frozenset[tuple[str, str]] = frozenset()
    #: Why the whole file is cold (a type stub, test, benchmark or export code, from its
    #: path), or None.
    file_cold: str | None = None
    #: ``(function qualname, parameter)`` that every project call site passes a Python
    #: number (``self.bias(n, device)`` after ``b, n = x.shape[:2]``).
    number_params: frozenset[tuple[str, str]] = frozenset()
    #: No file of the project, notebooks included, asks for an asynchronous host-to-device
    #: copy (:mod:`synclint.project.async_copies`): every copy syncs, from pinned memory or
    #: not. False where the project is split, so not all of it is seen.
    blocking_copies_only: bool = False
    #: Neither this file nor a project module it imports asks for an asynchronous copy: a
    #: loader whose batches stay in the file is copied by blocking copies only (SL402).
    blocking_copies_nearby: bool = False
    #: Another project file imports this module (``from train import loader``, ``import
    #: train``, ``from train import *``): its module-level names may be read there.
    imported_elsewhere: bool = False
    #: Calls (spelled as in ``host_calls``: ``Cls:self.bijector.inverse``) of a method of the
    #: project class an attribute is built from (``self.bijector = TanhBijector(eps)``):
    #: that method runs, not a tensor's method of the same name.
    attribute_methods: frozenset[str] = frozenset()
    #: Names this file's ``from module import *`` of project modules brings in that those
    #: modules import (``np`` after ``from utils import *`` of a ``utils.py`` that does
    #: ``import numpy as np``): local name -> (qualified name, whether it names a module).
    star_imports: dict[str, tuple[str, bool]] = field(default_factory=dict)
    #: The file is part of a project that trains on the host only (:func:`host_only_project`):
    #: all of its code is cold, for :data:`HOST_ONLY_PROJECT`.
    host_only: bool = False

    def function_context(self, qualname: str) -> Context:
        return self._contexts_by_name.get(qualname, UNKNOWN_CONTEXT)

    @cached_property
    def _contexts_by_name(self) -> dict[str, Context]:
        """The first function of each name (asked about once per call in the file)."""
        return {name: context for _first, _last, name, context in reversed(self.functions)}

    def context_at(self, line: int) -> Context:
        """The context of code at ``line``: its innermost function's, unless a region says otherwise."""
        if self.host_only:
            return _HOST_ONLY
        context = UNKNOWN_CONTEXT
        owner_first = 0
        index = bisect.bisect_right(self._starts, line)
        # The innermost function holding ``line`` is the one starting last before it.
        for first, last, _name, function_context in reversed(self.functions[:index]):
            if first <= line <= last:
                context, owner_first = function_context, first
                break
        # A loop over batches is evidence over a name: in an epoch hook (a validation or
        # kNN pass run once per epoch) each of its passes is an inference step, as it is
        # for the helpers it calls. Cold by what calls it, the function's loop is cold too.
        # (Code nothing names never runs, its loops neither; a self-test's loops are its own passes.)
        own_cold = (
            context.is_cold
            and not context.why.startswith(("called only", "data pipeline"))
            and context.why != EPOCH_HOOK
        ) or is_never_named(context.why) or is_self_test(context.why)
        for first, last, region in self.regions:
            if first <= line <= last and first >= owner_first:
                if region.kind == COLD or (region.kind == HOT and not own_cold and not context.is_hot):
                    context = region
                if region.kind == COLD and is_self_test(region.why):
                    break  # (a self-test's loops are its own passes; see synclint.project.self_tests)
        return context

    @property
    def _starts(self) -> list[int]:
        starts = self.__dict__.get("_starts_cache")
        if starts is None:
            starts = [first for first, *_ in self.functions]
            object.__setattr__(self, "_starts_cache", starts)
        return starts


_HOST_ONLY = Context(COLD, HOST_ONLY_PROJECT)
#: Libraries that place a model and its batches on a device themselves (Hugging Face's
#: ``Trainer``, Lightning's, Accelerate, DeepSpeed...): a project built on one need not name one.
_PLACING_FRAMEWORKS = frozenset({
    "transformers", "accelerate", "lightning", "pytorch_lightning", "lightning_fabric", "deepspeed", "fastai",
    "ignite", "mmengine", "mmcv", "mmdet", "mmseg", "detectron2", "colossalai", "composer", "ray", "skorch",
    "catalyst", "poutyne", "keras", "torchrl", "tianshou", "stable_baselines3", "sb3_contrib",
    "ultralytics", "sentence_transformers", "whisper", "pytorch_accelerated",
})
#: Configuration files and scripts that may name a device for the code to read (``device:
#: cuda``, ``--gpu 0``); not documentation, whose prose may mention GPUs in general.
_DEVICE_NAMING_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh", ".bash", ".zsh", ".slurm",
                           ".sbatch", ".pbs", "Makefile", "Dockerfile", ".ipynb")
_DEVICE_WORD_BYTES = re.compile(DEVICE_WORD.pattern.encode(), re.IGNORECASE)


def host_only_project(index: ProjectIndex) -> bool:
    """The project trains its models (a backward pass) and names no device anywhere: no
    ``cuda``, ``gpu``, ``device`` or accelerator in any of its Python files, configuration
    files or scripts, and no library that places tensors on one imported. Nothing moves a
    tensor to a device then, and every tensor lives on the host (spinningup's PyTorch
    algorithms, minimalRL). Not a library without training of its own (its tests' backward
    passes are none): its users' tensors may be anywhere."""
    entries = [entry.summary for entry in index.entries.values()]
    if not entries or any(summary.names_a_device for summary in entries):
        return False
    # (Not a backward pass in its tests: a library's tests check gradients on the host,
    # its users train anywhere.)
    if not any(function.backward for key, entry in index.entries.items()
               if not (file_context(index, key) or "").startswith("test")
               for function in entry.summary.functions.values()):
        return False
    if any(module.partition(".")[0] in _PLACING_FRAMEWORKS
           for summary in entries for _level, module, _name in summary.imports.values()):
        return False
    return not any(_names_a_device(path) for path in index.naming_files if path.endswith(_DEVICE_NAMING_SUFFIXES))


def _names_a_device(path: str) -> bool:
    """The file's text names a device (one that cannot be read may)."""
    try:
        with open(path, "rb") as handle:
            return _DEVICE_WORD_BYTES.search(handle.read(16 << 20)) is not None
    except OSError:
        return True


def facts_for_project(index: ProjectIndex, whole_project: bool = True, split: bool = False) -> dict[str, FileFacts]:
    """Facts for every file of the index, keyed by resolved path.

    ``whole_project``: the index holds a project, not one source on its own;
    ``split``: it holds one piece of a project too big to index at once.
    """
    # Blocks a constant never lets run do not depend on what calls them: known first, they
    # tell which classes are built only there.
    host_only = whole_project and not split and host_only_project(index)
    closed = blocks_closed_by_constants(index, split, whole_project)
    importers = _importers(index)  # (asked by the self-tests and by ``imported_elsewhere``)
    # A module nothing imports, or a class nothing names, cannot run, but only a whole
    # project shows that nothing does; nor who imports a module with a self-test.
    unnamed: dict[ClassId, str | None] = {}
    unimported: dict[str, str] = {}
    if whole_project and not split:
        closed = _with_self_tests(index, closed, importers)
        unimported = unimported_modules(index, lambda key: file_context(index, key))
        decided = _decided_by(index, unimported)
        unnamed = unnamed_classes(index, decided, closed, _tests_only(index, importers))
        unnamed.update(unnamed_methods(index, decided, set(unnamed)))
        unnamed.update(replaced_methods(index, decided, unnamed))
    contexts, skipped, passes = contexts_and_skipped_blocks(index, unnamed, closed, unimported, split)
    if (unnamed or unimported) and not any(context.is_hot for context in contexts.values()):
        # Its only steps were those classes' or modules': a library, which its users build and import.
        unimported = {}
        contexts, skipped, passes = contexts_and_skipped_blocks(index, closed=closed, split=split)
    # Reachability says something only about a project whose steps the index found:
    # in a library of helpers (or a snippet), nothing being called is the normal state.
    # A piece of a huge project counts as having steps (they may be in another piece).
    whole_project = whole_project and (split or any(context.is_hot for context in contexts.values()))
    # A piece of a split project does not hold every call: a caller in another piece may
    # run the function every step (or its loop over batches).
    once = {} if split else functions_called_once(index, contexts)
    # The project's notebooks run its loaders too (a training loop in a notebook that imports
    # them), and import its modules; their code cells are read once, here (index.naming_files
    # holds them, and their stats are part of the facts cache's state). Not in a piece of a
    # split project, which decides neither.
    notebooks = {} if split else {path: notebook_code(path) for path in index.naming_files if path.endswith(".ipynb")}
    blocking_only = (not split and not any(entry.summary.copies_asynchronously for entry in index.entries.values())
                     and not any(map(text_copies_asynchronously, notebooks.values())))
    result: dict[str, FileFacts] = {}
    decided = _decided_by(index, unimported)
    imported = _imported_elsewhere(index, importers, notebooks)
    # (Each file's share of the parameters every call passes a host tensor, or a number.)
    host_params, number_params = _by_file(index.host_parameters(decided)), _by_file(index.number_parameters(decided))
    for key, entry in index.entries.items():
        result[key] = _file_facts(index, key, entry.summary, contexts, skipped, whole_project, once, passes,
                                  host_params, number_params, unimported.get(key), blocking_only, split,
                                  split or key in imported, host_only)
    return result


def _importers(index: ProjectIndex) -> dict[str, set[str]]:
    """Each dotted module name the project's import statements name, with the files (keys)
    whose statements name it (see :func:`_named_modules`)."""
    importers: dict[str, set[str]] = {}
    for key in index.entries:
        for name in _named_modules(index, key):
            importers.setdefault(name, set()).add(key)
    return importers


def _with_self_tests(index: ProjectIndex, closed: dict[FunctionId, SkippedBlocks],
                     importers: dict[str, set[str]]) -> dict[FunctionId, SkippedBlocks]:
    """``closed`` and the ``__main__`` blocks of modules other files import (``importers``:
    see :func:`_importers`), which never run in the program (:mod:`synclint.project.self_tests`)."""
    if not any(entry.summary.main_blocks for entry in index.entries.values()):
        return closed
    found = self_test_blocks(index, importers)
    if not found:
        return closed
    merged = dict(closed)
    for fid, blocks in found.items():
        merged[fid] = (*merged.get(fid, ()), *blocks)
    return merged


def _tests_only(index: ProjectIndex, importers: dict[str, set[str]]) -> Callable[[str], bool]:
    """Whether a file is a test and nothing else: test code by its path (see
    :func:`~synclint.project.hotness.file_context`) that no other file of the program imports
    (End-to-end-ASR's ``bin/test_asr.py`` is the solver ``main.py --test`` imports), and
    that is a test by its code too when only its name says so: a test function or a
    ``TestCase`` (Trajectron++'s ``test_online.py`` is the online inference script its README
    runs). What such a file alone names, the program never builds."""
    names_of: dict[str, list[str]] = {}
    for name, key in index.modules.items():
        names_of.setdefault(key, []).append(name)

    def tests(key: str) -> bool:
        why = file_context(index, key)
        if why not in TEST_CONTEXTS:
            return False
        if any(file_context(index, importer) not in TEST_CONTEXTS
               for name in names_of.get(key, ()) for importer in importers.get(name, ())):
            return False
        summary = index.entries[key].summary
        return why == TEST_OR_BENCHMARK_CODE or any(
            qualname.rsplit(".", 1)[-1].startswith("test") for qualname in summary.functions
        ) or any(base.rsplit(".", 1)[-1] == "TestCase" for klass in summary.classes.values() for base in klass.bases)

    return tests


def _decided_by(index: ProjectIndex, unimported: dict[str, str]) -> Callable[[str], bool]:
    """Whether a file's context is decided as a whole: by its path (a test, an export tool),
    or because it never runs (what it calls or passes says nothing of the program)."""
    return lambda key: key in unimported or file_context(index, key) is not None


def _tensor_parameters(index: ProjectIndex, key: str, summary: FileSummary) -> frozenset[tuple[str, str]]:
    """Parameters that every project call site (at least one) passes a visible tensor."""
    callers = index.callers()
    found = set()
    for qualname, function in summary.functions.items():
        sites = callers.get((key, qualname))
        if not sites:
            continue
        params = list(function.params)
        if function.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        for position, name in enumerate(params):
            places = argument_places(function, position, name)
            if all(any(where in call.tensor_args for where in places) for call, bound in sites if bound) and all(
                bound for _call, bound in sites
            ):
                found.add((qualname, name))
    return frozenset(found)


def _reports_at_calls(index: ProjectIndex, contexts, fid, function) -> bool:
    """The helper's syncs on its parameters are reported at its calls: it has some, every
    call binds its arguments, and it is not cold on its own account (a logging helper,
    test code) but at most through its callers, whose calls then say so."""
    if not function.argument_syncs or not index.binds_every_call(fid):
        return False
    context = contexts.get(fid, UNKNOWN_CONTEXT)
    return not context.is_cold or context.why.startswith(("called only", "data pipeline"))


def _regions(function: FunctionSummary, runs_once: bool = True) -> list[tuple[int, int, Context]]:
    """The hot and cold blocks the summary found in ``function``; without the module's
    code that runs once unless ``runs_once``: a module cold as a whole (a test, an
    export tool) keeps that reason, under which even rules that matter wherever the
    program runs (an unpinned loader) are cold (see :func:`outside_the_program`)."""
    where = "module code" if function.qualname == "<module>" else f"`{function.qualname}`"
    return [
        (region.start, region.end, Context(region.kind, f"{region.why} in {where}" if region.kind == HOT else region.why))
        for region in function.regions
        if runs_once or region.why not in RUN_ONCE_WHYS
    ]


def notebook_facts(project_file: FileFacts, file_cold: str | None = None) -> FileFacts:
    """What a project (whose file ``project_file`` is) says of a notebook in its tree, which
    the index does not hold (its own facts come from its cells on their own): whether every
    copy in the project blocks (a notebook's loader is copied by the project's training
    functions too), and why its path puts it outside the program (``file_cold``: StyleTTS2's
    ``Demo/Inference_LJSpeech.ipynb`` is demo code, which its cells alone cannot tell)."""
    blocking = project_file.blocking_copies_only
    return FileFacts(digest=f"{'blocking copies only' if blocking else 'asynchronous copies'}; {file_cold}",
                     blocking_copies_only=blocking, file_cold=file_cold)


def in_project(own: FileFacts, project: FileFacts | None) -> FileFacts:
    """The facts of a text analysed on its own (``own``: a notebook's cells, a file's text
    being fixed) with what its project says of it (``project``: :func:`notebook_facts`, or
    the file's facts; None outside any project): its loaders' batches may be copied
    asynchronously by the project's other files; and what its star imports of project
    modules bring in, which the text alone cannot show; and whether the project runs on the
    host only (:func:`host_only_project`), which makes all of its code cold."""
    if project is None:
        return own
    return replace(own, blocking_copies_only=own.blocking_copies_only and project.blocking_copies_only,
                   blocking_copies_nearby=own.blocking_copies_nearby and project.blocking_copies_nearby,
                   imported_elsewhere=own.imported_elsewhere or project.imported_elsewhere,
                   star_imports={**own.star_imports, **project.star_imports},
                   host_only=own.host_only or project.host_only)


def _file_facts(index: ProjectIndex, key: str, summary: FileSummary, contexts, skipped, whole_project: bool,
                once: dict[FunctionId, str], passes: set[FunctionId],
                host_params: dict[str, list[tuple[str, str]]], number_params_by_file: dict[str, list[tuple[str, str]]],
                never_runs: str | None = None,
                blocking_copies_only: bool = False, split: bool = False,
                imported_elsewhere: bool = False, host_only: bool = False) -> FileFacts:
    functions = []
    regions = []
    host_calls: set[str] = set()
    host_when: dict[str, HostCondition] = {}
    unsure: set[str] = set()
    argument_syncs: dict[str, tuple[CallSiteSync, ...]] = {}
    synced_at_callers: set[tuple[int, int, str]] = set()
    callees_of: dict[str, set] = {}
    attribute_methods: set[str] = set()
    calls = index.resolved_calls()
    for function in summary.redefined:  # the name's context, and its own cold and hot blocks
        functions.append((function.line, function.end_line, function.qualname,
                          contexts.get((key, function.qualname), UNKNOWN_CONTEXT)))
        regions += _regions(function)
    for qualname, function in summary.functions.items():
        if qualname == "<module>":
            context = contexts.get((key, qualname), UNKNOWN_CONTEXT)
            if context.is_cold:
                functions.append((function.line, function.end_line, qualname, context))
            regions += _regions(function, runs_once=not context.is_cold)
        else:
            functions.append((function.line, function.end_line, qualname, contexts.get((key, qualname), UNKNOWN_CONTEXT)))
            regions += _regions(function)
        if _reports_at_calls(index, contexts, (key, qualname), function):
            synced_at_callers.update((sync.line, sync.column, sync.code) for sync in function.argument_syncs)
        for call, callee in calls.get((key, qualname), ()):
            target = index.function(callee)
            spelled = f"{function.cls}:{call.target}" if call.target.startswith("self.") else call.target
            callees_of.setdefault(spelled, set()).add(callee)
            if _through_an_attribute_class(index, key, function, call.target, callee):
                attribute_methods.add(spelled)
            if target is not None and _reports_at_calls(index, contexts, callee, target):
                argument_syncs[spelled] = call_site_syncs(callee[1], target.params, target.cls is not None, target.argument_syncs)
            if target is not None and target.returns_host:
                host_calls.add(spelled)
            elif target is not None and target.host_when is not None and host_when.get(spelled, target.host_when) == target.host_when:
                host_when[spelled] = target.host_when
            else:
                unsure.add(spelled)  # another function of the same spelling (an override) decides nothing
    host_when = {spelled: condition for spelled, condition in host_when.items() if spelled not in unsure}
    # One spelling that runs several functions (an override) decides nothing.
    argument_syncs = {spelled: syncs for spelled, syncs in argument_syncs.items() if syncs and len(callees_of[spelled]) == 1}
    regions += [(first, last, Context(COLD, why))
                for qualname in summary.functions for first, last, why in skipped.get((key, qualname), ())]
    regions += [(first, last, Context(COLD, runs_once(once[key, qualname])))
                for qualname, function in summary.functions.items() if (key, qualname) in once
                for first, last in function.once_spans]
    # (Its loops over batches too, when only construction calls it and nothing there trains.)
    regions += [(region.start, region.end, Context(COLD, CONSTRUCTION_PASS))
                for qualname, function in summary.functions.items() if (key, qualname) in passes
                for region in function.regions if region.kind == HOT]
    tensor_params = _tensor_parameters(index, key, summary)
    host_names = {(qualname, name) for qualname, function in summary.functions.items() for name in function.host_names}
    host_names.update(host_params.get(key, ()))
    number_params = set(number_params_by_file.get(key, ()))
    host_attributes = {}
    for class_name in summary.classes:
        attrs = index.host_attributes(key, class_name)
        if attrs:
            host_attributes[class_name] = attrs
    functions.sort(key=lambda item: (item[0], -item[1]))
    regions.sort(key=lambda item: (item[0], -item[1]))
    file_cold = file_context(index, key) or never_runs
    star_imports = _star_imported_names(index, key)
    # (A piece of a split project may import a module of another piece.)
    nearby = not split and not _copies_asynchronously_nearby(index, key)
    digest = hashlib.blake2b(
        repr((whole_project, blocking_copies_only, nearby, imported_elsewhere, sorted(attribute_methods), file_cold, sorted(tensor_params), functions, regions, sorted((k, sorted(v)) for k, v in host_attributes.items()), sorted(host_calls), sorted(host_when.items()),
              sorted(argument_syncs.items()), sorted(synced_at_callers), sorted(host_names), sorted(number_params),
              sorted(star_imports.items()), host_only)).encode(),
        digest_size=12,
    ).hexdigest()
    return FileFacts(
        tuple(functions), tuple(regions), host_attributes, frozenset(host_calls), digest, tensor_params, whole_project,
        host_when=host_when, argument_syncs=argument_syncs, synced_at_callers=frozenset(synced_at_callers),
        host_names=frozenset(host_names), file_cold=file_cold, number_params=frozenset(number_params),
        blocking_copies_only=blocking_copies_only, attribute_methods=frozenset(attribute_methods),
        blocking_copies_nearby=nearby, imported_elsewhere=imported_elsewhere, star_imports=star_imports,
        host_only=host_only,
    )


def _by_file(params: frozenset[tuple[FunctionId, str]]) -> dict[str, list[tuple[str, str]]]:
    """``params`` (``((file key, qualname), name)``) as ``(qualname, name)`` by file key."""
    shares: dict[str, list[tuple[str, str]]] = {}
    for (file_key, qualname), name in params:
        shares.setdefault(file_key, []).append((qualname, name))
    return shares


def _star_imported_names(index: ProjectIndex, key: str,
                         walked: dict[str, dict[str, tuple[str, bool]] | None] | None = None) -> dict[str, tuple[str, bool]]:
    """What the star imports of project modules in file ``key`` bring in of those modules'
    own absolute imports (see :attr:`FileFacts.star_imports`), through their star imports
    too; the file's own imports come first, and a later star import wins, as when run.
    (``walked``: what each module walked so far hands on, None while it is being walked:
    each module is walked once, since modules that star-import one another have as many
    paths through them as orderings.)"""
    walked = {} if walked is None else walked
    walked[key] = None  # (a cycle of star imports back to it adds nothing)
    found: dict[str, tuple[str, bool]] = {}
    for level, module, names in index.entries[key].summary.module_imports:
        if "*" not in names:
            continue
        source = index.modules.get(index.absolute_module(key, level, module))
        if source is None or source not in index.entries:
            continue
        if source not in walked:
            handed_on = _star_imported_names(index, source, walked)
            for local, (source_level, imported, name) in index.entries[source].summary.imports.items():
                if not local.startswith("_") and not source_level:
                    handed_on[local] = (f"{imported}.{name}" if name else imported, name is None)
            walked[source] = handed_on
        found.update(walked[source] or {})
    own = index.entries[key].summary.imports
    return {local: value for local, value in found.items() if local not in own}


def _named_modules(index: ProjectIndex, key: str) -> set[str]:
    """The dotted names of the modules the import statements of file ``key`` name, wherever
    they stand: ``import a.b`` names ``a.b``; ``from a import b`` (or ``*``) names ``a`` and
    ``a.b``; relative imports resolved against the file's package."""
    named = set()
    for level, module, names in index.entries[key].summary.module_imports:
        absolute = index.absolute_module(key, level, module)
        if absolute:
            named.add(absolute)
        named.update(f"{absolute}.{name}" if absolute else name for name in names if name != "*")
    return named


#: An import statement of a notebook's code cells, by its text (cells hold IPython lines
#: that are no Python): ``from a.b import c, d``, ``import a.b as e, f``.
_NOTEBOOK_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?([\w, \t]+)|import[ \t]+([\w., \t]+))",
                              re.MULTILINE)


def _notebook_imports(code: str) -> set[str]:
    """The dotted names of the modules the import statements of a notebook's code name."""
    named = set()
    for found in _NOTEBOOK_IMPORT.finditer(code):
        module, names, plain = found.groups()
        if module is not None:
            named.add(module)
            named.update(f"{module}.{name.split()[0]}" for name in names.split(",") if name.split())
        else:
            named.update(name.split()[0] for name in plain.split(",") if name.split())
    return named


def _imported_elsewhere(index: ProjectIndex, importers: dict[str, set[str]], notebooks: dict[str, str]) -> set[str]:
    """The files that another project file (``importers``: see :func:`_importers`), or a
    notebook of the project (``notebooks``: path -> its code cells), imports, by their dotted
    name or a tail of it (``from data import loader`` from a script beside ``data.py``)."""
    from_notebooks: dict[str, set[str]] = {}
    for path, code in notebooks.items():
        for name in _notebook_imports(code):
            from_notebooks.setdefault(name, set()).add(path)
    found = set()
    for key, entry in index.entries.items():
        for tail in dotted_tails(entry.name):
            if (importers.get(tail, set()) | from_notebooks.get(tail, set())) - {key}:
                found.add(key)
    return found


def _copies_asynchronously_nearby(index: ProjectIndex, key: str) -> bool:
    """The file, or a project module it imports (``from mit_semseg.lib.nn import
    async_copy_to``, a helper that copies with ``non_blocking=True``, defined in a module
    the package re-exports it from; ``import pkg.tool``; ``from pkg.tool import *``),
    asks for an asynchronous copy."""
    summary = index.entries[key].summary
    if summary.copies_asynchronously:
        return True
    for name in _named_modules(index, key):
        other = index.modules.get(name)
        if other is not None and other in index.entries and index.entries[other].summary.copies_asynchronously:
            return True
    for local in summary.imports:
        imported, _ = index.resolve_import(key, local)
        _, defined_in, _ = index.resolve_name(key, "<module>", local)
        if any(other is not None and other in index.entries and index.entries[other].summary.copies_asynchronously
               for other in (imported, defined_in)):
            return True
    return False


def _through_an_attribute_class(index: ProjectIndex, key: str, function: FunctionSummary, target: str,
                                callee: FunctionId) -> bool:
    """``self.attr.method(...)`` runs ``callee`` because ``attr`` is built from a project class
    that defines (or inherits from the project) ``method``, not by the one-method-of-that-name
    guess (:meth:`ProjectIndex.unique_method`), which says nothing of what the receiver is."""
    parts = target.split(".")
    if function.cls is None or len(parts) != 3 or parts[0] != "self":
        return False
    attr_class = index.module_attr_class(key, function.cls, parts[1])
    return attr_class is not None and index.method(attr_class[0], attr_class[1], parts[2]) == callee
