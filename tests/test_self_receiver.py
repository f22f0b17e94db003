"""`self` is the instance of its class: a tensor only in a subclass of `Tensor`."""

from __future__ import annotations

from synclint.engine import check_source


def test_self_is_a_tensor_only_in_a_subclass_of_tensor():
    # A method named like a syncing tensor method, called on `self` of a module or any
    # other class, is the class's own; in a `Tensor` subclass it is the tensor's.
    source = (
        "import torch\n\n\nclass STFT(torch.nn.Module):\n    def forward(self, x):\n        return self.inverse(x)\n\n\n"
        "class Boxes(torch.Tensor):\n    def forward(self):\n        return self.inverse()\n\n\n"
        "class Helper:\n    def run(self, x: torch.Tensor):\n        def inner():\n            return self.inverse(x)\n        return inner()\n"
    )
    assert [(f.line, f.code) for f in check_source(source, "m.py", include_cold=True)] == [(11, "SL201")]
