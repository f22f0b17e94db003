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


ATTRIBUTE_CLASS = '''\
import torch


class TanhBijector:
    def __init__(self, epsilon=1e-6):
        self.epsilon = epsilon

    @staticmethod
    def inverse(y):
        return torch.atanh(y.clamp(-0.99, 0.99))


class Distribution(torch.nn.Module):
    def __init__(self, squash, weight, helper):
        super().__init__()
        self.bijector = TanhBijector() if squash else None
        self.weight = torch.nn.Parameter(weight)
        self.helper = helper

    def forward(self, actions):
        a = self.bijector.inverse(actions)
        b = TanhBijector.inverse(actions)
        c = actions.inverse()
        d = self.helper.inverse()
        return a + b + c + d
'''


def test_a_method_of_the_class_an_attribute_is_built_from_is_that_method():
    # stable-baselines3: `self.bijector = TanhBijector(eps)` and `TanhBijector.inverse(y)` are
    # an elementwise atanh, not `Tensor.inverse`. The input's `.inverse()` is the tensor's;
    # an attribute of unknown class (`self.helper`) is not resolved by the one project method
    # of that name.
    found = [(f.line, f.code) for f in check_source(ATTRIBUTE_CLASS, "dist.py", include_cold=True)]
    assert found == [(23, "SL201"), (24, "SL201")]


TENSOR_SUBCLASSES = '''\
import torch


class BaseBoxes(torch.Tensor):
    pass


class Boxes(BaseBoxes):
    def total(self):
        return self.item()


class Weight(torch.nn.Parameter):
    def scale(self):
        return self.item()


class Plain(torch.nn.Module):
    def forward(self):
        return self.item()
'''


def test_self_is_a_tensor_in_a_subclass_of_a_tensor_subclass():
    # Through a base of the module that subclasses `Tensor`, or through `Parameter`
    # (itself a `Tensor` subclass), `self.item()` is the tensor's.
    found = [(f.line, f.code) for f in check_source(TENSOR_SUBCLASSES, "boxes.py", include_cold=True)]
    assert found == [(10, "SL201"), (15, "SL201")]


SHADOWED_CLASS = '''\
import torch


class A:
    @staticmethod
    def inverse(y):
        return y


def solve(x):
    A = x @ x.T
    return A.inverse()


def project(A, x):
    return A.inverse() @ x
'''


def test_a_local_named_like_a_class_of_the_module_is_not_the_class():
    # `A = x @ x.T` and a parameter `A` shadow the class `A`.
    found = [(f.line, f.code) for f in check_source(SHADOWED_CLASS, "solve.py", include_cold=True)]
    assert found == [(12, "SL201"), (16, "SL201")]


def test_range_bounds_are_python_ints_even_in_forward():
    # CenterNet's IDAUp.forward(self, layers, startp, endp): `range(startp + 1, endp)` and
    # `str(i - startp)` build attribute names from Python ints.
    source = (
        "import torch\n\n\nclass IDAUp(torch.nn.Module):\n    def forward(self, layers, startp, endp):\n"
        "        for i in range(startp + 1, endp):\n            up = getattr(self, 'up_' + str(i - startp))\n"
        "            layers[i] = up(layers[i])\n        return layers\n\n\n"
        "class Head(torch.nn.Module):\n    def forward(self, x, offset):\n        return str(offset)\n"
    )
    assert [(f.line, f.code) for f in check_source(source, "m.py", include_cold=True)] == [(14, "SL201")]
