"""The rule base class and the context every rule sees.

A rule is one class: its docstring is its documentation (What it does / Why is
this bad? / Example / Use instead / Fix safety), ``VALID`` and ``INVALID`` are
examples that run as tests, and ``visit_<Node>`` / ``leave_<Node>`` methods are
called by the engine's single traversal, with the shared :class:`RuleContext`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cached_property
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from synclint.analysis.kinds import Kind
from synclint.catalogue import SyncOp
from synclint.project.rare_blocks import TRACING_ONLY

if TYPE_CHECKING:
    from synclint.analysis.flow import FlowState
    from synclint.analysis.imports import ImportMap
    from synclint.fixers.base import FixProposal


@dataclass(frozen=True)
class Invalid:
    """An example a rule must flag, at ``line``:``column`` (1-based) of ``code``."""

    code: str
    line: int
    column: int
    fixed: str | None = None  # expected output of the rule's fix, when it has one


@dataclass
class Report:
    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: FixProposal | None = None
    #: A fixer was asked about this finding outside the statements of every function
    #: (module level, a class body, a lambda: ``FlowState.in_function_body``), where fixes
    #: look for names module-wide: what it offered or declined may depend on all of the module.
    fix_read_the_module: bool = False
    #: Why the reported code does not run per step, as the traversal saw it
    #: (an error path, a constructor, the data pipeline), or None.
    cold: str | None = None
    #: In a function whose name makes it a step (``forward``, a loss, ``training_step``):
    #: evidence of a per-step cost when the call graph cannot say.
    named_step: bool = False
    #: The op syncs on every call (its rule's ``syncs_every_call``) and what it reads is
    #: proven to be a tensor off the host (not assumed from a method name): evidence
    #: enough to show the finding where the call graph cannot say whether it runs per step.
    proven: bool = False
    #: Another node whose lines silence the finding too (a loader's, for the copies of its
    #: batches SL402 reports: a comment on the loader's line silenced it before they were).
    silenced_with: cst.CSTNode | None = None


class RuleContext:
    """What the engine knows about the file being checked."""

    def __init__(
        self, path: str, source: str, module: cst.Module, imports: ImportMap, flow: FlowState
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.imports = imports
        self.flow = flow
        self.reports: list[Report] = []

    @cached_property
    def module_classes(self) -> dict[str, cst.ClassDef]:
        """The classes the module defines at its top level, by name."""
        return {statement.name.value: statement for statement in self.module.body if isinstance(statement, cst.ClassDef)}

    # Conveniences so rules read like the sentence they implement.
    def kind_of(self, node: cst.BaseExpression) -> Kind:
        return self.flow.kind_of(node)

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.flow.kind_of(node).is_tensor

    def is_device_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor not known to live in host memory."""
        return self.flow.kind_of(node).is_tensor and not self.flow.devices.on_host(node)

    def on_host(self, node: cst.BaseExpression) -> bool:
        return self.flow.devices.on_host(node)

    def qualify(self, node: cst.BaseExpression) -> str | None:
        return self.imports.qualify(node)

    @property
    def in_loop(self) -> bool:
        return self.flow.in_loop

    def context_phrase(self) -> str:
        return self.flow.context_phrase()

    @property
    def is_hot(self) -> bool:
        """Inside a loop, or in code the project's call graph reaches from a root
        (``forward``, a loss, a training step, a loop over batches)."""
        return self.flow.in_loop or self.flow.index_context().is_hot

    @property
    def mentions_cuda(self) -> bool:
        return "cuda" in self.source


class Rule:
    """Base class; subclasses set ``code`` and ``name`` and define visitors."""

    code: ClassVar[str]
    name: ClassVar[str]
    #: True for rules about ops that wait for the device (SL1xx, SL2xx): they stay
    #: quiet on host tensors and in data-pipeline code (``Dataset.__getitem__``).
    device_sync: ClassVar[bool] = False
    #: False for rules whose hazard matters wherever the program runs the code (a
    #: DataLoader built in ``__init__`` still needs ``pin_memory``); tests, benchmarks
    #: and export tools are still no part of the program (``outside_the_program``).
    hot_path_only: ClassVar[bool] = True
    #: True for a rule whose findings in a function of the module depend on what code
    #: calling it by name hands it (SL402 follows a loader into the module's functions):
    #: :mod:`synclint.hidden_code` keeps such a function when kept code calls it.
    follows_module_calls: ClassVar[bool] = False
    #: Every finding is an op that makes the host wait whenever its operand lives on a
    #: device (``.item()``, ``nonzero``), whatever code
    #: surrounds it: with a proven operand, shown even where nothing shows it runs per step.
    syncs_every_call: ClassVar[bool] = False
    #: "safe" / "unsafe" when the rule offers a fix for some findings, else None.
    fix_applicability: ClassVar[str | None] = None
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def __init__(self, context: RuleContext) -> None:
        self.context = context
        self._declined: list[str] = []  # set by propose_fix, read by the next report
        self._fix_asked = False  # set by propose_fix, read by the next report

    def report(self, node: cst.CSTNode, message: str, fix: FixProposal | None = None, cold: str | None = None,
               silenced_with: cst.CSTNode | None = None) -> None:
        """Record a finding; the engine gives it its context (hot, unknown or cold).

        Cold findings are kept, marked, so that ``--include-cold`` can show them;
        ``cold``: why the rule itself knows the code runs once.
        """
        if fix is None and self._declined:
            # The fixer recognised the pattern but could not prove its rewrite safe: say why.
            message = f"{message} (no autofix: {self._declined.pop()})"
        flow = self.context.flow
        if cold is not None:
            pass
        elif flow.in_error_path:
            cold = "error path"  # code that only runs to build an error message
        elif flow.in_tracing_path:
            cold = TRACING_ONLY
        elif self.hot_path_only and flow.in_data_pipeline:
            cold = "data pipeline"  # loader workers handle host tensors: nothing to wait for
        elif self.hot_path_only and flow.in_cold_path:
            cold = "construction or setup"  # constructors and reprs run once, not per step
        named_step = flow.hot_path() is not None
        proven = self.syncs_every_call and cold is None and self._operand_proven(node)
        read_the_module = self._fix_asked and not flow.in_function_body
        self._fix_asked = False
        self.context.reports.append(
            Report(type(self), node, message, fix, read_the_module, cold, named_step, proven, silenced_with)
        )

    def _operand_proven(self, node: cst.CSTNode) -> bool:
        """What the flagged op reads is visibly made on an accelerator right there:
        ``torch.arange(n, device=x.device).repeat_interleave(counts)``,
        ``torch.zeros(n, device="cuda").nonzero()``, ``x.cuda().item()``. A tensor that is merely known
        to be a tensor (an annotated parameter) is not enough: library helpers run on the
        host too (samplers, metrics at the end of evaluation, drawing utilities)."""
        if not isinstance(node, cst.Call):
            return False
        devices = self.context.flow.devices
        if isinstance(node.func, cst.Attribute):
            return devices.made_on_accelerator(node.func.value)
        return bool(node.args) and node.args[0].keyword is None and devices.made_on_accelerator(node.args[0].value)

    def propose_fix(self, node: cst.CSTNode) -> FixProposal | None:
        """The fix a registered fixer offers for this rule's finding at ``node``; when a
        fixer declines (a precondition it cannot prove), the next :meth:`report` says why."""
        from synclint.fixers import propose  # fixers load with the first finding
        from synclint.fixers.base import Declined

        proposal = propose(self, node)
        self._fix_asked = True
        self._declined = [proposal.reason] if isinstance(proposal, Declined) else []
        return None if isinstance(proposal, Declined) else proposal

    # -- catalogue-worded messages ------------------------------------------------------
    def sync_message(self, what: str, op: SyncOp, use_instead: str | None = None) -> str:
        """``use_instead`` replaces the entry's advice where a form has a better one of its own."""
        return (
            f"{what} syncs the host with the device: {op.why}; {use_instead or op.use_instead}"
            f"{self.context.context_phrase()}"
        )

    # -- introspection for the engine and docs ---------------------------------------
    @classmethod
    def hooks(cls) -> dict[str, str]:
        """``{"visit_Call": "Call", ...}`` for the visitor methods this rule defines."""
        cached = cls.__dict__.get("_hooks")  # per class: inspect is slow and this runs per file
        if cached is None:
            cached = {
                attr: attr.split("_", 1)[1]
                for attr, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
                if attr.startswith(("visit_", "leave_")) and attr.split("_", 1)[1][:1].isupper()
            }
            cls._hooks = cached
        return dict(cached)

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        doc = cls.documentation()
        for line in doc.splitlines():
            if line.strip() and not line.startswith("#"):
                return line.strip()
        return ""


RuleHook = Callable[[cst.CSTNode], None]
