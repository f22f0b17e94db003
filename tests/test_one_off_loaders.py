"""A DataLoader built and iterated in code that runs once is a one-off pass, not the training loader."""

from __future__ import annotations

import textwrap

from synclint.engine import check_source

SOURCE = '''
import torch
from torch.utils.data import DataLoader


class Sampler(DataLoader):
    def __init__(self, data):
        self.norm, self.kept = self._compute_norm(), self.make()
        self.loader = DataLoader(data)
        stats = DataLoader(data)
        for batch in enumerate(stats):
            pass
        x = torch.zeros(3).cuda()

    def _compute_norm(self):
        loader = torch.utils.data.DataLoader(self, batch_size=200)
        for b in loader:
            pass
        for b in DataLoader(self):
            pass
        return 1

    def make(self):
        kept = DataLoader(self)
        for b in kept:
            pass
        return kept
'''


def test_loaders_iterated_where_built_in_code_that_runs_once_are_cold():
    found = {(f.code, f.line, f.column): f.context for f in check_source(textwrap.dedent(SOURCE), "m.py", include_cold=True)}
    assert found == {
        ("SL402", 9, 23): "unknown",  # kept on the object: the training loader
        ("SL402", 10, 17): "cold",  # iterated (through enumerate) in __init__ and nowhere else
        ("SL402", 16, 18): "cold",  # a method called only from __init__
        ("SL402", 19, 18): "cold",  # iterated directly
        ("SL402", 24, 16): "unknown",  # handed back to the caller (though only __init__ calls it)
    }
