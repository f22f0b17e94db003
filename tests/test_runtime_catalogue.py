"""One catalogue: every entry is matched by a static rule and by the runtime, or says why not."""

from __future__ import annotations

import pytest

from synclint.catalogue import CATALOGUE, SyncCondition, SyncOp, entry
from synclint.codes import RULE_CODES

torch = pytest.importorskip("torch")

import synclint  # noqa: E402
from synclint.runtime.rules import _VERDICTS, DECIDED_ELSEWHERE, RuleTable  # noqa: E402

#: How to call an entry's callable so that its condition holds.
_CALL_ARGS = {
    SyncCondition.NOT_SAME_TENSOR: "(x, y)",
    SyncCondition.HOST_DATA: "([1.0], device='cuda')",
    SyncCondition.IN_HOT_PATH: "()",
    # a tensor at every place some callable of these entries reads as a number
    SyncCondition.TENSOR_AS_NUMBER: "(x, y, y, scalar=y, value=y)",
}
_METHOD_ARGS = {
    "equal": "(y)", "allclose": "(y)", "masked_select": "(y > 0)", "repeat_interleave": "(y)",
    "new_zeros": "(y)", "new_ones": "(y)", "new_empty": "(y)", "new_full": "((2,), y)",
    "view": "(y, -1)", "reshape": "(y, -1)", "expand": "(y, -1)", "repeat": "(y, 1)",
    "narrow": "(0, 0, y)", "topk": "(y)",
}


def _static_codes(call: str) -> list[str]:
    source = (
        "import torch\nimport torch.nn.functional\nimport torch.linalg\nimport torchvision\n"
        f"def forward(x: torch.Tensor, y: torch.Tensor):\n    return {call}\n"
    )
    return [finding.code for finding in synclint.check_source(source, path="model.py")]


def _calls(op: SyncOp) -> list[str]:
    calls = []
    for name in op.functions:
        if name.endswith("()"):
            continue
        if "current_stream()" in name:
            calls.append("torch.cuda.current_stream().synchronize()")
        else:
            calls.append(name + _CALL_ARGS.get(op.condition, "(x)"))
    calls += [f"x.{method}{_METHOD_ARGS.get(method, '()')}" for method in op.methods]
    return calls


IDS = [f"{op.code} {op.name}" for op in CATALOGUE]


@pytest.mark.parametrize("op", CATALOGUE, ids=IDS)
def test_entry_has_a_static_matcher_or_a_recorded_reason(op: SyncOp) -> None:
    if op.no_static:
        return
    calls = _calls(op)
    assert calls, f"{op.code} {op.name!r}: no callable for a static rule to match, and no `no_static` reason"
    for call in calls:
        assert op.code in _static_codes(call), f"no static {op.code} finding for `{call}`"


@pytest.mark.parametrize("op", CATALOGUE, ids=IDS)
def test_entry_has_a_runtime_matcher_or_a_recorded_reason(op: SyncOp) -> None:
    if op.no_runtime:
        return
    packets = RuleTable().packets
    dispatched = op.condition in _VERDICTS and any(packet in packets for packet in op.aten)
    hooked = bool(op.python_hooks) or op.condition in DECIDED_ELSEWHERE
    assert dispatched or hooked, f"{op.code} {op.name!r}: no runtime matcher and no `no_runtime` reason"


@pytest.mark.parametrize("op", CATALOGUE, ids=IDS)
def test_entry_is_documented(op: SyncOp) -> None:
    assert op.code in RULE_CODES
    assert op.why and op.use_instead
    assert op.source or op.no_runtime, "where PyTorch decides that it syncs"


def test_reasons_are_not_recorded_for_matched_entries() -> None:
    for op in CATALOGUE:
        if op.no_static and op.code not in {"SL103", "SL202", "SL401", "SL404"}:
            assert not any(op.code in _static_codes(call) for call in _calls(op)), (
                f"{op.code} {op.name!r} says it has no static matcher, but one matches"
            )


def test_entries_are_found_by_code_and_name() -> None:
    assert entry("SL201", "host read-back").python_hooks[0] == "item"
    with pytest.raises(KeyError):
        entry("SL999", "nothing")
