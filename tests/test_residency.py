"""Tensors the project knows live on the host, read from the code (synclint.project.residency)."""

from __future__ import annotations

import ast
import textwrap

from synclint.engine import check_source
from synclint.project.residency import host_names, packed_sequences

RNN = '''
import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence


class RNN(torch.nn.Module):
    def expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0)
        return (1, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hx: Tensor, batch_sizes: Tensor | None):
        expected = self.expected_hidden_size(input, batch_sizes)
        return expected

    def forward(self, input, hx=None):
        orig_input = input
        batch_sizes = None
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
            first = int(sorted_indices[0])
        else:
            batch_sizes = None
        self.check_forward_args(input, hx, batch_sizes)
        return self.cell(input, hx)


class Head(torch.nn.Module):
    def sizes(self, counts: Tensor):
        return int(counts[0])

    def forward(self, x):
        lengths = x.sum(0)
        return self.sizes(lengths)
'''


def _codes(source: str) -> list[tuple[str, int, int]]:
    return sorted((f.code, f.line, f.column) for f in check_source(textwrap.dedent(source), "m.py", include_cold=True))


def test_packed_sequence_batch_sizes_are_host_through_unpacking_and_call_sites():
    # Lines 10 (reached through two call sites passing ``batch_sizes`` on) and 24 (right
    # after unpacking) read a PackedSequence's batch_sizes: host. ``sorted_indices``
    # lives with the data (line 25), and ``Head.sizes`` gets a device tensor (line 34).
    assert _codes(RNN) == [("SL201", 25, 21), ("SL201", 34, 16)]


def test_packed_sequences_are_found_by_annotation_isinstance_packer_and_copies():
    tree = ast.parse(textwrap.dedent('''
        def f(a: PackedSequence, b, c, x):
            b2 = b
            if isinstance(b2, PackedSequence):
                pass
            p = pack_padded_sequence(x, lengths)
            q = c
    '''))
    assert packed_sequences(tree.body[0]) == {"a", "b", "b2", "p"}


def test_host_names_hold_host_tensors_or_none_wherever_assigned():
    tree = ast.parse(textwrap.dedent('''
        def f(packed: PackedSequence, x):
            sizes = None
            data, sizes, order, back = packed
            other = packed.batch_sizes
            mixed = packed.batch_sizes
            mixed = x
            loop = packed.batch_sizes
            for loop in x:
                pass
            x = packed.batch_sizes
    '''))
    assert host_names(tree.body[0], packed_sequences(tree.body[0]), lambda value: False) == {"sizes", "other"}
