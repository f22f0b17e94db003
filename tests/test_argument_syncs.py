"""Syncs a helper applies to its parameter are reported at the helper's calls.

``def item(t): return t.item()`` makes the host wait only when a caller passes a
device tensor, so the finding is at each call, in the caller's context; the
helper's own line is hidden (``--include-cold`` shows it, with why). A sync on a
value the helper makes itself stays at the helper.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from synclint.engine import check_source
from synclint.project import AT_CALL_SITES
from synclint.project.argument_syncs import argument_sync, stable_parameters

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "argument_syncs" / "criterion.py"


def _rows(source: str, include_cold: bool = True):
    return [(f.line, f.column, f.code, f.context, f.why) for f in check_source(source, "criterion.py", include_cold=include_cold)]


def test_each_call_of_a_helper_that_syncs_on_its_parameter_is_reported_once():
    rows = _rows(FIXTURE.read_text())
    assert rows == [
        (6, 16, "SL201", "unknown", AT_CALL_SITES),  # item's `tensor.item()`: reported at its calls
        (11, 12, "SL101", "unknown", AT_CALL_SITES),  # torch.nonzero(x.detach()): a cast of the parameter
        (16, 12, "SL201", "hot", "`Criterion.forward` -> `made_here`"),  # a tensor made inside: reported here
        (20, 12, "SL201", "hot", "`Criterion.forward` -> `relay`"),  # relay's call of item, in relay's context
        (26, 18, "SL201", "hot", "`Criterion.forward`"),  # item(loss.data)
        (29, 17, "SL101", "hot", "`Criterion.forward`"),  # first_nonzero(x=loss): bound by keyword
        (35, 16, "SL201", "hot", "`Criterion.forward` -> `Criterion.scale`"),  # self.to_float(value)
        (38, 16, "SL201", "unknown", AT_CALL_SITES),
    ]
    # Not reported: item(n) of a Python int (27), item of a host tensor (28), relay(loss) (31:
    # never again up the stack), and the helpers' lines by default.
    shown = _rows(FIXTURE.read_text(), include_cold=False)
    assert [row[:3] for row in shown] == [(16, 12, "SL201"), (20, 12, "SL201"), (26, 18, "SL201"),
                                          (29, 17, "SL101"), (35, 16, "SL201")]


def test_the_message_names_the_helper_the_op_and_the_parameter():
    (finding,) = [f for f in check_source(FIXTURE.read_text(), "criterion.py") if f.line == 26]
    assert finding.message.startswith(
        "`item()` (it calls `.item()` on its parameter `tensor`) syncs the host with the device: "
    )
    assert finding.fix is None  # the helper's code is what would change
    data = finding.to_json()
    assert (data["context"], data["why"], data["line"], data["column"]) == ("hot", "`Criterion.forward`", 26, 18)


def test_a_helper_nothing_calls_keeps_its_finding():
    source = textwrap.dedent(
        """
        import torch
        def to_python_float(t):
            return t.item()
        """
    )
    assert _rows(source) == [(4, 12, "SL201", "unknown", "")]


def test_a_helper_called_through_an_unresolved_receiver_keeps_its_finding():
    """``obj.to_scalar(x)``: the arguments may not line up with the parameters."""
    source = textwrap.dedent(
        """
        import torch
        class Meter:
            def to_scalar(self, t):
                return t.item()
        class Net(torch.nn.Module):
            def forward(self, x, meter):
                return meter.to_scalar(x)
        """
    )
    assert _rows(source) == [(5, 16, "SL201", "hot", "`Net.forward` -> `Meter.to_scalar`")]


def test_a_cold_helper_keeps_its_own_context():
    """A logging helper is cold on its own account: its calls are not findings."""
    source = textwrap.dedent(
        """
        import torch
        def log_metrics(loss):
            print(loss.item())
        class Net(torch.nn.Module):
            def forward(self, x):
                log_metrics(x)
                return x
        """
    )
    assert [(line, code, context) for line, _c, code, context, _w in _rows(source)] == [(4, "SL201", "cold")]


def _first_sync(source: str):
    function = ast.parse(textwrap.dedent(source)).body[-1]
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
    found = [argument_sync(call, stable_parameters(function), lambda f: "torch.nonzero" if ast.unparse(f) == "torch.nonzero" else None) for call in calls]
    return [(sync.param, sync.line, sync.column, sync.code, sync.spelled) for sync in found if sync is not None]


def test_only_the_parameter_itself_or_a_view_or_cast_of_it_counts():
    assert _first_sync("def f(x):\n    return x.unsqueeze(0).nonzero()\n") == [("x", 2, 11, "SL101", "`.nonzero()`")]
    assert _first_sync("def f(loss):\n    return loss.data.detach().item()\n") == [("loss", 2, 11, "SL201", "`.item()`")]
    assert _first_sync("def f(x):\n    return torch.nonzero(x[0])\n") == [("x", 2, 11, "SL101", "`torch.nonzero`")]
    assert _first_sync("def f(x):\n    return x.sum().item()\n") == []  # a value the helper computes
    assert _first_sync("def f(x):\n    return (x > 0).nonzero()\n") == []
    assert _first_sync("def f(x):\n    return x.cuda().item()\n") == []  # the helper decides the device
    assert _first_sync("def f(x):\n    x = x * 2\n    return x.item()\n") == []  # rebound
    assert _first_sync("def f(self, x):\n    return self.item()\n") == []


def test_a_helper_that_syncs_on_the_way_to_something_else_keeps_its_finding():
    """Only a helper that returns the op's result is the op under another name: one that
    reads its argument back to compute something else does its own work with the sync."""
    source = textwrap.dedent(
        """
        import torch
        def positions(counts: torch.Tensor):
            found = []
            for i in range(len(counts)):
                found.append(int(counts[i].item()))
            return found
        class Net(torch.nn.Module):
            def forward(self, x, counts):
                return x, positions(counts)
        """
    )
    assert _rows(source) == [(6, 26, "SL201", "hot", "`Net.forward` -> `positions`")]


def test_a_tensor_annotation_on_the_parameter_is_evidence_at_the_call():
    """``.tolist()`` needs evidence that its receiver is a tensor: the helper's annotation
    gives it for every call, unless the argument is known not to be one."""
    source = textwrap.dedent(
        """
        import numpy as np
        import torch
        def bounds(cu_seqlens: torch.Tensor):
            return cu_seqlens.tolist()
        class Net(torch.nn.Module):
            def forward(self, x, lengths):
                return bounds(lengths), bounds([0, 3])
        """
    )
    assert _rows(source) == [(5, 12, "SL201", "unknown", AT_CALL_SITES), (8, 16, "SL201", "hot", "`Net.forward`")]


def test_the_calls_whose_result_is_returned():
    from synclint.project.argument_syncs import returned_calls

    function = ast.parse(
        "def f(x, t):\n"
        "    y = x.nonzero()\n"
        "    if t:\n"
        "        return float(t.item())\n"
        "    return x.nonzero().unbind(1)[0], y\n"
    ).body[0]
    # float(...) at 4:15 and t.item() at 4:21; x.nonzero().unbind(1) and x.nonzero() at 5:11;
    # not y's (2:8), nor what a returned tuple holds.
    assert returned_calls(function) == {(4, 15), (4, 21)}


def test_the_helper_line_is_found_past_non_ascii_text():
    """The index keeps CPython's byte offsets; the finding's column counts characters."""
    source = textwrap.dedent(
        """
        import torch
        def item(t):
            label = "é"; return t.item()
        class Net(torch.nn.Module):
            def forward(self, x):
                return item(x)
        """
    )
    assert _rows(source) == [(4, 25, "SL201", "unknown", AT_CALL_SITES), (7, 16, "SL201", "hot", "`Net.forward`")]
