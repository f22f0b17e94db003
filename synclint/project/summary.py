"""What one file tells the project index: its functions, classes, calls and imports.

A summary depends on the file's content only (never on where the file lives),
so it is cached by content hash. It is built with CPython's ``ast`` (about ten
times faster than libcst): the index needs names, line ranges and call targets,
not exact positions of every token.

Calls are recorded as the dotted text of what is called (``helper``,
``self.head``, ``utils.nonzero_tuple``, ``super.forward``): resolving them
needs the other files, which is the index's job.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from synclint.project.argument_syncs import (
    ArgumentSync,
    argument_sync,
    returned_calls,
    stable_parameters,
    tensor_parameters,
)
from synclint.project.async_copies import copies_asynchronously
from synclint.project.command_flags import (
    NO_COMMAND_LINE,
    CommandLine,
    command_line,
    module_parse_bound_names,
    parse_bound_names,
    self_aliases,
)
from synclint.project.constant_attributes import (
    COMPUTED_STORE,
    NO_COMPUTED_STORE,
    UNKNOWN_VALUE,
    ConstructorArgument,
    StoredValue,
    attribute_stores,
    class_body_names,
    constructor_arguments,
    lambda_nodes,
)
from synclint.project.host_returns import HostCondition, host_condition
from synclint.project.interactive import INTERACTIVE, plots_block, waits_for_a_person
from synclint.project.loss_names import is_loss_class, is_loss_function
from synclint.project.notebook_cells import is_notebook_module
from synclint.project.numbers import is_number, is_text, no_tensor_names, number_names, visibly_no_tensor
from synclint.project.residency import (
    IN_PLACE_ATTRIBUTES,
    IN_PLACE_METHODS,
    closure_rebound_names,
    host_names,
    is_host_field,
    kept_in_place,
    packed_sequences,
    rebound_names,
)
from synclint.project.rare_blocks import (
    NON_FINITE_ONLY,
    TRACING_ONLY,
    WARNING_ONLY,
    GuardSubjects,
    ParamGuard,
    bounded_by_counter,
    clears_its_flag,
    clears_loop_flag,
    constant_value,
    cuda_only_check,
    ends_in_raise,
    fills_loop_local,
    handles_invalid_data,
    incremented,
    fills_after_a_hit,
    is_lazy_initialisation,
    is_positive_int,
    keeps_finite_elements,
    only_warns,
    tests_who_or_whether,
    other_backend_check,
    parameter_guards,
    rearmed_flags,
    refills_in_else,
    returns_on_cuda,
    root_name,
    tracing_only,
    true_on_finite,
    true_only_on_non_finite,
)
from synclint.project.scopes import (
    COMPREHENSIONS,
    TRY_STATEMENTS,
    all_nodes,
    child_nodes,
    continues_its_loop,
    field_values,
    function_nodes,
    names_bound_by,
    names_bound_in,
    nested_scopes,
    own_nodes,
    parameter_defaults,
    runs_at_most_once,
    sides_of_less,
    walk_nodes,
)
from synclint.project.period_guards import continues_until_a_period, past_the_first
from synclint.project.redefined import redefined_functions
from synclint.project.tensor_fallbacks import TensorFallback, tensor_fallbacks
from synclint.project.run_once import code_apart, run_once_spans, straight_line_spans
from synclint.project.scripts import is_script, main_blocks, registers_itself
from synclint.project.web_demos import web_demo_library
from synclint.project.value_references import (
    handed_to_a_decorator,
    is_self_attribute,
    names_passed_as_values,
    self_attributes_called_within,
    self_attributes_handed_on,
)

#: Why a block that fills a cache on a miss runs rarely (see :mod:`synclint.project.rare_blocks`).
_LAZY_INITIALISATION = "once per key (lazy initialisation: a cache filled on a miss)"
#: A block that runs only where no CUDA device is (or for tensors off it): nothing waits for a CUDA stream.
_OFF_CUDA = "another backend only (not a CUDA device)"

#: Bump when the summary format changes: cached summaries of another version are ignored.
SUMMARY_VERSION = 85

#: Names that say "an iterable of batches": the project index and the per-file
#: analysis (synclint.analysis.loaders) must agree, so this is the one definition. Not
#: "loaders" (``for name, loader in zip(names, data_loaders_val):`` runs once per loader).
LOADER_NAME = re.compile(r"(loader(?!s)|^dl$|_dl$|^batches$|^batch_iter)", re.I)
_LOADER_NAME = LOADER_NAME
#: A call that yields batches: ``self._iter_batches()``, ``iter_batches(...)``, ``get_batches()``.
_BATCHES_CALL = re.compile(r"(^|_)batches$", re.I)
#: Steps by their name: what a framework calls every step (Lightning's, Hugging Face's)
#: and what programs name so. A name is weaker evidence than a call: a function of the
#: project called only where it runs rarely is no step, whatever its name (``hotness``).
STEP_NAMES = frozenset(
    {"training_step", "validation_step", "test_step", "predict_step", "train_step", "eval_step",
     "compute_loss", "run_step", "fit_one_batch", "training_step_end", "train_batch", "eval_batch"}
)
#: The cold why of construction and setup code (``__init__``, ``setup``, ``build_*``).
CONSTRUCTION = "construction or setup"
_COLD_NAMES = frozenset(
    {"__init__", "__post_init__", "__repr__", "__str__", "extra_repr", "setup", "reset_parameters",
     "_reset_parameters", "init_weights", "_init_weights", "reset", "__setstate__", "__getstate__",
     "__del__", "configure_optimizers", "prepare_data"}
)
_COLD_PREFIXES = ("build_", "_build_", "test_", "setup_", "_setup_", "export", "_export", "symbolic", "_symbolic",
                  "onnx", "_onnx", "plot", "_plot", "visuali", "print_", "save_", "load_", "from_pretrained",
                  "precompute", "_precompute")
#: Logging helpers (not ``log_softmax``/``log_prob``, which are math).
_LOGGING = re.compile(
    r"(^|_)(logging|logger|tensorboard|wandb|training_log)(_|$)|"
    r"^_?log_(metrics|stats|info|scalars?|images?|step|losses?|results?|values?|dict|hparams|grad_norm|memory|throughput)$"
)
#: Framework hooks that run once per epoch, phase, validation or run (Lightning's
#: ``on_train_epoch_end``, ``on_validation_end``, ``validation_epoch_end``; ClassyVision's and
#: VISSL's ``on_phase_start``), not per step: not ``on_train_batch_end``,
#: ``on_before_backward`` or ``on_after_optimizer_step``, which run every step.
_EPOCH_HOOK = re.compile(
    r"^_?on_(\w+_)?(epoch|phase|fit|sanity_check)_(start|begin|end)$"
    r"|^_?on_(train|training|validation|val|test|predict)_(start|begin|end)$"
    r"|^(training|validation|test)_epoch_end$"
)
#: Why a function so named is cold (cold by a name hot code may break: see ``hotness``).
EPOCH_HOOK = "epoch or phase hook code (runs per epoch, phase or run, not per step)"
_COLD_WORDS = re.compile(r"(^|_)(onnx|export|symbolic|plot|visuali[sz]e|benchmark|throughput|warmup|warm_up|demo)(_|$)", re.I)
#: Opt-in debugging aids: ``_maybe_dump_logits``, ``_debug_dump_patches`` (not ``debugmodel``).
_DEBUG_WORDS = re.compile(r"(^|_)(dump|debug)(_|$)", re.I)
_DATASET_BASE = re.compile(r"(^|\.)(\w*Dataset|IterableDataset|Sampler)$")
_DATA_CLASS = re.compile(r"(Dataset|ImageProcessor|ImageProcessorFast|FeatureExtractor|Tokenizer|TokenizerFast|Collator|Collate)$")
_PROCESSOR_CLASS = re.compile(r"(ImageProcessor|ImageProcessorFast|FeatureExtractor|VideoProcessor)$")
#: Data transforms (``BaseTransform``, torchvision's and fvcore's ``Transform``): applied to
#: samples by datasets and loaders, however ``nn.Module``-like their ``forward`` looks.
#: A base *named* like a transform, not a class: ``Box2BoxTransform`` codes boxes in the model.
_TRANSFORM_BASE = re.compile(r"(^|\.)\w*Transform$")
_TRANSFORM_METHODS = frozenset({"forward", "__call__"})
#: A collate function written as a class (``MultiViewCollate``, ``PadCollator``,
#: ``DataCollatorForSeq2Seq``): the loader calls it on samples, whatever it derives from.
_COLLATE_CLASS = re.compile(r"Collat(e|or)")
#: A collate function written as a module (lightly's ``VICRegLCollateFunction(nn.Module)``):
#: its ``forward`` is no step. A module only *named* like a collator (``TokenCollator``, a
#: layer of the model built into an ``nn.Sequential``) runs its ``forward`` every step.
_COLLATE_MODULE = re.compile(r"Collate(Function|Fn)")
_DATA_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__", "__call__"})
_OPTIMIZER_BASE = re.compile(r"(^|\.)(\w*Optimizer|Optimizer)$")
#: Why a block under ``if batch_idx == 0:`` is quiet.
FIRST_BATCH_ONLY = "first batch only (once per pass over the data)"
#: Why ``if batch_idx < 10:`` is cold.
FIRST_BATCHES_ONLY = "first batches only (a few per pass over the data)"
#: Why a block that leaves the loop over batches is cold (see :func:`_leaves_the_batch_loop`).
LEAVES_THE_LOOP = "runs once (it leaves the loop over batches)"
#: ``if step % log_every == 0:``-style guards: their bodies run periodically.
_PERIODIC_NAME = re.compile(
    r"(^|_)(log|logging|print|display|plot|vis|visuali[sz]e|save|checkpoint|ckpt|interval|every|freq|"
    r"frequency|verbose|debug|report|summary|tensorboard|wandb)(_|$)",
    re.I,
)
_TEST_FILE = re.compile(r"(^test_.*|.*_test|conftest)\.py$")
_FACTORIES = frozenset(
    {"tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
     "randperm", "arange", "linspace", "eye", "Tensor", "LongTensor", "FloatTensor", "BoolTensor",
     "IntTensor", "ByteTensor", "frombuffer", "asarray"}
)


class CallSite(NamedTuple):  # a tuple: there are hundreds of thousands in a big project
    target: str  # dotted text of the callee: ``helper``, ``self.head``, ``mod.f``, ``super.forward``
    line: int
    #: Why this call does not make its callee hot ("periodic", "error path", "after the loop"), or None.
    quiet: str | None = None
    #: The loop over batches this call sits in (``train_loader``), or None.
    batch_loop: str | None = None
    #: Which arguments are visibly tensors: positions, and keyword names.
    tensor_args: tuple[int | str, ...] = ()
    #: Which arguments are host tensors or ``None`` (see :mod:`synclint.project.residency`).
    host_args: tuple[int | str, ...] = ()
    #: Arguments that pass on a parameter of the caller unchanged: (position or keyword, parameter).
    forwarded: tuple[tuple[int | str, str], ...] = ()
    #: Every argument, with its value when it is a constant (``is_joined_rank=False``,
    #: ``mode="cpu"``): (position or keyword, ``(value,)``, or ``()`` for anything else);
    #: ``("*", ())`` when ``*args``/``**kwargs`` pass more.
    constants: tuple[tuple[int | str, tuple[()] | tuple[object]], ...] = ()
    #: Which arguments are visibly Python numbers (``n`` of ``b, n = x.shape[:2]``) or
    #: strings (``'b (f n) d'``), see :mod:`synclint.project.numbers`: positions, and
    #: keyword names.
    number_args: tuple[int | str, ...] = ()
    #: Arguments that are an attribute of ``self``: (position or keyword, attribute name).
    #: The index takes one for a Python value when the attribute only ever holds constants
    #: (``self.einops_from = 'b (f n) d'`` in ``__init__``, see
    #: :mod:`synclint.project.constant_attributes`).
    attribute_args: tuple[tuple[int | str, str], ...] = ()
    #: ``attr`` when the call is the value of ``self.attr = ...`` (``Head(...)``, or
    #: ``Head(...) if flag else None``), else "": when it builds the module the index takes
    #: ``self.attr`` for, the index resolves the instance's calls.
    held_by: str = ""
    #: Arguments that are visibly no tensor for another reason than being a number or a
    #: string: a literal container or comprehension (``[0.5, 0.5]``, ``(t,)``, ``{...}``), a
    #: constant of any kind, a lambda, ``x.tolist()``, ``np.array(...)`` (see
    #: :mod:`synclint.project.tensor_fallbacks`).
    literal_args: tuple[int | str, ...] = ()


class Region(NamedTuple):
    """Lines of a function whose context differs from the function's own."""

    start: int
    end: int
    kind: str  # "hot" (a loop over batches) | "cold"
    why: str


@dataclass
class FunctionSummary:
    qualname: str  # ``Cls.method``, ``func``, ``outer.inner``; ``<module>`` for top-level code
    name: str
    cls: str | None
    line: int
    end_line: int
    params: tuple[str, ...] = ()
    #: Why every call of this function is a step (forward, a loss, a training step), or None.
    root: str | None = None
    #: Why it runs once or never per step (construction, export, tests), or None.
    cold: str | None = None
    #: Why it runs in the data pipeline (``Dataset.__getitem__``, a collate function), or None.
    data_root: str | None = None
    calls: list[CallSite] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    #: Every tensor it returns lives in host memory (``.cpu()``, a factory without a device).
    returns_host: bool = False
    #: Its tensors come back in host memory when these arguments are host (``cumsum(x)``).
    host_when: HostCondition | None = None
    #: Names passed as ``collate_fn=``/``worker_init_fn=`` here: data-pipeline roots.
    data_callbacks: list[str] = field(default_factory=list)
    #: Syncs on its parameters whose result it returns (``return tensor.item()``), outside
    #: rare blocks: reported at its call sites (see :mod:`synclint.project.argument_syncs`).
    argument_syncs: list[ArgumentSync] = field(default_factory=list)
    #: Local names that hold host tensors (or ``None``) wherever they are assigned.
    host_names: frozenset[str] = frozenset()
    #: Parameters the body never rebinds: they hold what the caller passed throughout.
    kept_params: frozenset[str] = frozenset()
    #: Parameters the body rebinds, if at all, only to a view or cast of themselves
    #: (``labels = labels.reshape(n, -1)``, ``labels = labels[:, :3]``): they stay where the
    #: caller's tensor lives throughout (see :func:`synclint.project.residency.kept_in_place`).
    resident_params: frozenset[str] = frozenset()
    #: Names holding a ``PackedSequence`` (whose ``batch_sizes`` is a host tensor).
    packed: frozenset[str] = frozenset()
    #: Blocks run only for some values of a parameter (``if mode == "cpu":``).
    param_guards: tuple[ParamGuard, ...] = ()
    #: Parameters' constant defaults (``mode="gpu"``).
    defaults: dict[str, object] = field(default_factory=dict)
    #: Parameters with a default of any kind (``scale=SCALE`` too).
    defaulted: frozenset[str] = frozenset()
    #: Blocks run only when a parameter is not a tensor (``if not torch.is_tensor(t): t =
    #: torch.tensor([t], device=...)``), see :mod:`synclint.project.tensor_fallbacks`.
    tensor_fallbacks: tuple[TensorFallback, ...] = ()
    #: Parameters only a keyword can pass (after ``*`` or ``*args``): no position binds them.
    keyword_only: frozenset[str] = frozenset()
    #: Parameters only a position can pass (before ``/``): a keyword of their name goes to
    #: ``**kwargs``, if anywhere.
    positional_only: frozenset[str] = frozenset()
    #: (first line, last line) of its code outside loops and comprehensions, which runs once
    #: per call (see :func:`synclint.project.run_once.straight_line_spans`); for ``<module>``,
    #: once per run. Only for a function with no root or data role of its own: the others
    #: never take their callers' context.
    once_spans: tuple[tuple[int, int], ...] = ()
    #: Blocks run only for some values of an attribute of ``self`` (``if self.stratified:``),
    #: with ``param`` spelled ``self.stratified`` (see :mod:`synclint.project.constant_attributes`).
    attribute_guards: tuple[ParamGuard, ...] = ()
    #: Blocks run only for some values of a command-line flag (``if args.masks:``), with
    #: ``param`` spelled ``args.masks``: on a parameter (a receiver only if the project
    #: binds its name from ``parse_args``), or on a name bound only from ``parse_args``
    #: (see :mod:`synclint.project.command_flags`); ``self.opt.masks`` on an attribute of
    #: a method's ``self`` (a receiver only if the project binds its name so), also when
    #: read through ``opt = self.opt``.
    flag_guards: tuple[ParamGuard, ...] = ()
    #: A loop of its body draws batches and runs a backward pass (:func:`trains_on_batches`):
    #: a ``__main__`` block that reaches it trains (see :mod:`synclint.project.self_tests`).
    trains: bool = False
    #: It runs a backward pass itself (``loss.backward()``), in a loop or not: a loop over
    #: batches that calls it trains (see :mod:`synclint.project.self_tests`).
    backward: bool = False
    #: (first line, last line) of its loops that draw batches (:func:`step_loop`), not of
    #: those over its own items (a self-test's ``for x, y in pairs``): one that calls a
    #: backward pass trains (see :mod:`synclint.project.self_tests`).
    draws: tuple[tuple[int, int], ...] = ()

    @property
    def call_params(self) -> tuple[str, ...]:
        """The parameters a call's arguments bind, in order: a method's without its
        ``self``/``cls`` (``self.head(x)``: ``x`` is the first)."""
        if self.cls is not None and self.params[:1] in (("self",), ("cls",)):
            return self.params[1:]
        return self.params


@dataclass
class ClassSummary:
    name: str
    line: int
    end_line: int
    bases: tuple[str, ...]
    methods: tuple[str, ...]
    #: ``self.head = Head(...)``: attribute -> dotted text of the class it is built from.
    module_attrs: dict[str, str] = field(default_factory=dict)
    #: Attributes every assignment of which is a host tensor (``device="cpu"``, ``.cpu()``).
    host_attrs: frozenset[str] = frozenset()
    #: It has a decorator (which may register it: ``@MODELS.register_module()``).
    decorated: bool = False


@dataclass
class FileSummary:
    version: int
    #: local name -> (level, dotted module, imported name or None): ``from .a import b as c``
    #: is ``c -> (1, "a", "b")``; ``import x.y as z`` is ``z -> (0, "x.y", None)``.
    imports: dict[str, tuple[int, str, str | None]]
    functions: dict[str, FunctionSummary]
    classes: dict[str, ClassSummary]
    #: Earlier definitions of a name the file defines again (``if PT2: def scatter ...
    #: else: def scatter ...``): calls reach the name, so each takes its context.
    redefined: tuple[FunctionSummary, ...] = ()
    #: Names of what it passes as values, to be called elsewhere (``checkpoint(self._inner, x)``):
    #: see :mod:`synclint.project.value_references`.
    passed_as_values: frozenset[str] = frozenset()
    #: Attributes of ``self`` its methods hand on as values (``checkpoint(self.block, x)``),
    #: see :func:`synclint.project.value_references.self_attributes_handed_on`.
    handed_attributes: frozenset[str] = frozenset()
    #: Names of the methods it calls on a receiver no dotted name spells
    #: (``meters["loss"].update(x)``, ``get_ema().update(m)``): calls the index cannot resolve.
    unspelled_calls: frozenset[str] = frozenset()
    #: Every attribute name the file stores, with the values stored: ``(constant,)`` for
    #: ``self.name = <constant>`` in an ``__init__``, ``()`` for any other store (see
    #: :mod:`synclint.project.constant_attributes`).
    attribute_stores: dict[str, tuple[StoredValue, ...]] = field(default_factory=dict)
    #: It stores attributes by a computed name (``setattr(obj, key, v)``, ``obj.__dict__.update``)
    #: or defines ``__setattr__``: any attribute may hold anything.
    stores_by_computed_name: bool = False
    #: It asks for an asynchronous host-to-device copy somewhere: a ``non_blocking`` argument
    #: that is not ``False``, or an import of a library that copies batches that way
    #: (see :mod:`synclint.project.async_copies`).
    copies_asynchronously: bool = False
    #: The command-line flags it declares, parses, passes and sets (see
    #: :mod:`synclint.project.command_flags`).
    command_line: CommandLine = NO_COMMAND_LINE
    #: (first line, last line) of its import statements: a class named only there and in
    #: blocks that never run is built nowhere (see :mod:`synclint.project.unnamed_classes`).
    import_lines: tuple[tuple[int, int], ...] = ()
    #: Every module its import statements name, wherever they stand (a function, a ``try``
    #: block): ``(level, dotted module, imported names)``; ``import a.b`` is ``(0, "a.b", ())``,
    #: ``from . import c`` is ``(1, "", ("c",))`` (see :mod:`synclint.project.unimported_modules`).
    module_imports: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    #: It runs code of its own when run (a ``__main__`` guard, top-level work): see
    #: :mod:`synclint.project.scripts`.
    is_script: bool = False
    #: Importing it files one of its definitions in a registry (``@BACKBONES.register_module()``):
    #: see :func:`synclint.project.scripts.registers_itself`.
    registers_itself: bool = False
    #: It stores attributes of objects other than ``self`` by a computed name
    #: (``setattr(args, key, v)``, ``vars(args).update(cfg)``): any flag of a parsed
    #: namespace may hold anything. (``setattr(self, name, layer)`` stores on instances of
    #: its class only, never on an ``argparse`` namespace.)
    stores_on_others_by_computed_name: bool = False
    #: The web demo library (Gradio, Streamlit) it imports at its top level: a demo app
    #: (see :mod:`synclint.project.web_demos`).
    web_demo: str | None = None
    #: (first line, last line) of the body of each top-level ``if __name__ == "__main__":``
    #: block that does not train (no loop in it draws batches and runs a backward pass): a
    #: self-test or demo when other files import the module (see
    #: :mod:`synclint.project.self_tests`).
    main_blocks: tuple[tuple[int, int], ...] = ()
    #: Its text names a device or an accelerator anywhere, comments included (``cuda``,
    #: ``gpu``, ``device``, ``accelerator``, ``mps``): see :func:`synclint.project.facts.host_only_project`.
    names_a_device: bool = True
    # Which classes the file names, and reflection that could build one by a computed name,
    # are searched only when the index asks (synclint.project.unnamed_classes): most checks
    # never do, and every file would pay for them.
    # Nothing that depends on the file's path: summaries are cached by content and shared
    # by files of equal content (whether a file is test code: ``is_test_file(path)``).


def summarize(source: str, tree: ast.Module | None = None) -> FileSummary | None:
    """The summary of ``source`` (or of ``tree``, its CPython tree); None when it cannot be parsed."""
    if tree is None:
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    builder = _Builder(in_a_kernel=is_notebook_module(source))
    builder.command_line = command_line(source, tree)
    try:
        builder.module(tree)
    except RecursionError:
        return None
    if _BACKWARD_CALL.search(source):  # (a cheap test first: most modules run no backward pass)
        _mark_training_functions(tree, builder.functions.values())
    return FileSummary(SUMMARY_VERSION, builder.imports, builder.functions, builder.classes, tuple(builder.redefined),
                       frozenset(builder.passed_as_values), frozenset(builder.handed_attributes),
                       frozenset(builder.unspelled_calls),
                       {name: tuple(values) for name, values in builder.attribute_stores.items()},
                       builder.stores_by_computed_name,
                       copies_asynchronously(source, tree, builder.imports, builder.qualify),
                       builder.command_line, tuple(builder.import_lines), tuple(builder.module_imports),
                       is_script(tree), registers_itself(tree), builder.stores_on_others_by_computed_name,
                       _web_demo(tree), _self_test_blocks(tree), names_a_device=bool(DEVICE_WORD.search(source)))


def modules_imported(node: ast.Import | ast.ImportFrom) -> list[tuple[int, str, tuple[str, ...]]]:
    """The entries of :attr:`FileSummary.module_imports` one import statement adds."""
    if isinstance(node, ast.Import):
        return [(0, alias.name, ()) for alias in node.names]
    return [(node.level, node.module or "", tuple(alias.name for alias in node.names))]


def is_test_file(path: str) -> bool:
    """``test_*.py`` / ``*_test.py`` / ``conftest.py``, by the file's name."""
    return bool(_TEST_FILE.match(path.replace("\\", "/").rsplit("/", 1)[-1]))


def is_optimizer_class(cls: ClassSummary) -> bool:
    """An optimizer by its name or a base's (``FP16Optimizer``, ``class Lion(Optimizer)``):
    its ``step`` runs once per training step."""
    return bool(_OPTIMIZER_BASE.search(cls.name.rsplit(".", 1)[-1]) or any(_OPTIMIZER_BASE.search(b) for b in cls.bases))


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for names and attribute chains; ``super.f`` for ``super().f``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super")
    else:
        return None
    return ".".join(reversed(parts))


def is_batch_iterable(node: ast.AST, loaders: set[str]) -> str | None:
    """The loader a ``for`` iterates over (``loader``, ``enumerate(tqdm(loader))``), or None."""
    if isinstance(node, ast.Name):
        return node.id if node.id in loaders or _LOADER_NAME.search(node.id) else None
    if isinstance(node, ast.Attribute):
        return dotted(node) if _LOADER_NAME.search(node.attr) else None
    if isinstance(node, ast.Call):
        for arg in node.args[:2]:
            found = is_batch_iterable(arg, loaders)
            if found:
                return found
        func = dotted(node.func) or ""
        if func.rsplit(".", 1)[-1] in ("DataLoader",) or _BATCHES_CALL.search(func.rsplit(".", 1)[-1]):
            return func
    return None


def _accumulates(loop: ast.For | ast.AsyncFor) -> bool:
    """``for micro_step in range(grad_accum_steps):``: a gradient accumulation loop; not
    ``for step in range(max_iters // grad_accum_steps):``, whose passes are whole steps
    (arithmetic on the accumulation count counts steps, not micro-steps)."""
    names = [dotted(loop.target) or ""]
    pending: list[ast.AST] = [loop.iter]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Name, ast.Attribute)):
            names.append(dotted(node) or "")
        if not isinstance(node, ast.BinOp):
            pending.extend(child_nodes(node))
    return any(_ACCUMULATION.search(name) or "micro" in name.lower() for name in names)


def _runs_a_loop_over_batches(statements: list[ast.stmt], loaders: set[str]) -> bool:
    """``statements`` run a whole loop over batches (not gradient accumulation's) each
    time they run: one of them, or of a ``with`` or ``try`` block among them, not one
    under an ``if`` (a step loop's periodic evaluation over ``val_loader``). A loop that
    draws no batch but backpropagates does not count: it may be a step's own inner loop
    (a GAN's critic iterations, a backward per loss), so the loop around it that draws
    the batch stays the loop over batches."""
    for statement in statements:
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            accumulates = not isinstance(statement, ast.While) and _accumulates(statement)
            if not accumulates and step_loop(statement, loaders)[1]:
                return True
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            if _runs_a_loop_over_batches(statement.body, loaders):
                return True
        elif isinstance(statement, TRY_STATEMENTS):
            if _runs_a_loop_over_batches([*statement.body, *statement.orelse, *statement.finalbody], loaders):
                return True
    return False


#: A call that fetches the next batch: ``get_batch("train")`` (nanoGPT),
#: ``train_loader.next_batch()`` (llm.c), ``self.sample_batch()``.
_BATCH_FETCH = re.compile(r"^_?(next|get|sample|fetch|load)_batch$")  # ``self._get_batch(data, i)``
#: Methods that run a backward pass (``loss.backward()``, ``scaler.scale(loss).backward()``,
#: ``accelerator.backward(loss)``, Lightning's ``self.manual_backward(loss)``): a loop that
#: runs one on every pass is a training loop, whatever it iterates, each pass a step.
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
#: How a call of one of :data:`BACKWARD_METHODS` is spelled: an attribute (``loss.backward(``).
#: Not the word alone: torch's own modules say "backward" in docstrings far more often
#: than they call it (35 of ``torch.nn``'s 136 files, 7 with a call).
_BACKWARD_CALL = re.compile(r"\.\s*(manual_)?backward\b")
#: A word that names a device or an accelerator (see :attr:`FileSummary.names_a_device`).
#: (``nccl``: DDP's GPU backend, where ``model.to(rank)`` names a GPU by its number;
#: ``local_rank``: torchrun's number of a GPU; ``pin_memory``: pinning is for copies to one.)
DEVICE_WORD = re.compile(r"cuda|gpu|device|accelerator|nccl|local_rank|pin_memory|\b(mps|xpu|npu|tpu|hpu)\b",
                         re.IGNORECASE)


def _web_demo(tree: ast.Module) -> str | None:
    """The web demo library of a demo app (see :mod:`synclint.project.web_demos`), or None:
    also for a module that trains (asked only of a module that imports one)."""
    library = web_demo_library(tree)
    return None if library is None or trains_on_batches(tree) else library


def _self_test_blocks(tree: ast.Module) -> tuple[tuple[int, int], ...]:
    """:attr:`FileSummary.main_blocks`: the ``__main__`` blocks that do not train."""
    return tuple((block.body[0].lineno, block.body[-1].end_lineno or block.body[-1].lineno)
                 for block in main_blocks(tree) if not _trains_through(tree, block))


def _mark_training_functions(tree: ast.Module, functions: Iterable[FunctionSummary]) -> None:
    """Set :attr:`FunctionSummary.trains` of the functions that hold a training loop, and
    :attr:`FunctionSummary.backward` of those that run a backward pass (one walk of the
    module, not one per function)."""
    nodes = list(ast.walk(tree))
    backward = [node.lineno for node in nodes if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_METHODS]
    if not backward:
        return  # (most modules: no loop of theirs can train)
    lines = [loop.lineno for loop in nodes
             if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
             and any(loop.lineno <= line <= (loop.end_lineno or loop.lineno) for line in backward) and _trains(loop)]
    for function in functions:
        if function.qualname != "<module>":
            function.trains = any(function.line <= line <= function.end_line for line in lines)
            function.backward = any(function.line <= line <= function.end_line for line in backward)


def _trains(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """The loop draws batches and runs a backward pass on every pass: a training loop."""
    return bool(step_loop(loop, set())[1]) and _backpropagates(loop)


def _trains_through(tree: ast.Module, block: ast.If) -> bool:
    """Whether ``block`` trains, in its own loops or in those of the module's top-level
    functions and classes it names, and those they name in turn: an entry point's block is
    often just ``main()``, with the training loop in ``main`` or a ``train`` it calls.
    (Only this module's definitions: the summary is the file's alone.)"""
    definitions = {statement.name: statement for statement in tree.body
                   if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    seen: set[str] = set()
    queue: list[ast.AST] = [block]
    while queue:
        node = queue.pop()
        if trains_on_batches(node):
            return True
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & definitions.keys() - seen:
            seen.add(name)
            queue.append(definitions[name])
    return False


def trains_on_batches(tree: ast.AST) -> bool:
    """Whether the module (or a block of it) has a training loop: one that draws batches
    (``for x, y in loader``, see :func:`step_loop`) and runs a backward pass on every pass.
    Such a module is the program, whatever page it may show too (a training script that
    imports Gradio at its top level for an optional UI): not a web demo app (a demo's
    callback may loop over a ``DataLoader`` of one request's items, but does not train on
    them). Such a ``__main__`` block is no self-test (:mod:`synclint.project.self_tests`)."""
    return any(isinstance(loop, (ast.For, ast.AsyncFor, ast.While)) and _trains(loop) for loop in ast.walk(tree))


def _backpropagates(loop: ast.While | ast.For | ast.AsyncFor) -> bool:
    """``loop``'s body (not functions nested in it) runs a backward pass (``loss.backward()``)."""
    pending: list[ast.AST] = [*loop.body]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_METHODS:
            return True
        pending.extend(child_nodes(node))
    return False


def step_loop(loop: ast.While | ast.For | ast.AsyncFor, loaders: set[str]) -> tuple[str | None, bool]:
    """What a loop's passes are steps of: the loader it iterates (``for batch in loader``)
    or draws from in its body, or its header where it draws none but runs a backward pass
    on every pass (see :func:`batch_source`); None for a loop whose passes are no steps.
    And whether it draws its batches (only such a loop ends its function's steps). A loop
    that breaks at the end of its first pass (:func:`runs_at_most_once`) has no steps."""
    if runs_at_most_once(loop):
        return None, False
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        iterated = is_batch_iterable(loop.iter, loaders)
        if iterated:
            return iterated, True
    return batch_source(loop, loaders)


def batch_source(loop: ast.While | ast.For | ast.AsyncFor, loaders: set[str]) -> tuple[str | None, bool]:
    """Where a loop that does not iterate over batches draws them from in its body:
    ``next(it)`` of a loader (``it = iter(loader)``; ``while True: batch = next(it)``), or a
    call that fetches a batch (``for step in range(n): x, y = train_loader.next_batch()``);
    None when it draws none. Functions nested in its body are not read, nor are loops but
    gradient accumulation's (``for micro_step in range(grad_accum_steps):``, whose
    iterations make up one step): an epoch loop around the loop that fetches batches is
    not a loop over batches itself, nor is one that runs such a loop on every pass and
    peeks at a batch beside it (``x = next(iter(val_loader))`` to plot once per epoch).
    A loop that draws no batch but runs a backward pass on every pass (slicing its batch
    from a tensor it holds: NeRF's rays) is a training loop too: its header stands for
    the loader. Returns that name and whether a batch was drawn: a loop that only
    backpropagates is weaker evidence, as likely a step's own inner loop (``for loss in
    losses: loss.backward()``, ``for chunk in batch.chunk(n)``, critic iterations) as
    the run's, so the code after it is not taken for the end of the run. A backward pass
    on the loop's own items (``for layer in reversed(layers): grad = layer.backward(grad)``,
    ``for loss in losses: loss.backward()``) walks one step's pass piece by piece: not a
    training loop, nor is one that repeats no step (see :func:`_repeats_steps`)."""
    if _runs_a_loop_over_batches(loop.body, loaders):
        return None, False
    pending = [*loop.body, *loop.orelse]
    items = _target_names(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    backward = False
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.While)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor)) and not _accumulates(node):
            continue
        pending.extend(child_nodes(node))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        backward = backward or (
            isinstance(func, ast.Attribute) and func.attr in BACKWARD_METHODS and root_name(func.value) not in items
        )
        if isinstance(func, ast.Name) and func.id == "next" and node.args:
            found = is_batch_iterable(node.args[0], loaders)
            if found:
                return found, True
        if isinstance(func, ast.Attribute) and _BATCH_FETCH.match(func.attr):
            return dotted(func.value) or func.attr, True  # ``train_loader.next_batch()``: the loader
        if isinstance(func, ast.Name) and _BATCH_FETCH.match(func.id):
            return func.id, True
    # ``for i in trange(n_iters): batch = rays[i * n:(i + 1) * n]; ...; loss.backward()``
    if backward and _repeats_steps(loop):
        return _loop_header(loop), False
    return None, False


def _repeats_steps(loop: ast.While | ast.For | ast.AsyncFor) -> bool:
    """Not a loop whose body ends in ``break`` or ``return`` (it runs once), nor one over a
    list written out in the source (``for stride, c in [(1, 32), (2, 32)]``: a test
    script sweeping configurations, one check each)."""
    if isinstance(loop.body[-1], (ast.Break, ast.Return)):
        return False
    return not (isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, (ast.List, ast.Tuple, ast.Set)))


def _target_names(target: ast.expr) -> set[str]:
    """The names a ``for`` binds: ``i``, ``name`` and ``loss`` for ``for i, (name, loss) in ...``."""
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _loop_header(loop: ast.While | ast.For | ast.AsyncFor) -> str:
    """``trange(start, N_iters)`` for a ``for`` loop's iterable, ``while True`` for a ``while``."""
    text = ast.unparse(loop.iter) if isinstance(loop, (ast.For, ast.AsyncFor)) else f"while {ast.unparse(loop.test)}"
    return text if len(text) <= 40 else text[:37] + "..."


_STEP_COUNTER = re.compile(
    r"(^|_)(step|steps|iter|iters|itr|itrs|iteration|iterations|epoch|epochs|batch_idx|batch_i|it|i|n_iter|updates|"
    r"num_updates|global_step|count|counter|tick|ticks)(_?(num|no|idx|index|id))?$",  # ``iter_num``, ``cur_tick``
    re.I,
)


#: The divisor of a gradient accumulation boundary (``accum_iter``, ``update_freq``,
#: ``gradient_accumulation_steps``, ``args.accum_freq``).
_ACCUMULATION = re.compile(r"accum|update_freq", re.I)


def _is_periodic_guard(test: ast.AST, counters: Collection[str] = ()) -> bool:
    """``step % 100 == 0``, ``if self.log_every``, ``if should_log:``, ``if verbose:``,
    ``if iteration in update_list:``
    (``if H % patch != 0:`` is shape arithmetic, not a schedule; ``(i + 1) %
    accumulation_steps == 0`` guards the optimizer step, which is the training step).
    ``counters``: the batch indices of the enclosing loops over batches
    (:func:`_batch_counters`), whatever their names: SELFRec's ``for n, batch in
    enumerate(next_batch_pairwise(...)): ... if n % 100 == 0: print(loss.item())``. Not
    ``if step % 100:`` nor ``if step % 100 != 0:``: they hold on all steps but every 100th."""
    if _off_the_period(test):
        return False
    for node in _schedule_parts(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left, counter = _counter(node.left)  # ``(iteration + 1) % eval_period == 0``
            if _STEP_COUNTER.search(counter) or (isinstance(left, ast.Name) and left.id in counters):
                return True
        if isinstance(node, ast.Name) and _PERIODIC_NAME.search(node.id):
            return True
        if isinstance(node, ast.Attribute) and _PERIODIC_NAME.search(node.attr):
            return True
        if _at_listed_steps(node, counters):
            return True
    return False


def _at_listed_steps(node: ast.AST, counters: Collection[str]) -> bool:
    """``iteration in update_AlphaMask_list`` (TensoRF's alpha-mask updates), ``epoch in
    {30, 60}``: a step counter among steps a list names, which runs at those steps only.
    Not ``step in range(warmup)`` (every step of a window), nor ``not in``, nor ``step in
    ("train", "val")`` (words: a stage, every step of it); nor a bare ``i``
    or ``it`` that is no batch counter of an enclosing loop over batches (``for i in
    range(len(preds)): if i in bad_indices:`` picks samples, on every step)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In)):
        return False
    listed = node.comparators[0]
    if isinstance(listed, ast.Call):
        return False  # ``range(...)``, ``set(...)`` of a window: unknown
    if isinstance(listed, ast.Constant) or (
        isinstance(listed, (ast.List, ast.Tuple, ast.Set))
        and any(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in listed.elts)
    ):
        return False  # ``step in ("train", "val")``: a stage, each of whose steps it runs
    left, counter = _counter(node.left)  # ``(iteration + 1) in milestones``
    if isinstance(left, ast.Name) and left.id in counters:
        return True
    return counter not in _SAMPLE_INDICES and bool(_STEP_COUNTER.search(counter))


def _counter(node: ast.AST) -> tuple[ast.AST, str]:
    """What a schedule counts, past an offset (``(iteration + 1)``: ``iteration``), and its
    last name (``self.global_step``: ``global_step``; "" for no name)."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left
    return node, (dotted(node) or "").rsplit(".", 1)[-1]


#: Counter names as often an index of a sample, a layer or a list as of a step: in a
#: membership test (``i in bad_indices``) they are a step counter only as a batch counter.
_SAMPLE_INDICES = frozenset({"i", "it"})


def _off_the_period(test: ast.AST) -> bool:
    """``step % K`` (its truth) or ``step % K != 0``: true on the steps between the periodic ones."""
    if isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod):
        return True
    return (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq)
        and any(isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod) for side in (test.left, *test.comparators))
        and any(isinstance(side, ast.Constant) and side.value == 0 for side in (test.left, *test.comparators))
    )


_OPTIMIZER_NAME = re.compile(r"(optim|^opt$|_opt$|scaler)", re.I)


def steps_an_optimizer(target: str) -> bool:
    """A call's dotted target steps an optimizer or clears its gradients (``optimizer.step``,
    ``self.scaler.step``, ``opt.zero_grad``)."""
    receiver, _, name = target.rpartition(".")
    return name in ("step", "zero_grad") and _OPTIMIZER_NAME.search(receiver.rsplit(".", 1)[-1]) is not None


def _steps_the_optimizer(body: list[ast.stmt]) -> bool:
    """The block steps an optimizer (``optimizer.step()``, ``scaler.step(opt)``,
    ``opt.zero_grad()``): a gradient accumulation boundary (``stepping = (it + 1) % args.ac
    == 0``, whatever the divisor is called), which is the training step, not a schedule."""
    return any(isinstance(node, ast.Call) and steps_an_optimizer(dotted(node.func) or "")
               for statement in body for node in ast.walk(statement))


def _optimizers_stepped(statements: Iterable[ast.stmt]) -> set[str]:
    """The receivers of the optimizer steps among ``statements`` that are calls on their own
    (``g_optim.step()``, ``self.optimizer_d.step()``; not ``opt.zero_grad()``, which clears
    gradients and steps nothing): what a block of straight-line code steps whenever it runs."""
    return {
        _stepped(node.value)
        for node in statements
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        and steps_an_optimizer(dotted(node.value.func) or "") and (dotted(node.value.func) or "").endswith(".step")
    }


def _stepped(call: ast.Call) -> str:
    """What an optimizer step steps: its receiver (``g_optim`` of ``g_optim.step()``), or
    the optimizer a gradient scaler steps (``d_optim`` of ``scaler.step(d_optim)``: one
    scaler steps several optimizers)."""
    receiver = (dotted(call.func) or "").rpartition(".")[0]
    if "scaler" in receiver.rsplit(".", 1)[-1].lower() and call.args:
        return dotted(call.args[0]) or f"{receiver}(?)"
    return receiver


def _steps_again(body: list[ast.stmt], earlier: list[ast.stmt]) -> bool:
    """Every optimizer the block steps was stepped already by a statement of the enclosing
    block before it: StyleGAN2's lazy regularisation (``g_optim.step()`` on every step, then
    ``g_regularize = i % args.g_reg_every == 0``; ``if g_regularize: ...;
    g_optim.step()``) is an extra step on a schedule, not the gradient accumulation boundary
    (which steps the optimizer only behind its guard)."""
    inside = {
        _stepped(node)
        for statement in body for node in ast.walk(statement)
        if isinstance(node, ast.Call) and steps_an_optimizer(dotted(node.func) or "")
    }
    return bool(inside) and inside <= _optimizers_stepped(earlier)


#: Statements whose blocks may run or not, or run again (``with`` runs straight through).
_BRANCHING_STATEMENTS = (ast.If, ast.For, ast.AsyncFor, ast.While, *TRY_STATEMENTS, ast.Match)


def _bound_in(node: ast.stmt) -> frozenset[str]:
    """The names ``node`` binds in its own scope (nested functions' bodies left out)."""
    return frozenset(name for current in own_nodes([node]) for name in names_bound_by(current))


def _walrus_targets(node: ast.stmt) -> set[str]:
    """The names a walrus in ``node`` binds (``print(img := extra[0])``, ``if (m := f()) is
    not None:``), in its blocks too: they may rebind a name anywhere in the statement."""
    return {current.target.id for current in own_nodes([node])
            if isinstance(current, ast.NamedExpr) and isinstance(current.target, ast.Name)}


def _calls_a_step(body: list[ast.stmt]) -> bool:
    """The block calls something named for a step or a backward pass (``self.optimizer_step()``,
    ``engine.step()``, ``accelerator.backward(loss)``): behind a guard that looks like a
    period it may be a gradient accumulation boundary that a helper steps, the training step
    itself."""
    return any(
        isinstance(node, ast.Call) and (name := (dotted(node.func) or "").rsplit(".", 1)[-1].lower())
        and ("step" in name or "backward" in name)
        for statement in body for node in ast.walk(statement)
    )


def _tests_a_flag(test: ast.AST, flags: set[str]) -> bool:
    """``if apply_gp:`` or ``if apply_gp and x:``, with ``apply_gp`` one of ``flags``
    (``not apply_gp`` runs on the other steps); ``if early_phase or late_phase:`` when
    each of its clauses is one (monodepth2 logs every ``log_frequency`` steps early on,
    every 2000 later: the union of two schedules is one)."""
    if isinstance(test, ast.Name):
        return test.id in flags
    if not isinstance(test, ast.BoolOp):
        return False
    if isinstance(test.op, ast.And):
        return any(_tests_a_flag(v, flags) for v in test.values)
    return all(_tests_a_flag(v, flags) or _is_periodic_guard(v) for v in test.values)


def _schedule_parts(test: ast.AST) -> list[ast.AST]:
    """The nodes of ``test`` (breadth first), less the gradient accumulation boundaries in it
    (``i % args.accum_freq``: its ``freq`` says nothing of logging) and the comparisons a
    ``not`` negates (``not iteration in milestones``, ``not (step % 100 == 0)``: true on the
    other steps). (``not step % 100`` is no comparison: it is ``step % 100 == 0``.)"""
    found: list[ast.AST] = []
    queue = [test]
    for node in queue:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _ACCUMULATION.search(
            (dotted(node.right) or "").rsplit(".", 1)[-1]
        ):
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Compare):
            continue
        found.append(node)
        queue.extend(child_nodes(node))
    return found


#: Why the code after an early return taken off the logging steps is cold.
AFTER_RETURN_OFF_PERIOD = "periodic (after an early return when not logging)"
#: Why the rest of a loop's body after ``if ...: continue`` until the next period is cold
#: (see :mod:`synclint.project.period_guards`).
AFTER_CONTINUE_OFF_PERIOD = "periodic (after a `continue` taken until the next period)"


def _exits_unless_rare(node: ast.If, loops: list[tuple[ast.AST, bool]], counters: Collection[str] = ()) -> str | None:
    """Why what follows ``if ...: return`` runs rarely, or None: the return is taken unless
    a logging step (``if not should_log: return``, ``if step % 100 != 0: return``) or the
    first batch (``if batch_idx > 0: return``), also as one clause of an ``or``, each of
    which must be false to go on (pyannote's ``validation_step``: ``if current_epoch == 0
    or math.log2(current_epoch) % 1 > 0 or batch_idx > 0: return``, then plots of the
    first batch). Not off a gradient accumulation boundary (``if (step + 1) % accum != 0:
    return`` goes on to step the optimizer: that is the training step)."""
    if node.orelse or not node.body or not isinstance(node.body[-1], ast.Return):
        return None
    test = node.test
    clauses = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    for clause in clauses:
        if isinstance(clause, ast.UnaryOp) and isinstance(clause.op, ast.Not) and _is_periodic_guard(clause.operand):
            return AFTER_RETURN_OFF_PERIOD
        if _off_a_logging_period(clause, counters):
            return AFTER_RETURN_OFF_PERIOD
        counter = past_the_first(clause)
        if counter is not None and _is_first_batch_only(
                ast.Compare(left=counter, ops=[ast.Eq()], comparators=[ast.Constant(0)]), loops, counters):
            return FIRST_BATCH_ONLY
    return None


def _off_a_logging_period(test: ast.AST, counters: Collection[str]) -> bool:
    """``step % 100`` (its truth) or ``step % 100 != 0`` of a step counter, not of a gradient
    accumulation boundary: true on every step but the logging ones."""
    if not _off_the_period(test):
        return False
    sides = (test,) if isinstance(test, ast.BinOp) else (test.left, *test.comparators)  # type: ignore[attr-defined]
    for side in sides:
        if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod):
            if _ACCUMULATION.search((dotted(side.right) or "").rsplit(".", 1)[-1]):
                return False
            left, counter = _counter(side.left)
            return bool(_STEP_COUNTER.search(counter)) or (isinstance(left, ast.Name) and left.id in counters)
    return False


#: The name of a batch's index within a pass over the data (``batch_idx``, Lightning's
#: ``batch_nb``, ``batch_i``).
_PASS_BATCH_INDEX_NAME = r"batch_?(idx|nb|i|id|num|index|no|n|number)"

#: The index of the batch within a pass over the data, or of the step: ``batch_idx``,
#: ``batch_nb`` (Lightning's hooks), ``self.global_step``, ``iteration``. Not ``i`` (as often
#: a layer's index, ``if i == 0:`` in a forward that runs every step) nor ``epoch`` (the
#: first epoch is many steps).
_BATCH_INDEX = re.compile(rf"^({_PASS_BATCH_INDEX_NAME}|(global_)?step|iteration|iter|itr|n_iter|iter_num)$", re.I)


def _is_first_batch_only(test: ast.AST, loops: list[tuple[ast.AST, bool]], counters: Collection[str] = ()) -> bool:
    """``if batch_idx == 0:`` (or ``batch_nb == 0 and self.logger``): the block runs on the
    first batch of each pass over the data (nerf_pl logs its first validation batch's
    images), not every step. Not a counter one of the enclosing ``loops`` that is no loop
    over batches binds (:func:`_loop_counters`): ``for step in range(max_len): if step ==
    0:`` in a decoder's forward is the first pass of a loop inside the step, so it runs on
    every step. ``counters``: the batch indices of the enclosing loops over batches
    (:func:`_batch_counters`), whatever their names: S3Rec's ``for i, batch in
    rec_data_iter:`` over ``tqdm(enumerate(dataloader))`` keeps its first batch's answers
    under ``if i == 0:``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_is_first_batch_only(value, loops, counters) for value in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    for counter, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if isinstance(other, ast.Constant) and other.value == 0 and not isinstance(other.value, bool):
            if isinstance(counter, ast.Name) and counter.id in counters and counter.id not in _loop_counters(loops):
                return True
            if _BATCH_INDEX.match((dotted(counter) or "").rsplit(".", 1)[-1]) and not (
                isinstance(counter, ast.Name) and counter.id in _loop_counters(loops)
            ):
                return True
    return False


#: A per-pass batch index by its name (not ``step`` or ``iteration``, which count the whole
#: run: ``if step < 2000:`` is a warm-up, every step of it).
_PASS_BATCH_INDEX = re.compile(rf"^{_PASS_BATCH_INDEX_NAME}$", re.I)
#: The most batches of a pass a guard of :func:`_is_first_batches_only` may let through.
_FEW_BATCHES = 100


def _is_first_batches_only(test: ast.AST, loops: list[tuple[ast.AST, bool]], counters: Collection[str] = ()) -> bool:
    """``if batch_idx < 10 and self.logger:`` (torchgeo's trainers plot their first ten
    validation batches), ``batch_i <= 3``: the block runs on a few batches of each pass over
    the data, not every step. Only a per-pass batch index by its name (Lightning's
    ``batch_idx``) or a batch counter of an enclosing loop over batches (``counters``) that
    no other enclosing loop binds, below a constant of at most :data:`_FEW_BATCHES`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_is_first_batches_only(value, loops, counters) for value in test.values)
    sides = sides_of_less(test)
    if sides is None:
        return False
    left, right = sides
    if not (isinstance(right, ast.Constant) and type(right.value) is int and 0 < right.value <= _FEW_BATCHES):
        return False
    if not isinstance(left, ast.Name):
        return False
    if left.id in _loop_counters(loops):
        return False
    return left.id in counters or _PASS_BATCH_INDEX.match(left.id) is not None


#: Calls that end the program: a block ending in one runs once.
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def _leaves_the_batch_loop(body: list[ast.stmt], loops: list[tuple[ast.AST, bool]]) -> bool:
    """The block ends by leaving the innermost enclosing loop over batches for good: a
    ``return``, a call that ends the program (``sys.exit(0)``), or a ``break`` of that loop
    itself (not of a loop inside the step), with no ``continue`` before it that could go on
    looping. It runs once per run of the loop: openvla's ``if metrics.global_step >=
    self.max_steps: self.save_checkpoint(..., loss.item()); return``, the final checkpoint."""
    if not body or not any(over_batches for _loop, over_batches in loops):
        return False
    last = body[-1]
    leaves = isinstance(last, ast.Return) or (
        isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and (dotted(last.value.func) or "") in _EXITS
    ) or (isinstance(last, ast.Break) and loops[-1][1])
    return leaves and not continues_its_loop(body)


def _enumerates(node: ast.AST, enumerations: Collection[str] = ()) -> bool:
    """``enumerate(...)``, or a progress bar around one (``tqdm(enumerate(loader))``), or a
    local bound to either (``enumerations``): what it yields starts with a running index."""
    while isinstance(node, ast.Call):
        if (dotted(node.func) or "") == "enumerate":
            return True
        if (dotted(node.func) or "").rsplit(".", 1)[-1] not in _PROGRESS_BARS or not node.args:
            return False
        node = node.args[0]
    return isinstance(node, ast.Name) and node.id in enumerations


#: Wrappers that yield what they wrap, unchanged.
_PROGRESS_BARS = frozenset({"tqdm", "track", "progress_bar", "progressbar"})


def _batch_counters(
    loops: Iterable[tuple[ast.AST, bool]], enumerations: Collection[str] = (), before: int | None = None
) -> set[str]:
    """The batch indices the loops over batches among ``loops`` bind: ``n`` of ``for n,
    batch in enumerate(loader)`` (``for n, (x, y) in enumerate(loader, 1)`` too, or over
    ``tqdm(enumerate(loader))`` or a local bound to it, see :func:`_enumerates`), unless the
    body binds ``n`` again on a line ``before`` the test read (``n = n % 2``, an inner
    ``for n, layer in ...``: no longer the index there); and the counters their bodies step
    once a pass (SRGAN's ``while batch_data is not None: ... batch_index += 1`` over a
    prefetcher)."""
    counters = set()
    for loop, over_batches in loops:
        if not over_batches:
            continue
        if (
            isinstance(loop, (ast.For, ast.AsyncFor)) and _enumerates(loop.iter, enumerations)
            and isinstance(loop.target, ast.Tuple) and loop.target.elts and isinstance(loop.target.elts[0], ast.Name)
            and not (before is not None and _bound_before(loop.body, loop.target.elts[0].id, before))
        ):
            counters.add(loop.target.elts[0].id)
        counters.update(_stepped_once_a_pass(getattr(loop, "body", ())))
    return counters


def _bound_before(body: list[ast.stmt], name: str, line: int) -> bool:
    """Whether ``body`` binds ``name`` (outside the functions and classes in it) on a line
    before ``line``."""
    queue: list[ast.AST] = list(body)
    for node in queue:
        if getattr(node, "lineno", line) >= line:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        queue.extend(child_nodes(node))
    return False


def _stepped_once_a_pass(body: Iterable[ast.stmt]) -> set[str]:
    """Names a loop's body adds a constant to in its own statements (``n += 1``, ``n = n +
    1``; not in a branch, which may skip passes): they count the passes."""
    stepped = set()
    for statement in body:
        name = incremented(statement)
        if name is not None:
            stepped.add(name)
        elif (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.BinOp)
            and isinstance(statement.value.op, ast.Add) and isinstance(statement.value.left, ast.Name)
            and statement.value.left.id == statement.targets[0].id and is_positive_int(statement.value.right)
        ):
            stepped.add(statement.targets[0].id)
    return stepped


def _loop_counters(loops: Iterable[tuple[ast.AST, bool]]) -> set[str]:
    """The names the ``for`` loops among ``loops`` that are not loops over batches bind
    (``step`` of ``for step in range(max_len)``, ``itr`` of ``enumerate(self.layers)``)."""
    return {
        leaf.id
        for loop, over_batches in loops
        if not over_batches and isinstance(loop, (ast.For, ast.AsyncFor))
        for leaf in ast.walk(loop.target)
        if isinstance(leaf, ast.Name)
    }


def _is_state_initialisation(test: ast.AST) -> bool:
    """``if len(state) == 0:`` / ``if not state:`` in an optimizer: runs on the first step only."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return (dotted(test.operand) or "").rsplit(".", 1)[-1] == "state"
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]
        return (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "len"
            and len(left.args) == 1
            and (dotted(left.args[0]) or "").rsplit(".", 1)[-1] == "state"
            and isinstance(right, ast.Constant)
            and right.value == 0
        )
    return False


def _is_false_assert(node: ast.Call) -> bool:
    """``torch._assert(False, msg)``: an error path written as a call."""
    name = dotted(node.func) or ""
    return (
        name.rsplit(".", 1)[-1] in ("_assert", "_assert_async")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value is False
    )


#: Decorators that keep a function's results: its body runs once per distinct arguments
#: (``lru_cache``, ``cache``) or once per object (``cached_property``).
_MEMOISING = frozenset({"lru_cache", "cache", "cached_property"})
MEMOISED = "memoised (`@lru_cache`/`@cache`/`@cached_property`: runs once per distinct arguments, not per step)"


def _memoised(node: ast.FunctionDef | ast.AsyncFunctionDef, decorators: list[str]) -> bool:
    """Whether ``node`` keeps its results (esvit's ``@lru_cache`` mask builder, called every
    step with the same sizes and device, builds its mask once). Not when a parameter is
    annotated as a tensor: a tensor is hashed by identity, so each step's new tensor misses
    the cache and the body runs every time. Nor with ``lru_cache(maxsize=0)``, which keeps
    nothing (:func:`_keeps_nothing`)."""
    if not any(name.rsplit(".", 1)[-1] in _MEMOISING for name in decorators):
        return False
    if any(_keeps_nothing(decorator) for decorator in node.decorator_list):
        return False
    return not any(
        parameter.annotation is not None and "Tensor" in ast.unparse(parameter.annotation)
        for parameter in _every_parameter(node)
    ) and not _parameters_used_as_tensors(node)


def _every_parameter(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """Every parameter of ``node``, ``*args`` and ``**kwargs`` included."""
    arguments = node.args
    return [a for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg)
            if a is not None]


#: Methods a parameter of a memoised function has only when it is a tensor (an array, which
#: has them too, is unhashable: no cache takes it). The project index sits below the
#: analysis, whose ``TENSOR_ONLY_METHODS`` it may not import: its own list.
_ARRAY_METHODS = frozenset({
    "float", "half", "double", "long", "bool", "cuda", "cpu", "detach", "clone", "contiguous", "view",
    "reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "expand", "repeat", "masked_fill",
    "item", "tolist", "numpy", "nonzero", "sum", "mean", "norm", "abs", "any", "all", "max", "min", "argmax",
    "argmin", "sqrt", "exp", "log", "pow", "softmax", "sigmoid", "matmul", "dim", "size", "type_as", "new_zeros",
})


#: Attributes only a tensor (or an array) has: a parameter whose one is read is a tensor.
_ARRAY_ATTRIBUTES = frozenset({"device", "dtype", "shape", "is_cuda", "grad", "requires_grad", "ndim", "T"})


def _parameters_used_as_tensors(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the body reads a tensor attribute (``x.device``) of a parameter, or calls an
    array method on one (not ``self``/``cls``):
    ``x.float().sum().item()`` with ``x`` unannotated is a tensor all the same, hashed by
    identity. (``numel`` is left out: ``torch.Size`` has it, and is hashed by value.)"""
    parameters = {parameter.arg for parameter in _every_parameter(node)} - {"self", "cls"}
    for current in ast.walk(node):
        if (isinstance(current, ast.Attribute) and current.attr in _ARRAY_ATTRIBUTES
                and isinstance(current.value, ast.Name) and current.value.id in parameters):
            return True  # fairseq's ``_get_weight(s_len, ...)`` reads ``s_len.device``
        if not (isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute)
                and current.func.attr in _ARRAY_METHODS):
            continue
        base: ast.AST = current.func.value
        while isinstance(base, (ast.Call, ast.Attribute, ast.Subscript)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if isinstance(base, ast.Name) and base.id in parameters:
            return True
    return False


def _keeps_nothing(decorator: ast.expr) -> bool:
    """``@lru_cache(maxsize=0)`` (or ``lru_cache(0)``): a cache that keeps no result, so the
    body runs on every call."""
    if not (isinstance(decorator, ast.Call) and (dotted(decorator.func) or "").rsplit(".", 1)[-1] == "lru_cache"):
        return False
    sizes = [*decorator.args[:1], *(k.value for k in decorator.keywords if k.arg == "maxsize")]
    return any(
        isinstance(size, ast.Constant) and isinstance(size.value, int) and not isinstance(size.value, bool)
        and size.value <= 0
        for size in sizes
    )


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.append(dotted(target) or "")
    return names


def _host_expression(node: ast.AST | None, host_names: set[str]) -> bool:
    """A tensor expression known to live in host memory."""
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id in host_names
    if isinstance(node, ast.Subscript) or (isinstance(node, ast.Attribute) and node.attr in IN_PLACE_ATTRIBUTES):
        return _host_expression(node.value, host_names)  # ``x.cpu()[:, :24]``, ``x.cpu().data``
    if isinstance(node, ast.Call):
        func = node.func
        name = dotted(func) or ""
        short = name.rsplit(".", 1)[-1]
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if isinstance(func, ast.Attribute):
            if func.attr in ("cpu", "numpy"):
                return True
            if func.attr in IN_PLACE_METHODS and _host_expression(func.value, host_names):
                return True  # ``labels.cpu().reshape(n, 29, 3)``: a view of a host tensor
            if func.attr == "pin_memory":
                return _host_expression(func.value, host_names) or True
            if func.attr in ("to",):
                first = node.args[0] if node.args else device
                return _is_cpu(first)
        if name.startswith("torch.") and short in _FACTORIES:
            return device is None or _is_cpu(device)
        return False
    return False


def _is_cpu(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    if isinstance(node, ast.Call) and node.args:
        return (dotted(node.func) or "").endswith("device") and _is_cpu(node.args[0])
    return False


def _apart_lines(own: Iterable[ast.AST], nested: Iterable[ast.AST]) -> list[tuple[int, int]]:
    """The lines of the lambdas and comprehensions of a scope (its ``own`` nodes and the
    scopes ``nested`` in it), with those of the class bodies it holds, whose statements
    run with it (:func:`synclint.project.run_once.straight_line_spans`)."""
    found = code_apart(own) + code_apart(nested)
    for scope in nested:
        if isinstance(scope, ast.ClassDef):
            inner: list[ast.AST] = []
            found += _apart_lines(own_nodes(scope.body, inner), inner)
    return found


class _Builder:
    def __init__(self, in_a_kernel: bool = False) -> None:
        #: The module is a notebook's cells, run in a kernel (see :meth:`plots_block`).
        self.in_a_kernel = in_a_kernel
        self.imports: dict[str, tuple[int, str, str | None]] = {}
        self.functions: dict[str, FunctionSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.redefined: list[FunctionSummary] = []
        #: See :attr:`FileSummary.passed_as_values`.
        self.passed_as_values: set[str] = set()
        #: See :attr:`FileSummary.handed_attributes`.
        self.handed_attributes: set[str] = set()
        #: See :attr:`FileSummary.attribute_stores` and ``stores_by_computed_name``.
        self.attribute_stores: dict[str, list[StoredValue]] = {}
        self.stores_by_computed_name = False
        self.stores_on_others_by_computed_name = False
        #: See :attr:`FileSummary.unspelled_calls`.
        self.unspelled_calls: set[str] = set()
        self._tree: ast.Module | None = None
        self.module_definitions: frozenset[str] = frozenset()
        self._rearmed: frozenset[str] | None = None
        self._plots_block: bool | None = None
        self.command_line = NO_COMMAND_LINE
        #: Names the module's top level binds only from ``parse_args`` (a script's ``args``).
        self.module_parsed: frozenset[str] = frozenset()
        #: See :attr:`FileSummary.import_lines`.
        self.import_lines: list[tuple[int, int]] = []
        #: See :attr:`FileSummary.module_imports`.
        self.module_imports: list[tuple[int, str, tuple[str, ...]]] = []

    def name_of(self, node: ast.AST) -> str | None:
        """What ``node`` names: through the file's imports where it can, else as spelled."""
        return self.qualify(node) or dotted(node)

    def plots_block(self) -> bool:
        """Whether ``plt.show()`` waits for a window here (read once per file): never in a
        notebook, whose kernel's backend (inline, widget) draws the figure and returns."""
        if self._plots_block is None:
            self._plots_block = not self.in_a_kernel and (self._tree is None or plots_block(self._tree, self.name_of))
        return self._plots_block

    def rearmed_flags(self) -> frozenset[str]:
        """The attributes the file sets again outside constructors (no one-shot flags),
        read once per file, and only for a file with a block that clears a flag."""
        if self._rearmed is None:
            self._rearmed = rearmed_flags(self._tree) if self._tree is not None else frozenset()
        return self._rearmed

    # -- module ---------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        last = max((getattr(n, "end_lineno", 1) or 1 for n in tree.body), default=1)
        top = FunctionSummary("<module>", "<module>", None, 1, last)
        self._tree = tree
        #: Names the module's top level defines (classes and functions), read once per file.
        self.module_definitions = frozenset(
            statement.name for statement in tree.body
            if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        )
        self.functions[top.qualname] = top
        nested: list[ast.AST] = []
        own = own_nodes(tree.body, nested)
        if self.command_line.parsed_names:
            self.module_parsed = frozenset(module_parse_bound_names(tree, own, self.command_line.parse_wrappers))
        self.passed_as_values.update(names_passed_as_values(own, nested))
        self.record_attribute_stores([*own, *lambda_nodes(nested)], in_init=False)
        loaders = self._body(tree.body, top, prefix="", cls=None, loaders=set()).loaders

        def over_batches(iterable: ast.expr) -> bool:
            return is_batch_iterable(iterable, loaders) is not None

        top.regions += [Region(first, last, "cold", why) for first, last, why in run_once_spans(tree, over_batches)]
        top.regions += [Region(first, last, "cold", why) for first, last, why in redefined_functions(tree.body)]
        top.once_spans = tuple(straight_line_spans(tree.body, _apart_lines(own, nested)))

    def record_attribute_stores(self, nodes, in_init: bool, arguments: dict[str, ConstructorArgument] | None = None) -> None:
        stores, dynamic = attribute_stores(nodes, in_init, arguments)
        for name, values in stores.items():
            self.attribute_stores.setdefault(name, []).extend(values)
        self.stores_by_computed_name = self.stores_by_computed_name or dynamic != NO_COMPUTED_STORE
        self.stores_on_others_by_computed_name = self.stores_on_others_by_computed_name or dynamic == COMPUTED_STORE

    def _body(self, statements, owner: FunctionSummary, prefix: str, cls: ClassSummary | None, loaders: set[str],
              arguments: frozenset[str] = frozenset(), rearmed: frozenset[str] = frozenset(),
              numbers: frozenset[str] = frozenset(), no_tensors: frozenset[str] = frozenset()) -> _CallWalker:
        """Walk ``statements`` of ``owner`` (a function, or ``<module>``), recording calls;
        ``arguments``: its parameters that the body never rebinds; ``rearmed``: its locals
        that functions nested in it rebind (``nonlocal``); ``numbers``: its locals that
        only ever hold Python numbers; ``no_tensors``: those that only ever hold what is visibly
        no tensor. Returns the walker (the loaders it found)."""
        walker = _CallWalker(self, owner, prefix, loaders, arguments, rearmed, numbers, no_tensors)
        walker.statements(statements)
        return walker

    def import_from(self, node: ast.ImportFrom) -> None:
        self.module_imports += modules_imported(node)
        for alias in node.names:
            if alias.name == "*":
                continue
            self.imports[alias.asname or alias.name] = (node.level, node.module or "", alias.name)

    def qualify(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` stands for through the file's absolute imports
        (``T.nonzero`` after ``import torch as T``: ``torch.nonzero``), or None."""
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        imported = self.imports.get(head)
        if imported is None or imported[0]:
            return None
        _level, module, name = imported
        base = f"{module}.{name}" if name else module
        return f"{base}.{rest}" if rest else base

    def import_(self, node: ast.Import) -> None:
        self.module_imports += modules_imported(node)
        for alias in node.names:
            if alias.asname:
                self.imports[alias.asname] = (0, alias.name, None)
            else:
                top = alias.name.split(".", 1)[0]
                self.imports[top] = (0, top, None)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, cls: ClassSummary | None,
                 class_node: ast.ClassDef | None) -> None:
        qualname = f"{prefix}{node.name}"
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        args = node.args
        params = tuple(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
        summary = FunctionSummary(qualname, node.name, cls.name if cls else None, first, node.end_lineno or node.lineno,
                                  params)
        summary.root, summary.cold, summary.data_root = self._roles(node, cls, class_node, nested=cls is None and bool(prefix))
        packed = packed_sequences(node)
        summary.packed = frozenset(packed)
        summary.host_names = frozenset(host_names(node, packed, lambda value: _host_expression(value, set())))
        rebound = rebound_names(node)
        summary.kept_params = frozenset(params) - rebound
        summary.resident_params = summary.kept_params | kept_in_place(node, frozenset(params) & rebound)
        self.passed_as_values.update(names_passed_as_values(function_nodes(node), nested_scopes(node)))
        # (A lambda holds no ``self.name = <constant>`` statement: ``in_init`` is moot for it.)
        in_init = cls is not None and node.name == "__init__"
        self.record_attribute_stores([*function_nodes(node), *lambda_nodes(nested_scopes(node))], in_init=in_init,
                                     arguments=constructor_arguments(node, cls.name, summary.kept_params) if in_init and cls else None)
        if node.name == "__setattr__":
            self.stores_by_computed_name = True
        if cls is not None:
            self.handed_attributes.update(self_attributes_handed_on(function_nodes(node)))
            self.handed_attributes.update(self_attributes_called_within(nested_scopes(node)))
        if handed_to_a_decorator(node):
            self.passed_as_values.add(node.name)
        # One pass for all: the guards of its parameters, (a method's) of ``self``'s
        # attributes, and of flags on a parameter or a name bound from ``parse_args``.
        receivers = summary.kept_params
        if self.command_line.parsed_names:
            parsed = parse_bound_names(function_nodes(node), self.command_line.parse_wrappers)
            receivers = receivers | parsed | (self.module_parsed - rebound_names(node) - frozenset(params))
        aliases = self_aliases(function_nodes(node)) if cls is not None else set()
        guards = parameter_guards(node, GuardSubjects(summary.kept_params, cls is not None, receivers | aliases))
        # ``opt = self.opt`` then ``if opt.masks:`` reads the flag on ``self.opt``.
        guards = [guard._replace(param=f"self.{guard.param}") if guard.param.partition(".")[0] in aliases else guard
                  for guard in guards]
        summary.param_guards = tuple(guard for guard in guards if "." not in guard.param)
        summary.attribute_guards = tuple(guard for guard in guards
                                         if guard.param.startswith("self.") and guard.param.count(".") == 1 and cls is not None)
        summary.flag_guards = tuple(guard for guard in guards if "." in guard.param and not (
            guard.param.startswith("self.") and (guard.param.count(".") == 1 or cls is None)))
        defaults = parameter_defaults(args)  # (also of functions that pass a flag on to a guard)
        summary.defaults = {param: value[0] for param, default in defaults.items() if (value := constant_value(default))}
        summary.defaulted = frozenset(defaults)
        summary.keyword_only = frozenset(arg.arg for arg in args.kwonlyargs)
        summary.tensor_fallbacks = tensor_fallbacks(node, params)
        summary.positional_only = frozenset(arg.arg for arg in args.posonlyargs)
        if qualname in self.functions:
            self.redefined.append(self.functions[qualname])
        self.functions[qualname] = summary
        rearmed = frozenset(closure_rebound_names(node))
        numbers = number_names(node) - rearmed
        self._body(node.body, summary, prefix=f"{qualname}.", cls=cls, loaders=set(), arguments=stable_parameters(node),
                   rearmed=rearmed, numbers=numbers, no_tensors=no_tensor_names(node, numbers) - rearmed)
        if summary.root is None and summary.data_root is None:
            # A step or the data pipeline never takes its callers' context (a function cold by
            # a name hot code may break, ``setup_*``, may: unknown when unknown code calls it).
            summary.once_spans = tuple(straight_line_spans(node.body, _apart_lines(function_nodes(node), nested_scopes(node))))
        if summary.argument_syncs:  # only the syncs whose result it returns: the op under another name
            returned, tensors = returned_calls(node), tensor_parameters(node)
            summary.argument_syncs = [sync._replace(tensor_param=sync.param in tensors)
                                      for sync in summary.argument_syncs if (sync.line, sync.column) in returned]
        summary.returns_host = _returns_host(node)
        if not summary.returns_host:
            summary.host_when = host_condition(node)

    def _roles(self, node, cls: ClassSummary | None, class_node, nested: bool = False) -> tuple[str | None, str | None, str | None]:
        """``nested``: ``node`` is defined in a function's body (made anew by each call)."""
        name = node.name
        cls_name = cls.name if cls else ""
        label = f"{cls_name}.{name}" if cls_name else name
        decorators = _decorator_names(node)
        cold = None
        if name in _COLD_NAMES or name.startswith(_COLD_PREFIXES) or _COLD_WORDS.search(name) or _LOGGING.search(name):
            cold = CONSTRUCTION if name not in ("__repr__", "__str__", "extra_repr") else "a repr"
            if name.startswith(("test_",)):
                cold = "test code"
            elif _COLD_WORDS.search(name) or name.startswith(("export", "_export", "onnx", "_onnx", "symbolic", "_symbolic")):
                cold = "export, plotting or benchmarking code"
            elif name.startswith(("plot", "_plot", "visuali", "print_", "save_", "load_")) or _LOGGING.search(name):
                cold = "logging, plotting or checkpointing"
        if cold is None and _EPOCH_HOOK.match(name):
            cold = EPOCH_HOOK
        if cold is None and _DEBUG_WORDS.search(name):
            cold = "debugging aid (dumps or checks, not the step itself)"
        if cls is not None and (cls_name.startswith("Test") or any(b.endswith("TestCase") for b in cls.bases)):
            cold = "test code"
        if any(d.rsplit(".", 1)[-1] in ("symbolic_helper", "parse_args", "onnx_symbolic") for d in decorators):
            cold = "export code"
        # (A cache made by each call of the function around it starts empty every time.)
        if cold is None and not nested and _memoised(node, decorators):
            cold = MEMOISED
        if cold is None and name == "forward" and _returns_input_unchanged(node):
            cold = "an observer (its `forward` returns its input unchanged: statistics, calibration or debugging)"
        data = None
        if cls is not None and name in _DATA_METHODS and (
            _DATA_CLASS.search(cls_name) or any(_DATASET_BASE.search(b) for b in cls.bases)
        ):
            data = f"`{label}`"
        elif cls is not None and _PROCESSOR_CLASS.search(cls_name):
            data = f"`{label}`"  # every method of an image processor or feature extractor
        elif cls is not None and name in _TRANSFORM_METHODS and any(_TRANSFORM_BASE.search(b) for b in cls.bases):
            data = f"`{label}` (a data transform)"
        elif cls is not None and ((name == "__call__" and _COLLATE_CLASS.search(cls_name))
                                  or (name == "forward" and _COLLATE_MODULE.search(cls_name))):
            data = f"`{label}` (a collate function)"  # lightly's ``VICRegLCollateFunction(nn.Module).forward``
        if re.search(r"collate", name, re.I):
            data = f"`{label}`"
        root = None
        if cold is None and data is None:
            is_autograd_function = any(b.endswith("Function") for b in (cls.bases if cls else ()))
            if name == "forward":  # a module's, or a functional model's ``forward(params, x)``
                root = f"`{label}`"
            elif is_autograd_function and name == "backward":
                root = f"`{label}`"
            elif name in ("backward", "step") and cls is not None and "forward" in cls.methods:
                root = f"engine step `{label}`"  # a module that trains itself (``engine.backward(loss); engine.step()``)
            elif name in STEP_NAMES:
                root = f"`{label}`"
            elif name == "step" and cls is not None and is_optimizer_class(cls):
                root = f"optimizer step `{label}`"
            elif name == "__call__" and cls is not None and is_loss_class(cls_name):
                root = f"loss `{label}`"
            elif is_loss_function(name) and not name.startswith("_") or (
                cls is not None and is_loss_class(cls_name) and name in ("forward", "__call__")
            ):
                root = f"loss `{label}`"
        return root, cold, data

    def klass(self, node: ast.ClassDef, prefix: str) -> None:
        name = f"{prefix}{node.name}"
        bases = tuple(dotted(b) or "" for b in node.bases)
        methods = tuple(
            s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        summary = ClassSummary(name, node.lineno, node.end_lineno or node.lineno, bases, methods,
                               decorated=bool(node.decorator_list))
        self.classes[name] = summary
        summary.module_attrs, summary.host_attrs = _attributes(node, self.module_definitions)
        for bound in class_body_names(node.body):
            self.attribute_stores.setdefault(bound, []).append(UNKNOWN_VALUE)
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(statement, f"{name}.", summary, node)
            elif isinstance(statement, ast.ClassDef):
                self.klass(statement, f"{name}.")
            elif isinstance(statement, (ast.Import, ast.ImportFrom)):  # (a class body's imports count too)
                self.module_imports += modules_imported(statement)


class _CallWalker:
    """Records the calls and regions of one function body (not of nested defs)."""

    def __init__(self, builder: _Builder, owner: FunctionSummary, prefix: str, loaders: set[str],
                 arguments: frozenset[str] = frozenset(), rearmed: frozenset[str] = frozenset(),
                 numbers: frozenset[str] = frozenset(), no_tensors: frozenset[str] = frozenset()) -> None:
        self.builder = builder
        self.arguments = arguments
        #: Locals that only ever hold Python numbers (see :mod:`synclint.project.numbers`).
        self.numbers = numbers
        #: Locals that only ever hold what is visibly no tensor (numbers, ``None``, lists, arrays).
        self.no_tensors = no_tensors | numbers
        #: The calls that are the value of a ``self.attr = ...`` statement (by identity): ``attr``.
        self.held: dict[int, str] = {}
        #: Locals a nested function rebinds (``nonlocal``): a call of it may set them again.
        self.rearmed = rearmed
        self.owner = owner
        self.prefix = prefix
        self.loaders = set(loaders)
        #: Locals bound to an ``enumerate`` of batches (``it = tqdm(enumerate(loader))``): a
        #: loop over one binds the batch index first.
        self.enumerations: set[str] = set()
        self.quiet: list[str] = []
        self.batch_loops: list[str] = []
        #: The loops around the statement being read (innermost last), each with whether
        #: it is a loop over batches.
        self.loops: list[tuple[ast.AST, bool]] = []
        #: Names every assignment of which (so far) is visibly a tensor.
        self.tensor_names: set[str] = set()
        self._not_tensor: set[str] = set()
        #: Why the rest of the body is cold: after the loop over batches, or after
        #: ``if not should_log: return``.
        self.rest_cold: str | None = None
        #: Names whose state outlives the call: ``self``, ``cls`` and aliases of their
        #: state (``state = self.state[p]``, ``for group in self.param_groups``).
        self.persistent: set[str] = {"self", "cls"}
        #: Names bound to a check of another backend (``mps = "mps" in device.type``).
        self.backend_flags: set[str] = set()
        #: Names every binding of which (so far) is a schedule (``apply_gp = self.steps % 4 == 0``).
        self.schedule_flags: set[str] = set()
        self._not_schedule: set[str] = set()
        #: Names that hold a host tensor (or ``None``) here, as the walk goes in order (not
        #: only those every binding of which is one: ``image = image.cpu()`` after ``image =
        #: data["image"]``), for the arguments the calls pass.
        self.host_now: set[str] = set()
        #: Per ``if`` (or other compound statement) being walked: :attr:`host_now` at the end
        #: of each of its blocks.
        self._block_exits: list[list[frozenset[str]]] = []
        #: The statements before the one being walked in its block (see :func:`_steps_again`).
        self._earlier: list[ast.stmt] = []

    def statement(self, node: ast.stmt, depth: int = 0) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.builder.function(node, self.prefix, None, None)
            self._expressions(node.decorator_list)
            return
        if isinstance(node, ast.ClassDef):
            self.builder.klass(node, "" if self.owner.qualname == "<module>" else self.prefix)
            return
        if isinstance(node, ast.Import):
            self.builder.import_(node)
            self.builder.import_lines.append((node.lineno, node.end_lineno or node.lineno))
            return
        if isinstance(node, ast.ImportFrom):
            self.builder.import_from(node)
            self.builder.import_lines.append((node.lineno, node.end_lineno or node.lineno))
            return
        if (
            depth == 0
            and self.rest_cold is not None
            and self.owner.qualname != "<module>"
            and not (isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and step_loop(node, self.loaders)[0])
        ):
            why = self.rest_cold
            self._region_cold(node, why)
            self.quiet.append(why)
            try:
                self._statement(node, depth)
            finally:
                self.quiet.pop()
            return
        self._statement(node, depth)

    def _statement(self, node: ast.stmt, depth: int) -> None:
        """Walk ``node``, keeping :attr:`host_now` as it goes: a name bound to a host tensor
        holds one until rebound; a compound statement (but ``with``, which runs straight
        through) may or may not run its blocks, so what they bind is known after it only as
        unknown, and what a loop binds already at its first pass (an earlier pass may have
        rebound it)."""
        earlier, self._earlier = self._earlier, []  # (blocks nested in ``node`` set their own)
        if self.host_now:
            # A walrus rebinds its name where it stands, before the blocks and the calls
            # after it in the statement: whatever it held, it is unknown from the start.
            self.host_now.difference_update(_walrus_targets(node))
        if isinstance(node, ast.If):
            # Either block runs: a name each leaves on the host (or does not rebind) is there
            # after it (``if "image_size" in data: img = img[:, :h, :w]``).
            entry = frozenset(self.host_now)
            self._block_exits.append([])
            try:
                self._walk_statement(node, depth, earlier)
            finally:
                exits = self._block_exits.pop()
            reaching = [*exits, *(() if node.orelse else (entry,))]
            joined = frozenset.intersection(*reaching) if reaching else frozenset()
            bound = _bound_in(node) if (entry or joined) else frozenset()
            self.host_now = set((entry - bound) | (joined & bound))
            return
        if isinstance(node, _BRANCHING_STATEMENTS):
            bound = _bound_in(node) if self.host_now else frozenset()
            self.host_now.difference_update(bound)
            self._block_exits.append([])  # (not read: the blocks of ``node`` log here, not in an enclosing ``if``'s)
            try:
                self._walk_statement(node, depth, earlier)
            finally:
                self._block_exits.pop()
                if self.host_now:
                    self.host_now.difference_update(bound or _bound_in(node))
            return
        if isinstance(node, ast.Assign) and all(isinstance(target, ast.Name) for target in node.targets):
            host = self._is_host(node.value)
            self._walk_statement(node, depth, earlier)
            for target in node.targets:
                (self.host_now.add if host else self.host_now.discard)(target.id)  # type: ignore[union-attr]
            return
        self._walk_statement(node, depth, earlier)
        if self.host_now and not isinstance(node, (ast.Expr, ast.Return, ast.Pass, ast.Break, ast.Continue)):
            self.host_now.difference_update(_bound_in(node))

    def _walk_statement(self, node: ast.stmt, depth: int, earlier: list[ast.stmt]) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and is_self_attribute(node.targets[0]):
            built = _built_or_none(node.value)
            if built is not None:
                self.held[id(built)] = node.targets[0].attr
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            loader, ends_run = step_loop(node, self.loaders)
            if ends_run:
                self.owner.draws = (*self.owner.draws, (node.lineno, node.end_lineno or node.lineno))
            if isinstance(node, ast.While):
                self._expressions([node.test])
            else:
                self._expressions([node.iter])
                if isinstance(node.target, ast.Name):
                    self._alias(node.target.id, node.iter)
            # A gradient accumulation loop's passes make up one step: its first pass is
            # once per step, and the code after it ends that step, not the run.
            accumulates = isinstance(node, (ast.For, ast.AsyncFor)) and _accumulates(node)
            self.loops.append((node, bool(loader) and not accumulates))
            if loader and not self.quiet and waits_for_a_person(node, self.builder.name_of, self.builder.plots_block()):
                self._quiet_block(node.body, INTERACTIVE, depth)
            elif loader and not self.quiet:
                self.owner.regions.append(Region(node.lineno, node.end_lineno or node.lineno, "hot",
                                                 f"the loop over `{loader}`"))
                self.batch_loops.append(loader)
                self.statements(node.body, depth + 1)
                self.batch_loops.pop()
                # Only a loop that draws its batches ends the run: one that just
                # backpropagates may be an inner loop of a step function (see batch_source).
                if depth == 0 and ends_run and not accumulates:
                    self.rest_cold = "after the loop over batches (a summary that runs once)"
            else:
                self.statements(node.body, depth + 1)
            self.loops.pop()
            self.statements(node.orelse, depth + 1)
            return
        if isinstance(node, ast.If):
            self._expressions([node.test])
            counters = _batch_counters(self.loops, self.enumerations, node.lineno)
            rare_after = _exits_unless_rare(node, self.loops, counters) if depth == 0 else None
            if rare_after is not None:
                self.statements(node.body, depth + 1)
                self.rest_cold = rare_after
                return
            if _is_state_initialisation(node.test):
                self._quiet_block(node.body, "first step only (state initialisation)", depth)
                self.statements(node.orelse, depth + 1)
                return
            if _is_first_batch_only(node.test, self.loops, counters):
                self._quiet_block(node.body, FIRST_BATCH_ONLY, depth)
                self.statements(node.orelse, depth + 1)
                return
            if _is_first_batches_only(node.test, self.loops, counters):
                self._quiet_block(node.body, FIRST_BATCHES_ONLY, depth)
                self.statements(node.orelse, depth + 1)
                return
            if self.batch_loops and _leaves_the_batch_loop(node.body, self.loops) \
                    and not self._holds_a_step_loop(node.body):  # (a phase of training that then returns: each pass a step)
                self._quiet_block(node.body, LEAVES_THE_LOOP, depth)
                self.statements(node.orelse, depth + 1)
                return
            if (
                _is_periodic_guard(node.test, counters)
                or _tests_a_flag(node.test, self.schedule_flags)
            ) and (not _steps_the_optimizer(node.body) or _steps_again(node.body, earlier)):
                self._quiet_block(node.body, "periodic (logging every N steps)", depth)
            else:
                self._branch(node.body, self._rare_branch(node), depth)
            if ends_in_raise(node.orelse):
                self._branch(node.orelse, "error path", depth)
            elif true_on_finite(node.test, self.arguments) and not keeps_finite_elements(node.orelse):
                self._branch(node.orelse, NON_FINITE_ONLY, depth)
            elif refills_in_else(node, self.persistent):
                self._branch(node.orelse, "once per size (a cache rebuilt when missing or too small)", depth)
            elif cuda_only_check(node.test, node.orelse):
                self._branch(node.orelse, _OFF_CUDA, depth)
            else:
                self._branch(node.orelse, None, depth)
            return
        if isinstance(node, TRY_STATEMENTS):
            # An except clause runs only when the body raised: an error path (a diagnostic
            # that re-raises, a fallback); the body, ``else`` and ``finally`` run as usual.
            self.statements(node.body, depth + 1)
            for handler in node.handlers:
                self._expressions([handler.type])
                self._quiet_block(handler.body, "error path (an exception handler)", depth)
            self.statements(node.orelse, depth + 1)
            self.statements(node.finalbody, depth + 1)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            self._expressions([part for item in node.items for part in (item.context_expr, item.optional_vars)])
            # A ``with`` body runs straight through, like the statements around it: a loop
            # over batches inside ``with autocast():`` ends the step as one outside would.
            for item in node.items:
                if item.optional_vars is not None:
                    self.host_now.difference_update(names_bound_in(item.optional_vars))
            self._block(node.body, depth)
            return
        if isinstance(node, ast.Raise):
            self.quiet.append("error path")
            self._expressions([node.exc, node.cause])
            self.quiet.pop()
            return
        if isinstance(node, ast.Assert):
            self._expressions([node.test])
            self.quiet.append("error path")
            self._expressions([node.msg])
            self.quiet.pop()
            return
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) or (
            isinstance(node, ast.Assign) and not all(isinstance(target, ast.Name) for target in node.targets)
        ):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for name in _target_names(target):  # ``apply_gp |= x``, ``apply_gp, n = ...``: no schedule
                    self.schedule_flags.discard(name)
                    self._not_schedule.add(name)
        if isinstance(node, ast.Assign):
            value = node.value
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self._alias(target.id, value)
                    if other_backend_check(value, set()):
                        self.backend_flags.add(target.id)
                    else:
                        self.backend_flags.discard(target.id)
                    if _is_periodic_guard(value) and target.id not in self._not_schedule:
                        self.schedule_flags.add(target.id)
                    else:
                        self.schedule_flags.discard(target.id)
                        self._not_schedule.add(target.id)
                    if _tensor_expression(value, self.tensor_names) and target.id not in self._not_tensor:
                        self.tensor_names.add(target.id)
                    else:
                        self.tensor_names.discard(target.id)
                        self._not_tensor.add(target.id)
            batches = isinstance(value, ast.Call) and is_batch_iterable(value, self.loaders)
            enumerates = batches and _enumerates(value, self.enumerations)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    if batches:
                        self.loaders.add(target.id)
                    # (Any other value forgets it: ``it = tqdm(pairs)`` after
                    # ``it = tqdm(enumerate(loader))`` yields no batch index.)
                    (self.enumerations.add if enumerates else self.enumerations.discard)(target.id)
        for value in field_values(node):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self.statements(value, depth + 1)
                else:
                    self._expressions([v for v in value if isinstance(v, ast.AST)])
            elif isinstance(value, ast.AST):
                if isinstance(value, ast.stmt):
                    self.statement(value, depth + 1)
                else:
                    self._expressions([value])

    def _alias(self, name: str, value: ast.AST) -> None:
        """Track ``name`` as persistent state when it is bound to a part of ``self``'s."""
        if root_name(value) in self.persistent and name not in ("self", "cls"):
            self.persistent.add(name)
        elif name not in ("self", "cls"):
            self.persistent.discard(name)

    def _rare_branch(self, node: ast.If) -> str | None:
        """Why the body of ``node`` runs rarely (see :mod:`synclint.project.rare_blocks`), or None."""
        if ends_in_raise(node.body) or handles_invalid_data(node):
            return "error path"
        if true_only_on_non_finite(node.test, self.arguments) and not keeps_finite_elements(node.body):
            return NON_FINITE_ONLY
        # (Contexts are per line: a warning on its test's line, ``if loss.item() > 30:
        # log.warning(...)``, would make the test's sync, which runs every step, cold too.)
        if (only_warns(node.body) and node.body[0].lineno > (node.test.end_lineno or node.test.lineno)
                and not tests_who_or_whether(node.test)):
            return WARNING_ONLY
        if is_lazy_initialisation(node.test, node.body, self.persistent) and not self._holds_a_step_loop(node.body):
            return _LAZY_INITIALISATION
        if clears_its_flag(node.test, node.body, self.persistent) and node.test.attr not in self.builder.rearmed_flags():
            return "once (a one-shot flag the block clears)"
        # Once per loop is once per step unless the loop is the one over batches (a mask
        # built on the first layer of a ``forward`` is built on every call).
        if self.loops and self.loops[-1][1] and fills_loop_local(node, self.loops[-1][0]):
            return "first pass of its loop only (fills a local that is still None)"
        if self.loops and self.loops[-1][1] and clears_loop_flag(node, self.loops[-1][0], self.rearmed):
            return "first pass of its loop only (a flag the loop clears)"
        batch_loop = next((loop for loop, over_batches in reversed(self.loops) if over_batches), None)
        if batch_loop is not None and (bound := bounded_by_counter(node, batch_loop, self.rearmed)) is not None:
            return f"at most {bound} times per pass over the batches (a counter the block increments)"
        if other_backend_check(node.test, self.backend_flags):
            return _OFF_CUDA
        if tracing_only(node.test):
            return TRACING_ONLY
        return None

    def _branch(self, body, why: str | None, depth: int) -> None:
        if why is None:
            self.statements(body, depth + 1)
        else:
            self._quiet_block(body, why, depth)

    def _quiet_block(self, body, why: str, depth: int) -> None:
        if body:
            self.owner.regions.append(Region(body[0].lineno, body[-1].end_lineno or body[-1].lineno, "cold", why))
        self.quiet.append(why)
        self.statements(body, depth + 1)
        self.quiet.pop()

    def _region_cold(self, node: ast.stmt, why: str) -> None:
        self.owner.regions.append(Region(node.lineno, node.end_lineno or node.lineno, "cold", why))

    def statements(self, statements, depth: int = 0) -> None:
        """Walk a block's ``statements`` (:meth:`_block`), which may not run: the host tensors
        the names held on entry are what they hold after it (see :meth:`_statement`)."""
        entry = set(self.host_now)
        try:
            self._block(statements, depth)
            if self._block_exits:
                self._block_exits[-1].append(frozenset(self.host_now))
        finally:
            self.host_now = entry

    def _block(self, statements, depth: int = 0) -> None:
        """Walk a block's ``statements``; what follows an early return on a cache hit
        (``if self.anchors is not None: return``) runs only on a miss (see
        :func:`~synclint.project.rare_blocks.fills_after_a_hit`), and what follows one on a
        CUDA check (``if torch.cuda.is_available(): return decode_cuda(...)``) only off CUDA
        (:func:`~synclint.project.rare_blocks.returns_on_cuda`). In the body of the innermost
        loop, what follows ``if ...: continue`` taken until the next period runs once per
        period (:func:`~synclint.project.period_guards.continues_until_a_period`), unless it
        steps the optimizer or holds a loop of steps."""
        in_loop = bool(self.loops) and statements is getattr(self.loops[-1][0], "body", None)
        for position, statement in enumerate(statements):
            self._earlier = statements[:position]
            if in_loop and isinstance(statement, ast.If) and continues_until_a_period(
                    statement, rest := statements[position + 1:], self.loops[-1][0], statements[:position]) \
                    and not _steps_the_optimizer(rest) and not _calls_a_step(rest) and not self._holds_a_step_loop(rest):
                self.statement(statement, depth)
                self._quiet_block(rest, AFTER_CONTINUE_OFF_PERIOD, depth - 1)
                return
            cold_before = self.rest_cold
            self.statement(statement, depth)
            if not isinstance(statement, ast.If) or position + 1 == len(statements):
                continue  # (both forms start with an ``if``: no copy of the rest for other statements)
            rest = statements[position + 1:]
            if self.rest_cold == AFTER_RETURN_OFF_PERIOD and _steps_the_optimizer(rest):
                # ``if (step + 1) % self.grad_steps != 0: return``, then ``optimizer.step()``:
                # a gradient accumulation boundary, whatever the divisor is called (as for
                # an ``if`` block): the rest is the training step, not a logging step.
                self.rest_cold = cold_before
            if fills_after_a_hit(statement, rest, self.persistent) and not self._holds_a_step_loop(rest):
                self._quiet_block(rest, _LAZY_INITIALISATION, depth - 1)
                return
            if returns_on_cuda(statement, rest):
                self._quiet_block(rest, _OFF_CUDA, depth - 1)
                return

    def _holds_a_step_loop(self, body: list[ast.stmt]) -> bool:
        """``body`` runs a loop whose passes are steps (over batches, or backpropagating on
        every pass: :func:`step_loop`): however rarely ``body`` runs (``if self.trained is
        not None: return``, then the training loop that fills ``self.trained``), each pass
        of that loop is a step. (Loaders ``body`` binds itself count: ``loader =
        DataLoader(...)``.)"""
        nodes = own_nodes(body)
        loops = [node for node in nodes if isinstance(node, (ast.For, ast.AsyncFor, ast.While))]
        if not loops:
            return False
        loaders = set(self.loaders)
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_batch_iterable(node.value, loaders):
                loaders.update(target.id for target in node.targets if isinstance(target, ast.Name))
        return any(step_loop(loop, loaders)[0] for loop in loops)

    def _expressions(self, nodes) -> None:
        stack = [n for n in nodes if n is not None]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Lambda,)):
                continue
            if isinstance(node, COMPREHENSIONS) and self.host_now:
                # A comprehension's own names shadow the enclosing ones: ``[f(img) for img
                # in extra]`` passes each of ``extra``, whatever ``img`` holds outside.
                bound = {name for generator in node.generators for name in names_bound_in(generator.target)}
                saved, self.host_now = self.host_now, self.host_now - bound
                try:
                    self._expressions(child_nodes(node))
                finally:
                    self.host_now = saved
                continue
            if isinstance(node, ast.Call):
                self._call(node)
                if _is_false_assert(node):
                    self.owner.regions.append(Region(node.lineno, node.end_lineno or node.lineno, "cold", "error path"))
                    continue
            stack.extend(child_nodes(node))

    def _call(self, node: ast.Call) -> None:
        target = dotted(node.func)
        for keyword in node.keywords:
            if keyword.arg in ("collate_fn", "worker_init_fn"):
                name = dotted(keyword.value)
                if name:
                    self.owner.data_callbacks.append(name)
        quiet = self.quiet[-1] if self.quiet else None
        if self.arguments and quiet is None:
            found = argument_sync(node, self.arguments, self.builder.qualify)
            if found is not None:
                self.owner.argument_syncs.append(found)
        if target is None:
            if isinstance(node.func, ast.Attribute):
                self.builder.unspelled_calls.add(node.func.attr)
            return
        loop = self.batch_loops[-1] if self.batch_loops else None
        tensors: list[int | str] = [i for i, arg in enumerate(node.args) if self._is_tensor(arg)]
        tensors += [k.arg for k in node.keywords if k.arg is not None and self._is_tensor(k.value)]
        arguments: list[tuple[int | str, ast.AST]] = [(i, arg) for i, arg in enumerate(node.args)]
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            arguments = []  # positions after ``*args`` are unknown
        arguments += [(k.arg, k.value) for k in node.keywords if k.arg is not None]
        host = tuple(where for where, arg in arguments if self._is_host(arg))
        numbers = tuple(where for where, arg in arguments if is_number(arg, self.numbers) or is_text(arg))
        attributes = tuple(
            (where, arg.attr) for where, arg in arguments
            if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "self"
        )
        forwarded = tuple(
            (where, arg.id) for where, arg in arguments if isinstance(arg, ast.Name) and arg.id in self.owner.kept_params
        )
        constants = tuple((where, constant_value(arg)) for where, arg in arguments)
        if len(arguments) < len(node.args) + len(node.keywords):
            constants += (("*", ()),)  # ``*args`` / ``**kwargs``: what is passed is unknown
        literals = tuple(where for where, arg in arguments if visibly_no_tensor(arg, self.no_tensors))
        self.owner.calls.append(CallSite(target, node.lineno, quiet, loop, tuple(tensors), host, forwarded, constants, numbers,
                                         attributes, self.held.get(id(node), ""), literals))

    def _is_host(self, node: ast.AST) -> bool:
        """A host tensor or ``None`` (a name that holds one of them, see :mod:`synclint.project.residency`,
        or one here: :attr:`host_now`)."""
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.Name):
            return node.id in self.owner.host_names or node.id in self.host_now
        return is_host_field(node, self.owner.packed) or _host_expression(node, self.host_now)

    def _is_tensor(self, node: ast.AST) -> bool:
        """Visibly a tensor: torch math, a tensor-only method, or a name bound to one."""
        if isinstance(node, ast.Name):
            return node.id in self.tensor_names
        return _tensor_expression(node, self.tensor_names)



_TENSOR_METHODS = frozenset(
    {"sum", "mean", "norm", "abs", "sqrt", "exp", "log", "float", "half", "detach", "clone", "pow", "square",
     "amax", "amin", "softmax", "sigmoid", "matmul", "view", "reshape", "flatten", "contiguous", "to", "cuda"}
)
_NOT_TENSOR_TORCH = ("torch.nn.", "torch.utils.", "torch.cuda.", "torch.distributed.", "torch.jit.", "torch.backends.")


def _tensor_expression(node: ast.AST, names: set[str]) -> bool:
    """``torch.exp(x)``, ``x.norm()`` on a tensor name, ``a * b`` of tensors."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.BinOp):
        return _tensor_expression(node.left, names) or _tensor_expression(node.right, names)
    if isinstance(node, ast.Call):
        name = dotted(node.func) or ""
        if name.startswith("torch.") and not name.startswith(_NOT_TENSOR_TORCH):
            short = name.rsplit(".", 1)[1]
            return short[:1].islower() and not short.startswith(("is_", "get_", "set_", "no_grad", "_"))
        if isinstance(node.func, ast.Attribute) and node.func.attr in _TENSOR_METHODS:
            return _tensor_expression(node.func.value, names)
    return False


def _returns_input_unchanged(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every ``return`` gives back the first input, never rebound nor changed in place,
    and the body records something on ``self`` (assigns or updates an attribute, or
    hands values to its own methods).

    A module whose ``forward`` is the identity on its input and only records what
    it sees is an observer: a quantization observer building a histogram for
    calibration, an activation recorder, a debugging probe. Such instrumentation
    is attached for a calibration pass or a debugging session, not as part of the
    model's step, and its statistics code is not the model's computation. An
    identity ``forward`` that records nothing (a barrier that synchronizes, a
    check) is not one.
    """
    params = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    if params[:1] == ["self"]:
        params = params[1:]
    if not params:
        return False
    first = params[0]
    if all(isinstance(s, ast.Return) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
           for s in node.body):
        return False  # ``return x``: an identity layer, nothing observed
    returns = 0
    records = False
    for current in function_nodes(node):
        if isinstance(current, ast.Return):
            if not (isinstance(current.value, ast.Name) and current.value.id == first):
                return False
            returns += 1
        if isinstance(current, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = current.targets if isinstance(current, ast.Assign) else [current.target]
            records = records or any((dotted(t) or "").startswith("self.") for t in targets)
        if isinstance(current, ast.Call) and (dotted(current.func) or "").startswith("self."):
            records = True  # ``self.histogram.copy_(h)``, ``self._record(x)``
        elif isinstance(current, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = (
                current.targets if isinstance(current, ast.Assign)
                else [item.optional_vars for item in current.items] if isinstance(current, ast.With)
                else [current.target]
            )
            for target in targets:
                for leaf in walk_nodes(target) if target is not None else ():
                    if isinstance(leaf, ast.Name) and leaf.id == first:
                        return False  # rebound: what is returned is not the input
                    if isinstance(leaf, ast.Subscript) and (dotted(leaf.value) or "") == first:
                        return False  # ``x[mask] = 0`` changes the input
        elif isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
            receiver = dotted(current.func.value) or ""
            if receiver == first and current.func.attr.endswith("_") and not current.func.attr.startswith("_"):
                return False  # ``x.mul_(scale)``: an in-place op on the input
    return returns > 0 and records


def _returns_host(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every ``return`` gives a host tensor (names count when every assignment to them does)."""
    assigned: dict[str, bool] = {}
    returns: list[ast.AST | None] = []
    for current in function_nodes(node):
        if isinstance(current, ast.Return):
            returns.append(current.value)
        elif isinstance(current, ast.Assign):
            for target in current.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = assigned.get(target.id, True) and _host_expression(current.value, set())
    if not returns:
        return False
    host_names = {name for name, host in assigned.items() if host}
    return all(value is not None and _host_expression(value, host_names) for value in returns)


def _built_or_none(value: ast.AST | None) -> ast.Call | None:
    """The call that builds the attribute's value: ``Head(...)``, or the call of
    ``Head(...) if flag else None`` (either order): when set at all, it is that."""
    if isinstance(value, ast.IfExp):
        branches = (value.body, value.orelse)
        calls = [branch for branch in branches if isinstance(branch, ast.Call)]
        nones = [branch for branch in branches if isinstance(branch, ast.Constant) and branch.value is None]
        return calls[0] if len(calls) == 1 and len(nones) == 1 else None
    return value if isinstance(value, ast.Call) else None


def _attributes(node: ast.ClassDef, module_definitions: frozenset[str] = frozenset()) -> tuple[dict[str, str], frozenset[str]]:
    """Module-valued attributes (``self.head = Head(...)``) and host-tensor attributes of a class.

    A class a method imports under the name of one the module defines (nanotron's
    ``Qwen2DecoderLayer.__init__``: ``from nanotron.nn.moe import Qwen2MoELayer`` beside the
    module's own, unused ``Qwen2MoELayer``) is not recorded: the index resolves the name at
    module level, where it is the other class."""
    modules: dict[str, str] = {}
    host: dict[str, bool] = {}
    shadowed: set[int] = set()  # assignments whose callee a local import shadows
    nodes = all_nodes(node)
    # An import binds its name in its own function (a method, or a function nested in one)
    # and the functions nested in that, not in the function around it. (Only a class that
    # imports such a name somewhere pays for the walks.)
    if module_definitions and any(
        isinstance(part, (ast.Import, ast.ImportFrom))
        and any((alias.asname or alias.name.split(".", 1)[0]) in module_definitions for alias in part.names)
        for part in nodes
    ):
        for scope in (part for part in nodes if isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef))):
            local = {alias.asname or alias.name.split(".", 1)[0] for part in function_nodes(scope)
                     if isinstance(part, (ast.Import, ast.ImportFrom)) for alias in part.names} & module_definitions
            if local:
                shadowed.update(id(part) for part in all_nodes(scope) if isinstance(part, ast.Call)
                                and (dotted(part.func) or "").split(".", 1)[0] in local)
    for current in nodes:
        if not isinstance(current, (ast.Assign, ast.AnnAssign)):
            continue
        targets = current.targets if isinstance(current, ast.Assign) else [current.target]
        value = current.value
        for target in targets:
            if not is_self_attribute(target):
                continue
            attr = target.attr
            built = _built_or_none(value)
            if built is not None and id(built) not in shadowed:
                callee = dotted(built.func) or ""
                short = callee.rsplit(".", 1)[-1]
                if short[:1].isupper() and not callee.startswith(("torch.", "np.", "numpy.")) or callee.startswith(
                    ("torch.nn.", "nn.")
                ) and short[:1].isupper():
                    modules.setdefault(attr, callee)
            host[attr] = host.get(attr, True) and _host_expression(value, set())
    return modules, frozenset(name for name, is_host in host.items() if is_host)
