"""An ``else`` (or ``elif``) block runs instead of its ``if``'s body: it sees the names as
they were before the body. After the ``if``, a name holds the last binding in the text that
may reach it, as everywhere in the single-pass flow."""

from __future__ import annotations

from synclint.engine import check_source

STRING_SWITCH = """\
import torch


def nearest_neighbour(dataset, start='first'):
    if start == 'random':
        start = torch.zeros(3, device='cuda').long()
    elif start == 'first':
        start = torch.ones(3, device='cuda').long()
    else:
        assert start == 'center', start
    return start
"""


def _sl202(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py", include_cold=True) if f.code == "SL202"]


def test_an_elif_test_sees_the_names_before_the_if_body():
    # learning-tsp's eval_baseline.py: `start` is the string argument in every test; the
    # body's tensor is another path's.
    assert _sl202(STRING_SWITCH) == []


def test_an_else_block_sees_the_names_before_the_if_body():
    source = ("import torch\n\n\ndef f(dataset, start='first'):\n    if start == 'random':\n"
              "        start = torch.zeros(3, device='cuda').long()\n    else:\n        if start == 'first':\n"
              "            start = torch.ones(3, device='cuda').long()\n    if start.sum():\n        return 1\n")
    # The nested `if start == 'first'` reads the string; after the whole `if`, `start` may
    # be the tensor either block bound.
    assert _sl202(source) == [10]


def test_after_the_if_a_name_only_the_body_bound_holds_the_body_s_value():
    source = ("import torch\n\n\ndef f(flag, mask=None):\n    if flag:\n        mask = torch.rand(3, device='cuda') > 0\n"
              "    else:\n        pass\n    if mask:\n        return 1\n")
    assert _sl202(source) == [9]


def test_a_name_the_else_block_rebinds_holds_its_own_value_after_the_if():
    source = ("import torch\n\n\ndef f(flag):\n    if flag:\n        done = 'yes'\n    else:\n"
              "        done = torch.rand(3, device='cuda') > 0\n    if done:\n        return 1\n")
    assert _sl202(source) == [9]


def test_a_tensor_bound_before_the_if_is_one_in_the_else_block():
    source = ("import torch\n\n\ndef f(flag):\n    done = torch.rand(3, device='cuda') > 0\n    if flag:\n"
              "        done = False\n    else:\n        if done:\n            return 1\n")
    assert _sl202(source) == [9]


def test_an_else_block_that_rebinds_a_tensor_to_a_tensor_keeps_its_binding_after_the_if():
    # The else block binds `done` to a tensor again, the same kind it held before the `if`:
    # it rebound the name all the same, so after the `if` the name may hold its tensor.
    source = ("import torch\n\n\ndef f(flag):\n    done = torch.rand(3, device='cuda') > 0\n    if flag:\n"
              "        done = False\n    else:\n        done = torch.rand(3, device='cuda') > 0\n"
              "    if done:\n        return 1\n")
    assert _sl202(source) == [10]


def test_in_a_loop_an_else_block_sees_what_the_body_bound_on_a_previous_pass():
    # `prev` is None only until the body binds it: every later pass runs the else block
    # with the previous step's tensor, and reads it back.
    source = ("import torch\n\n\ndef train(model, loader):\n    prev = None\n    for batch in loader:\n"
              "        out = model(batch)\n        if prev is None:\n            prev = out.detach()\n"
              "        else:\n            if prev.sum() > 0:\n                print('up')\n"
              "            prev = out.detach()\n")
    assert _sl202(source) == [11]


def test_a_comprehension_in_an_else_block_does_not_rebind_its_target_name():
    # `[x for x in items]` binds the comprehension's own `x`: after the `if`, `x` holds what
    # the body bound, as when the else block binds nothing.
    source = ("import torch\n\n\ndef f(flag, items):\n    x = 'a'\n    if flag:\n"
              "        x = torch.rand(3, device='cuda') > 0\n    else:\n        y = [x for x in items]\n"
              "    if x:\n        return 1\n")
    assert _sl202(source) == [10]


def test_an_else_block_sees_a_host_tensor_the_body_rebinds_as_a_host_tensor():
    # The body binds `counts` to a string (off the host set); the else block runs instead,
    # with the host tensor bound before the `if`: summing it waits for no device.
    source = ("import torch\n\n\ndef f(flag, n):\n    counts = torch.zeros(n)\n    if flag:\n"
              "        counts = 'none'\n    else:\n        if counts.sum() > 0:\n            print('x')\n"
              "    return counts\n")
    assert _sl202(source) == []


def test_after_the_if_a_name_the_body_moved_off_the_host_is_off_it():
    source = ("import torch\n\n\ndef g(flag, n, dev):\n    x = torch.zeros(n)\n    if flag:\n"
              "        x = x.to(dev)\n    else:\n        pass\n    if x.sum() > 0:\n        print('y')\n")
    assert _sl202(source) == [10]


def test_in_a_loop_an_else_block_sees_what_this_pass_bound_before_the_if():
    # `mode` is bound on every pass before the `if`: the else block runs instead of the body
    # on this pass, and compares the string (as outside a loop).
    source = ("import torch\n\n\ndef f(items):\n    for item in items:\n        mode = item.mode\n"
              "        if mode == 'random':\n            mode = torch.zeros(3, device='cuda').long()\n"
              "        elif mode == 'first':\n            mode = torch.ones(3, device='cuda').long()\n")
    assert _sl202(source) == []
