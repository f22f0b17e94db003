"""Code that runs rarely although a step reaches it: error handling, lazy initialisation,
the summary after a loop over batches inside ``with``, data transforms, debugging aids;
and values that are Python numbers although a ``forward`` receives them."""

from __future__ import annotations

import textwrap

import pytest

from synclint.engine import check_source
from synclint.notebook import check_notebook_source
from synclint.project.summary import MEMOISED as MEMOISED_WHY
from tests.notebook_helpers import notebook_of


def _found(source: str, include_cold: bool = True) -> dict[tuple[int, str], tuple[str, str]]:
    findings = check_source(textwrap.dedent(source), "example.py", include_cold=include_cold)
    return {(f.line, f.code): (f.context, f.why) for f in findings}


def _at(source: str, line: int) -> set[str]:
    return {context for (at, _code), (context, _why) in _found(source).items() if at == line}


# -- error handling ------------------------------------------------------------------------

ERROR_HANDLING = """
    import torch
    class Conv(torch.nn.Module):
        def forward(self, src, index):
            try:
                out = src.index_select(0, index)
            except RuntimeError as e:
                if index.numel() > 0 and index.min() < 0:
                    raise IndexError(f"negative index {index.min().item()}") from e
                raise e
            except ValueError:
                print(index.max().item())
            if not self.consistent(out):
                detail = out.tolist()
                raise FloatingPointError(f"inconsistent: {detail}")
            valid = torch.isfinite(out).all(dim=1)
            if not valid.all():
                if self.training:
                    raise FloatingPointError("diverged")
                out = out[valid]
            if out.sum() > 0:
                out = out[out > 0]
            return out
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (8, "cold"),  # the test of an `if` inside an `except` that ends by raising
        (12, "cold"),  # an `except` body runs only when the body raised: an error path, even one that goes on
        (14, "cold"),  # the message built before `raise`
        (17, "hot"),  # the validity check itself runs every step
        (20, "cold"),  # invalid-data handling that raises in training
        (21, "hot"),  # an ordinary data-dependent branch
        (22, "hot"),
    ],
)
def test_blocks_that_end_by_raising_are_error_paths(line, expected):
    assert _at(ERROR_HANDLING, line) == {expected}, _found(ERROR_HANDLING)


def test_a_block_that_returns_before_its_final_raise_is_not_an_error_path():
    source = """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if self.mode == "split":
                    if self.encoders:
                        return self.encode(x)
                    raise RuntimeError("nothing to run")
                raise NotImplementedError
            def encode(self, x):
                return (x > 0).nonzero()
        """
    assert _found(source) == {(11, "SL101"): ("hot", "`M.forward` -> `M.encode`")}


ERROR_PATH_CALLEE = """
    import torch
    class M(torch.nn.Module):
        def forward(self, x):
            if x.shape[0] == 0:
                describe(x)
                raise ValueError("empty")
            return x
    def describe(x):
        print(x.sum().item())
    """


def test_an_error_path_does_not_make_its_callees_hot():
    assert _found(ERROR_PATH_CALLEE) == {(10, "SL201"): ("cold", "called only where it runs rarely: error path")}


def test_what_an_error_path_s_callee_calls_says_why_once():
    # (Not "called only from called only where it runs rarely: error path code".)
    source = ERROR_PATH_CALLEE.replace("        print(", "        report(x)\n    def report(x):\n        print(")
    assert _found(source) == {(12, "SL201"): ("cold", "called only where it runs rarely: error path")}


def test_a_raise_on_an_optional_tensor_flag_passed_every_step_is_hot():
    # ``if found_inf: raise`` on an Optional parameter reads the flag's value whenever a
    # tensor is passed, and the step passes one every time: not an error path (the raise
    # is; the test is not). A session once made such tests cold by their shape alone.
    source = """
        import torch
        from typing import Optional
        class Model(torch.nn.Module):
            def forward(self, loss: torch.Tensor, found_inf: Optional[torch.Tensor] = None):
                if found_inf:
                    raise FloatingPointError("non-finite gradients")
                return loss
        """
    assert _found(source) == {(6, "SL202"): ("hot", "`Model.forward`")}


# -- lazy initialisation ---------------------------------------------------------------------

LAZY = """
    import torch
    class Experts(torch.nn.Module):
        def forward(self, x, mask=None):
            key = (x.device, x.shape[0])
            counts = self._counts.get(key)
            if counts is None:
                counts = torch.tensor([x.shape[0]], device=x.device)
                self._counts[key] = counts
            if self.rel is None or self.rel.shape[1] != x.shape[1]:
                self.rel = self.rel_indices(x.shape[1])
            if not hasattr(self, "scale"):
                self.scale = torch.tensor(0.5, device=x.device)
            if mask is None:
                mask = torch.tensor([1.0], device=x.device)
            scratch = {}
            if "k" not in scratch:
                scratch["k"] = torch.tensor([2.0], device=x.device)
            return x * mask * counts

        def rel_indices(self, n):
            return torch.arange(n).to(self.w.device)

    class Lamb(torch.optim.Optimizer):
        def step(self):
            for group in self.param_groups:
                if "step" not in group:
                    group["step"] = torch.tensor(0.0, device=group["params"][0].device)
                for p in group["params"]:
                    state = self.state[p]
                    if "buf" not in state:
                        state["buf"] = torch.tensor([0.0], device=p.device)
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (8, "cold"),  # built when the per-shape cache misses, then stored in it
        (13, "cold"),  # not hasattr(self, ...): built once
        (15, "hot"),  # a local default: runs on every call without a mask
        (18, "hot"),  # a local dict lives for one call: filled every step
        (28, "cold"),  # optimizer group state, created on the first step
        (32, "cold"),  # per-parameter state through an alias of self.state
    ],
)
def test_lazy_initialisation_runs_once(line, expected):
    assert _at(LAZY, line) == {expected}, _found(LAZY)


UNION = """
    import torch
    class Cached(torch.nn.Module):
        def forward(self, x):
            if self.grid is None or self.training:
                self.grid = torch.tensor([1.0], device=x.device)
            if not self._tables:
                self._tables[x.shape[0]] = torch.tensor([2.0], device=x.device)
            if self.pos is None or self.pos.device != x.device:
                self.pos = torch.tensor([3.0], device=x.device)
            return x
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (6, "hot"),  # ``or self.training``: the branch runs on every training step
        (8, "cold"),  # an empty table filled on the first call
        (10, "cold"),  # rebuilt when the cached tensor is stale (another device)
    ],
)
def test_one_detector_decides_caches_filled_on_a_miss_or_when_stale(line, expected):
    assert _at(UNION, line) == {expected}, _found(UNION)


def test_what_only_lazy_initialisation_calls_is_not_hot():
    found = _found(LAZY)
    assert not any(line == 22 for line, _code in found)  # rel_indices: SL403 needs hot code


# -- the summary after a loop over batches, inside `with` -------------------------------------

def test_code_after_a_loop_over_batches_inside_with_runs_once():
    source = """
        import torch
        def validate(model, dataloader):
            preds = []
            with torch.autocast("cuda"):
                for images, labels in dataloader:
                    y = model(images)
                    preds.append(y.argmax(1))
                    print(y.max().item())
                acc = torch.cat(preds).float().mean()
            top1 = acc.tolist()
            return top1
        """
    found = _found(source)
    assert found[(9, "SL201")][0] == "hot"
    assert found[(11, "SL201")] == ("cold", "after the loop over batches (a summary that runs once)")


# -- data transforms, debugging aids ----------------------------------------------------------

def test_data_transforms_are_data_pipeline_not_module_steps():
    source = """
        import torch
        from torch_geometric.transforms import BaseTransform
        class Delaunay(BaseTransform):
            def forward(self, data):
                pos = data.pos.cpu()
                return self.edges(data)
            def edges(self, data):
                return data.edge_index.nonzero()
        class Box2BoxTransform:
            def apply_deltas(self, deltas):
                return deltas.nonzero()
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.coder = Box2BoxTransform()
            def forward(self, x):
                return self.coder.apply_deltas(x)
        """
    found = _found(source)
    assert found[(6, "SL201")] == ("cold", "data pipeline (reached from `Delaunay.forward` (a data transform))")
    assert found[(9, "SL101")][0] == "cold"
    assert found[(12, "SL101")][0] == "hot"  # a class *named* like a transform is model code


def test_collate_functions_written_as_modules_are_data_pipeline():
    # lightly's `VICRegLCollateFunction(nn.Module).forward` loops over the samples of a
    # batch in the loader's workers; a module merely *collating* features is no such class.
    source = """
        import torch
        class VICRegLCollateFunction(torch.nn.Module):
            def forward(self, batch):
                return [self.transform(img).nonzero() for img, _ in batch]
        class PadCollator:
            def __call__(self, samples):
                return torch.stack(samples).nonzero()
        class FeatureMixer(torch.nn.Module):
            def forward(self, x):
                return x.nonzero()
        """
    found = _found(source)
    assert found[(5, "SL101")] == ("cold", "data pipeline (reached from `VICRegLCollateFunction.forward` (a collate function))")
    assert found[(8, "SL101")][0] == "cold"
    assert found[(11, "SL101")][0] == "hot"


def test_a_module_named_like_a_collator_is_model_code():
    # A layer of the model named `...Collator` (built into an `nn.Sequential`, so no call
    # reaches its `forward`) runs every step on device tensors: its `forward` is a module
    # step, not a collate function (those modules are named `...CollateFunction`: lightly's).
    source = """
        import torch
        class TokenCollator(torch.nn.Module):
            def forward(self, x):
                return x.nonzero()
        class SimCLRCollateFn(torch.nn.Module):
            def forward(self, batch):
                return torch.stack(batch).nonzero()
        """
    found = _found(source)
    assert found[(5, "SL101")][0] == "hot"
    assert found[(8, "SL101")][0] == "cold"


def test_debug_dumps_are_cold():
    source = """
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                out = x * 2
                self._maybe_dump_logits(out)
                return out
            def _maybe_dump_logits(self, logits):
                torch.save(logits.detach().cpu(), "logits.pt")
        """
    assert _found(source) == {(9, "SL201"): ("cold", "debugging aid (dumps or checks, not the step itself)")}


def test_precompute_helpers_are_setup_unless_a_step_calls_them():
    source = """
        import torch
        def precompute_encodings(model, loader):
            return [model(b).cpu() for b in loader]
        def _precompute_scale(x):
            return x.max().item()
        class M(torch.nn.Module):
            def forward(self, x):
                return x / _precompute_scale(x)
        """
    found = _found(source)
    assert found[(4, "SL201")] == ("cold", "construction or setup")
    assert found[(6, "SL201")][0] == "hot"


# -- Python values a forward receives ---------------------------------------------------------

def test_position_arguments_of_a_forward_and_has_predicates_are_python_values():
    source = """
        import torch
        class AlibiBias(torch.nn.Module):
            def forward(self, i, j):
                if self.bias is not None and self.bias.shape[-1] >= j:
                    return self.bias[..., -i:, -j:]
                return torch.zeros(i, j)
        class Wrapper(torch.nn.Module):
            def forward(self, batched, x):
                if batched[0].has("gt_masks"):
                    return x
                if x.sum() > 0:
                    return x
                return x
        """
    assert set(_found(source)) == {(12, "SL202")}


def test_a_dict_key_is_a_python_value():
    source = """
        import torch
        class Router(torch.nn.Module):
            def forward(self, x, budget):
                if budget in self.budget_map.keys():
                    return x
                elif budget == 1.0:
                    return x * 2
                if x.sum() == 1.0:
                    return x
                return x
        """
    assert set(_found(source)) == {(9, "SL202")}


def test_a_name_compared_with_a_string_is_a_python_value():
    # U-ViT's `FrozenAutoencoderKL.forward(self, inputs, fn)`: `fn == "encode_moments"`
    # selects a method; a tensor's `==` with a string is plain `False` anyway.
    source = """
        import torch
        class Autoencoder(torch.nn.Module):
            def forward(self, inputs, fn):
                if fn == "encode_moments":
                    return inputs
                elif "decode" != fn:
                    return inputs * 2
                if inputs.sum() == 1.0:
                    return inputs
                return inputs
        """
    assert set(_found(source)) == {(9, "SL202")}


def test_branches_for_another_backend_are_not_cuda_code():
    source = """
        import torch
        def non_max_suppression(prediction):
            device = prediction.device
            mps = "mps" in device.type
            if mps:
                prediction = prediction.cpu()
            if prediction.device.type == "xla":
                print(prediction.sum().item())
            if prediction.device.type == "cuda":
                print(prediction.max().item())
            return prediction
        class Det(torch.nn.Module):
            def forward(self, x):
                return non_max_suppression(x)
        """
    found = _found(source)
    assert found[(7, "SL201")] == ("cold", "another backend only (not a CUDA device)")
    assert found[(9, "SL201")][0] == "cold"
    assert found[(11, "SL201")][0] == "hot"


def test_a_loop_over_loaders_is_no_loop_over_batches():
    # SSD's do_evaluation: `for dataset_name, data_loader in zip(names, data_loaders_val):`
    # runs once per loader; the loop over each loader's batches is the step.
    source = """
        import torch
        def evaluate(model, names, data_loaders_val):
            for name, data_loader in zip(names, data_loaders_val):
                total = torch.zeros((), device="cuda")
                for batch in data_loader:
                    total += model(batch.cuda(non_blocking=True)).sum()
                    print(total.item())
                print(name, total.item())
        """
    assert _found(source) == {
        (8, "SL201"): ("hot", "the loop over `data_loader` in `evaluate`"),
        (9, "SL201"): ("unknown", ""),  # once per loader, not per batch
    }


def test_fallbacks_for_a_tensor_off_the_cuda_device_are_not_cuda_code():
    # torch-ngp's raymarching wrappers: `if not rays_d.is_cuda: rays_d = rays_d.cuda()`
    # before a CUDA kernel. A CUDA step hands them device tensors; the branch serves inputs
    # made elsewhere. `if x.is_cuda:` itself is the CUDA path.
    source = """
        import torch
        def march(rays_o, rays_d, aabb):
            if not rays_o.is_cuda: rays_o = rays_o.cuda()
            if rays_d.device.type != "cuda":
                rays_d = torch.tensor(rays_d.tolist(), device="cuda")
            if aabb.is_cpu:
                aabb = torch.tensor(aabb.tolist()).cuda()
            if rays_o.is_cuda:
                print(rays_o.sum().item())
            return rays_o + rays_d
        class Renderer(torch.nn.Module):
            def forward(self, o, d, aabb):
                return march(o, d, aabb)
        """
    found = _found(source)
    assert found == {
        (4, "SL403"): ("cold", "another backend only (not a CUDA device)"),
        (8, "SL403"): ("cold", "another backend only (not a CUDA device)"),
        (10, "SL201"): ("hot", "`Renderer.forward` -> `march`"),
    }


# -- blocks the step's calls never enter -------------------------------------------------------

GUARDED = """
    import torch


    class DDP(torch.nn.Module):
        def _sync_check(self, is_joined_rank, flag=False):
            t = torch.ones(1, device=self.device)
            if is_joined_rank:
                return t.item() != 0
            else:
                x = t.item()
            if flag:
                y = t.item()
            if not flag:
                z = t.item()
            return None

        def forward(self, x):
            self._sync_check(is_joined_rank=False)
            return x * 2

        def join_hook(self):
            return self._sync_check(True, flag=True)

        def public_check(self, check=False):
            if check:
                return torch.ones(1, device=self.device).item()

        def public_fast(self, fast=False):
            if not fast:
                return torch.ones(1, device=self.device).item()

        def public_no_default(self, check):
            if check:
                return torch.ones(1, device=self.device).item()

        def step(self, x):
            self.public_check()
            self.public_fast(fast=True)
            self.public_no_default(False)
            return self(x)
    """


def test_a_block_the_step_s_calls_never_enter_is_cold():
    found = _found(GUARDED)
    assert sorted(found) == [(9, "SL201"), (11, "SL201"), (13, "SL201"), (15, "SL201"), (27, "SL201"), (31, "SL201"),
                             (35, "SL201")]
    # ``is_joined_rank=False`` from forward: only the join hook takes the ``if`` branch.
    assert found[(9, "SL201")] == ("cold", "not on the step's path (its calls from the step pass `is_joined_rank=False`)")
    assert found[(11, "SL201")][0] == "hot"  # the else branch is the step's
    # ``flag`` keeps its false default in the step's call
    assert found[(13, "SL201")] == ("cold", "not on the step's path (its calls from the step pass `flag=False`)")
    assert found[(15, "SL201")][0] == "hot"
    # A public method's opt-in mode (``check=True``, against its default) that no call of
    # the step asks for: callers outside the project would have to ask for it too.
    assert found[(27, "SL201")] == ("cold", "not on the step's path (its calls from the step pass `check=False`)")
    # but a block the default runs stays hot (outside callers run it), and so does one
    # guarded by a parameter without a constant default
    assert found[(31, "SL201")][0] == "hot"
    assert found[(35, "SL201")][0] == "hot"


MODES = """
    import torch


    class Head(torch.nn.Module):
        def forward(self, preds, gts):
            try:
                return self.get_assignments(preds, gts)
            except RuntimeError:
                torch.cuda.empty_cache()
                return self.get_assignments(preds, gts, mode="cpu")

        def get_assignments(self, preds, gts, mode="gpu"):
            if mode == "cpu":
                preds = preds.cpu()
            if "gpu" != mode:
                gts = gts.cpu()
            cost = preds @ gts.T
            if mode == "gpu":
                cost.sum().item()
            return permute(cost, 4)

        def _masked(self, x, mask=None):
            if mask is None:
                return x.sum().item()
            if mask is not None and self.training:
                return mask.sum().item()
            return x

        def loss(self, x):
            return self._masked(x, torch.isfinite(x))


    def permute(counts, alignment, use_cpu=False):
        if use_cpu:
            return fill_cpu(counts)
        return counts.cumsum(0)


    def fill_cpu(counts):
        return [int(c.item()) for c in counts]
    """


def test_a_mode_or_an_optional_argument_the_step_never_passes_is_cold():
    found = _found(MODES)
    # YOLOX's ``get_assignments``: ``mode="cpu"`` only from the out-of-memory handler
    why = "not on the step's path (its calls from the step pass `mode='gpu'`)"
    assert found[(15, "SL201")] == ("cold", why)
    assert found[(17, "SL201")] == ("cold", why)  # ``"gpu" != mode``, constant first
    assert found[(20, "SL201")][0] == "hot"  # the default's own block
    # torchtune's ``generate_permute_indices(..., use_cpu=False)``: the CPU reference
    # implementation runs only in the block, so it is cold as well
    assert found[(41, "SL201")] == (
        "cold", "called only where it runs rarely: not on the step's path (its calls from the step pass `use_cpu=False`)"
    )
    # a tensor is never None: the default's block is skipped, the mask's is not
    assert found[(25, "SL201")] == ("cold", "not on the step's path (its calls from the step pass `mask=a tensor`)")
    assert found[(27, "SL201")][0] == "hot"


CHAINED_MODES = """
    import torch


    def _inner(x, flag=False):
        if flag:
            return x.sum().item()
        return x


    def _outer(x, use=False):
        if use:
            _inner(x, flag=True)
        return _inner(x)


    def soft_nms(x: torch.Tensor, gaussian=True):
        if gaussian:
            decay = x
        else:
            decay = x[x > 0]
        return decay


    def batched_soft_nms(x, gaussian=True):
        return soft_nms(x, gaussian=gaussian)


    def soft_nms_2(x: torch.Tensor, gaussian=True):
        if not gaussian:
            return x[x > 0]
        return x


    def soft_nms_3(x: torch.Tensor, gaussian=True):
        if gaussian:
            return x
        keep = x[x > 0]
        return keep


    def batched_soft_nms_2(x, gaussian=False):
        return soft_nms_2(x, gaussian=gaussian)


    class Net(torch.nn.Module):
        def forward(self, x):
            batched_soft_nms(x, gaussian=True)
            batched_soft_nms_2(x, gaussian=True)
            soft_nms_3(x)
            return _outer(x)
    """


def test_a_call_in_a_skipped_block_does_not_decide_what_the_step_passes():
    # ``_inner(x, flag=True)`` sits in ``_outer``'s block that the step never enters: the
    # step's only call of ``_inner`` leaves ``flag`` false.
    found = _found(CHAINED_MODES)
    assert found[(7, "SL201")] == ("cold", "not on the step's path (its calls from the step pass `flag=False`)")
    # efficientdet's batched_soft_nms(..., method_gaussian=True) passes the flag on to
    # soft_nms: the linear decay is an opt-in of both public functions
    assert found[(21, "SL103")] == ("cold", "not on the step's path (its calls from the step pass `gaussian=True`)")
    # unless a function on the way runs it by default
    assert found[(31, "SL103")][0] == "hot"
    # what follows `if gaussian: return x` needs `gaussian` false
    assert found[(38, "SL103")] == ("cold", "not on the step's path (its calls from the step pass `gaussian=True`)")


UNSEEN_CALLERS = """
    import functools
    import torch
    from torch.utils.checkpoint import checkpoint


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scaled = functools.partial(_scale, check=True)

        def forward(self, x, mask):
            if self.ckpt:
                x = checkpoint(self._inner, x, mask)
            else:
                x = self._inner(x)
            clip = lambda t: _clip(t, strict=True)
            return self._pad(clip(self.scaled(_scale(_clip(x)))), 0, check=True)

        def _inner(self, x, mask=None):
            if mask is not None:
                return mask.sum().item()
            return x

        def _pad(self, x, *sizes, check=False):
            if check:
                return x.sum().item()
            return x


    def _scale(x, check=False):
        if check:
            return x.sum().item()
        return x


    def _clip(x, strict=False):
        if strict:
            return x.sum().item()
        return x


    def with_check(fn):
        def wrapper(*args, **kwargs):
            return fn(*args, check=CONFIG.check, **kwargs)
        return wrapper


    @with_check
    def _checked(x, check=False):
        if check:
            return x.sum().item()
        return x


    @torch.no_grad()
    def _no_grad(x, check=False):
        if check:
            return x.sum().item()
        return x


    def _rebound(x, flag=False):
        def enable():
            nonlocal flag
            flag = True
        enable()
        if flag:
            return x.sum().item()
        return x


    class Other(torch.nn.Module):
        def forward(self, x):
            return _no_grad(_checked(_rebound(x)))
    """


def test_a_block_whose_callers_the_index_cannot_see_keeps_its_context():
    # The step calls each helper plainly with the block's default, but also reaches it
    # where no call shows the arguments: a function passed as a value (``checkpoint``,
    # ``functools.partial``), a lambda, a keyword-only flag after ``*sizes`` (``0`` is a
    # size), a parameter a nested function rebinds, a function handed to a decorator
    # (which may call it with any arguments; ``torch.no_grad()`` passes them on as they are).
    found = _found(UNSEEN_CALLERS)
    assert {line: context for (line, _code), (context, _why) in found.items()} == {
        22: "hot", 27: "hot", 33: "hot", 39: "hot", 52: "hot", 59: "cold", 69: "hot"
    }
    assert found[(59, "SL201")][1] == "not on the step's path (its calls from the step pass `check=False`)"


OPTED_IN_ELSEWHERE = """
    import torch


    def split_batch(batch, is_hybrid=False):
        if is_hybrid:
            size = batch["size"].item()
            batch = batch["tokens"][:size]
        return batch


    class Net(torch.nn.Module):
        def forward(self, batch):
            return split_batch(batch)


    def get_batch(iterator, args):
        return split_batch(next(iterator), is_hybrid=args.hybrid)
    """


def test_a_public_mode_that_code_of_unknown_context_asks_for_is_not_cold():
    # Megatron's get_batch_on_this_cp_rank(batch, is_hybrid_cp=...): the model's own call
    # keeps the default, but a training script's ``get_batch`` (handed to the trainer as a
    # value, so of unknown context) passes ``args.dynamic_context_parallel``: the mode is
    # the project's, and its block runs every step when it is on.
    assert _found(OPTED_IN_ELSEWHERE) == {(7, "SL201"): ("hot", "`Net.forward` -> `split_batch`")}


# -- held-out codebases (session 9): dinov2, litgpt, segment-anything, composer -----------

ONE_SHOT_FLAG = """
    import torch
    class SSL(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            if self.need_to_synchronize_fsdp_streams:
                torch.cuda.synchronize()
                self.need_to_synchronize_fsdp_streams = False
            if self.warm:
                torch.cuda.synchronize()
                if x.shape[0] > 1:
                    self.warm = False
            first = True
            for part in y:
                if first:
                    torch.cuda.synchronize()
                    first = False
            return y
"""


def test_a_block_that_clears_its_own_flag_on_the_object_runs_once():
    # dinov2 ssl_meta_arch.fsdp_synchronize_streams: synchronises on the first step only.
    found = _found(ONE_SHOT_FLAG)
    assert found[(7, "SL501")] == ("cold", "once (a one-shot flag the block clears)")
    assert found[(10, "SL501")][0] == "hot"  # cleared only under a condition
    assert found[(16, "SL501")][0] == "hot"  # a local flag: set again on every call


PERIODIC_COUNTERS = """
    import torch
    def train(model, loader, cfg, iteration=0, iter_num=0):
        for itr, batch in enumerate(loader):
            loss = model(batch).sum()
            loss.backward()
            if cfg.eval_period > 0 and (iteration + 1) % cfg.eval_period == 0:
                torch.cuda.synchronize()
            if iter_num % 100 == 0 or iter_num == 0:
                print(f"loss {loss.item():.4f}")
            if (iteration - 1) % 2 == 0 or loss.item() > 1:
                pass
            if itr % 20 == 0:
                print("loss %.3f" % loss)
            iteration += 1
            iter_num += 1
"""


def test_periodic_guards_on_an_offset_counter_or_a_counter_with_a_suffix():
    # dinov2 train.py `(iteration + 1) % eval_period == 0`; litgpt `iter_num % 100 == 0`.
    found = _found(PERIODIC_COUNTERS)
    assert found[(8, "SL501")] == ("cold", "periodic (logging every N steps)")
    assert found[(10, "SL201")] == ("cold", "periodic (logging every N steps)")
    assert found[(11, "SL201")][0] == "hot"  # the test itself runs every step
    # jepa's frozen-evaluation loops: `if itr % 20 == 0: logger.info(... % loss)`
    assert found[(14, "SL201")] == ("cold", "periodic (logging every N steps)")


LISTED_STEPS = """
    import torch
    def train(model, loader, milestones, warmup):
        for iteration, batch in enumerate(loader):
            loss = model(batch).sum()
            loss.backward()
            if iteration in milestones:
                print("mask", loss.item())
            if (iteration + 1) in {1000, 2000}:
                torch.cuda.synchronize()
            if iteration not in milestones:
                print(loss.item())
            if iteration in range(warmup):
                print(loss.item())
"""


def test_a_step_counter_among_listed_steps_is_periodic():
    # TensoRF's `if iteration in update_AlphaMask_list:` updates the alpha mask at a few listed
    # iterations; `not in` runs on every other step, and `in range(warmup)` on every step of a window.
    found = _found(LISTED_STEPS)
    assert found[(8, "SL201")] == ("cold", "periodic (logging every N steps)")
    assert found[(10, "SL501")] == ("cold", "periodic (logging every N steps)")
    assert found[(12, "SL201")][0] == "hot"
    assert found[(14, "SL201")][0] == "hot"


LISTED_STEPS_NEGATED_OR_OF_SAMPLES = """
    import torch
    def train(model, loader, milestones, bad_indices):
        for iteration, batch in enumerate(loader):
            loss = model(batch)
            if not iteration in milestones:
                print(loss.sum().item())
            if not (iteration % 100 == 0):
                print(loss.sum().item())
            for i in range(loss.shape[0]):
                if i in bad_indices:
                    print(loss[i].item())
            on_step(iteration, milestones, loss)
    def on_step(iteration, milestones, loss):
        if not iteration in milestones:
            return
        print(loss.sum().item())
"""


LISTED_STAGES = """
    import torch
    class Module(torch.nn.Module):
        def shared_step(self, batch, step):
            loss = self.model(batch).sum()
            if step in ("train", "fit"):
                self.log("loss", loss.item())
            return loss
        def training_step(self, batch, batch_idx):
            return self.shared_step(batch, "train")
"""


def test_a_counter_named_like_a_step_among_listed_words_is_a_stage_not_a_schedule():
    # `step` that names a stage ("train", "val") picks the stage whose every step it runs.
    found = _found(LISTED_STAGES)
    assert found[(7, "SL201")][0] == "hot"


def test_a_negated_membership_or_a_sample_index_among_listed_ones_is_no_schedule():
    # `not iteration in milestones` is `iteration not in milestones`: every other step (as is
    # `not (iteration % 100 == 0)`); `i` walking a batch's samples among `bad_indices` picks
    # samples, on every step. An early return unless at a listed step still leaves the rest periodic.
    found = _found(LISTED_STEPS_NEGATED_OR_OF_SAMPLES)
    assert found[(7, "SL201")][0] == "hot"
    assert found[(9, "SL201")][0] == "hot"
    assert found[(12, "SL201")][0] == "hot"
    assert found[(17, "SL201")] == ("cold", "periodic (after an early return when not logging)")


BATCH_INDEX_GUARDS = """
    import torch
    def train(model, data, loader, layers, optimizer):
        for epoch in range(10):
            for n, batch in enumerate(next_batch_pairwise(data, 32)):
                loss = model(batch.cuda()).sum()
                loss.backward()
                if n % 100 == 0 and n > 0:
                    print("loss", loss.item())
            for b, (x, y) in enumerate(loader, 1):
                loss = model(x.cuda()).sum()
                if b % 50 == 0:
                    print(loss.item())
                for k, layer in enumerate(layers):
                    if k % 2 == 0:
                        print(layer(loss).item())
"""


def test_a_modulo_of_the_batch_index_of_a_loop_over_batches_is_periodic_whatever_its_name():
    # SELFRec: `for n, batch in enumerate(next_batch_pairwise(...)): ... if n % 100 == 0: print(loss.item())`.
    found = _found(BATCH_INDEX_GUARDS)
    assert found[(9, "SL201")] == ("cold", "periodic (logging every N steps)")
    assert found[(13, "SL201")] == ("cold", "periodic (logging every N steps)")
    # The index of a loop over layers is no batch index: every other layer, every step.
    assert found[(16, "SL201")][0] == "hot"


PASS_COUNTER_GUARDS = """
    import torch
    def train(model, prefetcher, optimizer, flags):
        batch_index = 0
        skipped = 0
        batch = prefetcher.next()
        while batch is not None:
            loss = model(batch["lr"].cuda()).sum()
            loss.backward()
            optimizer.step()
            if batch_index % 100 == 0:
                print(loss.item())
            if flags:
                skipped += 1
            if skipped % 10 == 0:
                print(loss.item())
            batch = prefetcher.next()
            batch_index += 1
"""


def test_a_modulo_of_a_counter_the_loop_over_batches_steps_every_pass_is_periodic():
    # SRGAN-PyTorch: `while batch_data is not None: ... if batch_index % PRINT_FREQ == 0:
    # ... batch_index += 1` over a CUDA prefetcher.
    found = _found(PASS_COUNTER_GUARDS)
    assert found[(12, "SL201")] == ("cold", "periodic (logging every N steps)")
    # A counter stepped in a branch counts some passes only: no schedule of the steps.
    assert found[(16, "SL201")][0] == "hot"


OFF_PERIOD_GUARDS = """
    import torch
    def train(model, loader, optimizer, K):
        n = 0
        for x in loader:
            n += 1
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            if n % K != 0:
                print(loss.item())
            if n % K:
                print(loss.item())
            if not n % K:
                print(loss.item())
"""


def test_a_modulo_that_holds_between_the_periodic_steps_is_every_step():
    # `if n % K != 0:` and `if n % K:` hold on all steps but every K-th: no schedule.
    found = _found(OFF_PERIOD_GUARDS)
    assert found[(11, "SL201")][0] == "hot"
    assert found[(13, "SL201")][0] == "hot"
    assert found[(15, "SL201")] == ("cold", "periodic (logging every N steps)")


FIRST_BATCH = """
    import torch
    class NeRFSystem(torch.nn.Module):
        def validation_step(self, batch, batch_nb):
            results = self(batch["rays"])
            if batch_nb == 0:
                img = results["rgb"].cpu()
            if self.global_step == 0 and self.logger:
                print(results["rgb"].sum().item())
            if 0 == batch_nb:
                print(results["depth"].max().item())
            return results["rgb"].mean().item()
    class Stack(torch.nn.Module):
        def forward(self, x, epoch):
            for i, layer in enumerate(self.layers):
                if i == 0:
                    print(x.sum().item())
                x = layer(x)
            if epoch == 0:
                print(x.max().item())
            return x
"""


def test_a_block_on_the_first_batch_runs_once_per_pass():
    # nerf_pl's validation_step logs its first batch's images: `if batch_nb == 0: ... .cpu()`.
    found = _found(FIRST_BATCH)
    first = ("cold", "first batch only (once per pass over the data)")
    assert found[(7, "SL201")] == first
    assert found[(9, "SL201")] == first  # `and` another condition: still the first step at most
    assert found[(11, "SL201")] == first
    assert found[(12, "SL201")][0] == "hot"  # every validation batch
    assert found[(17, "SL201")][0] == "hot"  # the first *layer*, on every forward
    assert found[(20, "SL201")][0] == "hot"  # the first epoch is many steps


FIRST_BATCHES = """
    import torch
    class Task(torch.nn.Module):
        def validation_step(self, batch, batch_idx):
            y_hat = self(batch["image"])
            if batch_idx < 10 and self.logger:
                batch["prediction"] = y_hat.cpu()
            if 3 >= batch_idx:
                print(y_hat.max().item())
            if batch_idx < 1000:
                print(y_hat.min().item())
            return y_hat
    def train(model, loader, opt, warmup):
        for i, x in enumerate(loader):
            loss = model(x.cuda()).sum()
            if i < 5:
                print(loss.item())
            for step in range(3):
                if step < 2:
                    print(loss.mean().item())
            if warmup < 10:
                print(loss.std().item())
"""


def test_a_block_on_the_first_few_batches_runs_a_few_times_per_pass():
    # torchgeo's trainers plot their first ten validation batches: `if batch_idx < 10 and
    # ... self.logger: ... pred["boxes"].cpu()`. Not a bound over 100 batches, nor a counter of
    # a loop inside the step (`step` of `range(3)`), nor a name that counts no batches.
    found = _found(FIRST_BATCHES)
    few = ("cold", "first batches only (a few per pass over the data)")
    assert found[(7, "SL201")] == few
    assert found[(9, "SL201")] == few
    assert found[(11, "SL201")][0] == "hot"
    assert found[(17, "SL201")] == few
    assert found[(20, "SL201")][0] == "hot"
    assert found[(22, "SL201")][0] == "hot"

LEAVING_THE_LOOP = """
    import sys
    import torch
    def run_training(model, loader, opt, max_steps):
        step = 0
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            step += 1
            if step >= max_steps:
                save(loss.item())
                return
            if torch.isnan(loss).any():
                print(loss.item())
                sys.exit(1)
            if step == max_steps - 1:
                print(loss.max().item())
                break
            for k in range(3):
                if k == step:
                    print(loss.min().item())
                    break
            if step > 5:
                if step % 2:
                    continue
                print(loss.std().item())
                return
"""


def test_a_block_that_leaves_the_loop_over_batches_runs_once():
    # openvla's run_training: `if metrics.global_step >= self.max_steps:
    # self.save_checkpoint(..., loss.item()); return`, the final checkpoint. Likewise a block
    # that ends the program or breaks out of the loop over batches; not one that breaks out
    # of a loop inside the step, nor one that may `continue` the loop instead.
    found = _found(LEAVING_THE_LOOP)
    once = ("cold", "runs once (it leaves the loop over batches)")
    assert found[(12, "SL201")] == once
    assert found[(14, "SL202")][0] == "hot"  # (the test runs every step)
    assert found[(15, "SL201")] == once
    assert found[(18, "SL201")] == once
    assert found[(22, "SL201")][0] == "hot"
    assert found[(27, "SL201")][0] == "hot"


def test_a_block_that_runs_a_loop_of_steps_before_it_leaves_the_loop_is_not_once():
    # Pre-training, then `if step >= args.pretrain_steps:` fine-tunes over another loader
    # and returns: the block runs once, but each pass of its loop is a training step.
    source = """
        import torch
        def train(model, loader, finetune_loader, opt, args):
            for step, x in enumerate(loader):
                model(x.cuda()).sum().backward()
                opt.step()
                if step >= args.pretrain_steps:
                    for y in finetune_loader:
                        ft = model(y.cuda()).sum()
                        ft.backward()
                        opt.step()
                        print(ft.item())
                    return
        """
    assert _found(source)[(12, "SL201")][0] == "hot"


def test_a_continue_in_the_else_of_an_inner_loop_goes_on_with_the_loop_over_batches():
    # `for ... else: continue` continues the enclosing loop: the block may not leave it.
    source = """
        import torch
        def run(model, loader, done):
            for x in loader:
                loss = model(x.cuda()).sum()
                if done(loss):
                    for k in range(3):
                        if k == 2:
                            break
                    else:
                        continue
                    print(loss.item())
                    return
        """
    assert _found(source)[(12, "SL201")][0] == "hot"

INNER_LOOP_FIRST_PASS = """
    import torch
    class Decoder(torch.nn.Module):
        def forward(self, memory, max_len):
            for step in range(max_len):
                if step == 0:
                    print(memory.sum().item())
            for itr, layer in enumerate(self.layers):
                if itr == 0 and self.training:
                    print(memory.max().item())
            return memory
    def train(model, loader, opt):
        for batch_idx, (x, y) in enumerate(loader):
            loss = model(x, 5).sum()
            for k in range(3):
                if batch_idx == 0:
                    print(loss.item())
            loss.backward()
            opt.step()
"""


def test_the_first_pass_of_an_inner_loop_runs_on_every_step():
    # A decoder's `for step in range(max_len): if step == 0:` (RAFT's `for itr in range(iters)`)
    # counts the passes of a loop inside the step, not the steps: its first pass is every step.
    found = _found(INNER_LOOP_FIRST_PASS)
    assert found[(7, "SL201")] == ("hot", "`Decoder.forward`")
    assert found[(10, "SL201")] == ("hot", "`Decoder.forward`")
    # but the batch index of the loop around it still counts batches
    assert found[(17, "SL201")] == ("cold", "first batch only (once per pass over the data)")


def test_an_onnx_export_branch_is_not_an_eager_step():
    # dinov2 depther `if torch.onnx.is_in_onnx_export(): count_mat.cpu()`.
    source = """
        import torch
        class Depther(torch.nn.Module):
            def forward(self, x):
                count = (x > 0).float()
                if torch.onnx.is_in_onnx_export():
                    count = torch.from_numpy(count.cpu().numpy()).to(x.device)
                if torch.jit.is_tracing():
                    print(count.sum().item())
                return x / count
    """
    found = _found(source)
    tracing = ("cold", "TorchScript, tracing or ONNX export only (not an eager step)")
    assert found[(7, "SL201")] == tracing
    assert found[(9, "SL201")] == tracing


SHAPE_NUMBERS = """
    import torch
    def padding(filt: torch.Tensor):
        _, _, h, w = filt.shape
        if h % 2 == 0:
            raise IndexError(h)
        n, c = filt.shape[:2]
        if n:
            pass
        rows, cols = filt
        if rows.sum():
            pass
        return int(torch.div(h, 2)), int(torch.div(w, 2)), int(torch.div(filt, 2).sum())
    class Blur(torch.nn.Module):
        def forward(self, x):
            return padding(x)
"""


def test_names_unpacked_from_a_shape_are_python_ints_and_their_quotient_a_host_tensor():
    # composer blurpool `_, _, h, w = filt.shape; int(torch.div(h, 2))`.
    findings = check_source(textwrap.dedent(SHAPE_NUMBERS), "example.py", include_cold=True)
    assert [(f.line, f.column, f.code, f.context) for f in findings] == [
        (11, 8, "SL202", "hot"),  # unpacking a tensor gives tensors
        (13, 56, "SL201", "hot"),  # only the third: the quotient of a tensor
    ]


def test_a_training_script_with_an_optional_gui_is_no_demo(tmp_path):
    # SC-GS's (and Deformable-3D-Gaussians') train_gui.py is the project's training script: its
    # GUI is optional (`if args.gui: gui.render() else: gui.train(args.iterations)`), and the
    # headless loop reads the loss back on every step.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "train_gui.py").write_text(textwrap.dedent("""
        import torch
        class GUI:
            def __init__(self, model, optimizer):
                self.model, self.optimizer = model, optimizer
                self.ema_loss_for_log = 0.0
            def train(self, iters):
                for i in range(iters):
                    self.train_step()
            def train_step(self):
                loss = self.model(torch.randn(8, 3, device="cuda")).mean()
                loss.backward()
                self.optimizer.step()
                self.ema_loss_for_log = 0.4 * loss.item() + 0.6 * self.ema_loss_for_log
        if __name__ == "__main__":
            gui = GUI(torch.nn.Linear(3, 1).cuda(), None)
            if args.gui:
                gui.render()
            else:
                gui.train(args.iterations)
    """))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    found = [(Path(f.path).name, f.line, f.code, f.context) for f in findings]
    assert ("train_gui.py", 14, "SL201", "hot") in found


def test_export_conversion_and_demo_modules_are_cold_by_their_own_name(tmp_path):
    # segment-anything `segment_anything/utils/onnx.py` (SamOnnxModel, built only by
    # scripts/export_onnx_model.py to trace the model once).
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    model = textwrap.dedent("""
        import torch
        class Head(torch.nn.Module):
            def forward(self, x):
                return x.max().item()
    """)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    # A document-understanding model's ``pkg/doc/`` package (an ``__init__.py``: the program
    # imports it) is no documentation folder; Sphinx's ``docs/`` holds no package.
    for name in ("pkg/__init__.py", "pkg/utils/__init__.py", "pkg/doc/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    names = ("pkg/model.py", "pkg/utils/onnx.py", "pkg/utils/model_export.py", "pkg/utils/exporting.py",
             "pkg/convert_utils.py", "tools/convert_raw_llama_weights_to_neox.py", "tools/inspect_checkpoints.py",
             # Mask2Former's demo/predictor.py and demo_video/, a script's image_demo.py
             "demo/predictor.py", "demo_video/visualizer.py", "tools/image_demo.py", "pkg/democratic.py",
             # StyleTTS2's Demo/ folder and its Colab demo notebook
             "Demo/inference.py", "notebooks/StyleTTS2_Demo_LJSpeech.py",
             # but a package named like a demo may hold the program itself
             "ddpm_demo/model.py",
             # a model's visual encoder, not a visualization module
             "pkg/visual_encoder.py",
             # Cutie's interactive GUI and the click model only it runs; a GUI-less word
             "gui/ritm/model/is_model.py", "tools/run_gui.py", "pkg/guidance.py",
             # skrl's docs/source/snippets/ (literalinclude), beside a module named for docs
             "docs/source/snippets/model.py", "pkg/docstring_utils.py", "pkg/doc/encoder.py")
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(model)
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    tool = "a checkpoint conversion or inspection tool"  # gpt-neox tools/ckpts
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.code, f.context, f.why) for f in findings] == [
        ("Demo/inference.py", "SL201", "cold", "demo code"),
        ("ddpm_demo/model.py", "SL201", "hot", "`Head.forward`"),
        ("demo/predictor.py", "SL201", "cold", "demo code"),
        ("demo_video/visualizer.py", "SL201", "cold", "demo code"),
        ("docs/source/snippets/model.py", "SL201", "cold", "documentation code (its snippets and examples)"),
        ("gui/ritm/model/is_model.py", "SL201", "cold", "demo code"),
        ("notebooks/StyleTTS2_Demo_LJSpeech.py", "SL201", "cold", "demo code"),
        ("pkg/convert_utils.py", "SL201", "hot", "`Head.forward`"),
        ("pkg/democratic.py", "SL201", "hot", "`Head.forward`"),  # a word, not a demo
        ("pkg/doc/encoder.py", "SL201", "hot", "`Head.forward`"),  # a package named doc
        ("pkg/docstring_utils.py", "SL201", "hot", "`Head.forward`"),
        ("pkg/guidance.py", "SL201", "hot", "`Head.forward`"),
        ("pkg/model.py", "SL201", "hot", "`Head.forward`"),
        ("pkg/utils/exporting.py", "SL201", "hot", "`Head.forward`"),  # a word, not an export module's name
        ("pkg/utils/model_export.py", "SL201", "cold", "export code"),
        ("pkg/utils/onnx.py", "SL201", "cold", "export code"),
        ("pkg/visual_encoder.py", "SL201", "hot", "`Head.forward`"),
        ("tools/convert_raw_llama_weights_to_neox.py", "SL201", "cold", tool),
        ("tools/image_demo.py", "SL201", "cold", "demo code"),
        ("tools/inspect_checkpoints.py", "SL201", "cold", tool),
        ("tools/run_gui.py", "SL201", "cold", "demo code"),
    ]


def test_a_notebook_under_a_demo_folder_is_demo_code(tmp_path):
    # StyleTTS2's Demo/Inference_LJSpeech.ipynb: its cells alone cannot tell where it lives.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths
    from tests.notebook_helpers import notebook_of

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (tmp_path / "model.py").write_text("import torch\n")
    cells = ["import torch", "for text in texts:\n    durations = model(text)\n    n = int(durations.sum())"]
    for name in ("Demo/inference.ipynb", "notebooks/explore.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(notebook_of(*cells))
    found = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.cell, f.line, f.context, f.why) for f in found] == [
        ("Demo/inference.ipynb", 2, 3, "cold", "demo code"),
        ("notebooks/explore.ipynb", 2, 3, "unknown", ""),
    ]
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [Path(f.path).parent.name for f in shown] == ["notebooks"]


def test_a_file_cold_by_its_path_that_does_not_parse_gets_a_cold_notice(tmp_path):
    # Every finding of Demo/ and tests/ would be cold: that they could not be computed (a
    # Python 2 test fixture, a tutorial's shell cell) is cold too, shown with --include-cold.
    # A module nothing imports keeps its notice: it may be a script the user is writing.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths
    from tests.notebook_helpers import notebook_of

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (tmp_path / "model.py").write_text("import torch\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(2).cuda(\n")
    (tmp_path / "Demo").mkdir()
    (tmp_path / "Demo/broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "Demo/broken.ipynb").write_text(notebook_of("import torch", "def f(:\n    pass"))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/fixture.py").write_text("print 'hello'\n")
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).name, f.code, f.line, f.context) for f in shown] == [("train.py", "SL000", 2, None)]
    every = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    cold = [(Path(f.path).name, f.code, f.line, f.context, f.why) for f in every if f.context == "cold"]
    assert cold == [
        ("broken.ipynb", "SL000", 1, "cold", "demo code: its findings would be cold"),
        ("broken.py", "SL000", 1, "cold", "demo code: its findings would be cold"),
        ("fixture.py", "SL000", 1, "cold", "test or benchmark code: its findings would be cold"),
    ]


def test_plotting_modules_are_cold_unless_they_hold_the_model(tmp_path):
    # SlowFast's tools/visualization.py writes TensorBoard images; PLOT's trainers/plot.py
    # (a paper named PLOT) holds the prompt learner, its `forward` and its training step.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    drawing = textwrap.dedent("""
        import torch
        def add_predictions(writer, preds):
            writer.add_scalar("top", preds.max().item())
    """)
    model = textwrap.dedent("""
        import torch
        class CustomCLIP(torch.nn.Module):
            def forward(self, x):
                return x.max().item()
    """)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    files = {"tools/visualization.py": drawing, "pkg/utils/attention_plot.py": drawing,
             "pkg/utils/visualizer.py": drawing, "trainers/plot.py": model,
             # A word of a longer name (Attention-Gated-Networks), a directory of such tools
             # (deepcluster's visu/); a model there is still the model.
             "visualise_fmaps.py": drawing, "visu/activ_retrieval.py": drawing, "visu/net.py": model,
             "pkg/plotter.py": drawing,
             # `viz` as a word (ffjord's diagnostics/viz_cnf.py) and `visualize/`, `viz/`
             # directories (motion-diffusion-model); not a longer word (`vizier`).
             "diagnostics/viz_cnf.py": drawing, "visualize/joints2smpl/fit.py": drawing,
             "tools/viz/draw.py": drawing, "pkg/vizier.py": drawing,
             # A tool's own top-level helper named `forward` holds no model (deepcluster).
             "visu/retrieval.py": drawing + "def forward(model, layer, x):\n    return model(x).max().item()\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    plotting = "plotting or visualization code"
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.code, f.context, f.why) for f in findings] == [
        ("diagnostics/viz_cnf.py", 4, "SL201", "cold", plotting),
        ("pkg/plotter.py", 4, "SL201", "unknown", "not reached from any step of the project"),
        ("pkg/utils/attention_plot.py", 4, "SL201", "cold", plotting),
        ("pkg/utils/visualizer.py", 4, "SL201", "cold", plotting),
        ("pkg/vizier.py", 4, "SL201", "unknown", "not reached from any step of the project"),
        ("tools/visualization.py", 4, "SL201", "cold", plotting),
        ("tools/viz/draw.py", 4, "SL201", "cold", plotting),
        ("trainers/plot.py", 5, "SL201", "hot", "`CustomCLIP.forward`"),
        ("visu/activ_retrieval.py", 4, "SL201", "cold", plotting),
        ("visu/net.py", 5, "SL201", "hot", "`CustomCLIP.forward`"),
        ("visu/retrieval.py", 4, "SL201", "cold", plotting),
        ("visu/retrieval.py", 6, "SL201", "cold", plotting),
        ("visualise_fmaps.py", 4, "SL201", "cold", plotting),
        ("visualize/joints2smpl/fit.py", 4, "SL201", "cold", plotting),
    ]


LOOP_LOCAL_FILL = """
    import torch
    def extract_features(model, data_loader, use_cuda=True):
        features = scores = counts = None
        for samples, index in data_loader:
            feats = model(samples.cuda(non_blocking=True))
            if index.numel() and features is None:
                features = torch.zeros(len(data_loader.dataset), feats.shape[-1])
                if use_cuda:
                    features = features.cuda(non_blocking=True)
            if scores is None or feats.sum() > 0:
                scores = torch.zeros(3).cuda()
            cache = None
            if cache is None:
                cache = torch.zeros(3).cuda()
            if index.numel() and (counts is None or feats.sum() > 0):
                counts = torch.ones(3).cuda()
        return features, scores, counts
"""


def test_a_local_filled_when_still_none_inside_a_loop_runs_on_the_first_pass_only():
    # dino eval_knn.extract_features: the feature matrix is allocated on the first batch.
    found = _found(LOOP_LOCAL_FILL)
    assert found[(10, "SL403")] == ("cold", "first pass of its loop only (fills a local that is still None)")
    assert found[(12, "SL403")][0] == "hot"  # `or`: taken whenever the other test holds
    assert found[(15, "SL403")][0] == "hot"  # set back to None on every pass
    assert found[(17, "SL403")][0] == "hot"  # `is None` inside an `or` under the `and`


def test_a_throughput_benchmark_is_not_a_step():
    # Swin-Transformer main.py `throughput()`: times one batch, then returns.
    source = """
        import torch
        @torch.no_grad()
        def throughput(data_loader, model):
            for images, _ in data_loader:
                model(images.cuda(non_blocking=True))
                torch.cuda.synchronize()
                return
    """
    assert _found(source) == {(7, "SL501"): ("cold", "export, plotting or benchmarking code")}


def test_a_cache_rebuilt_in_the_else_branch_when_missing_or_too_small_runs_once_per_size():
    # gpt-neox AliBi: `if self.cached_seq_len is not None and self.cached_seq_len >= n: reuse`.
    source = """
        import torch
        class Alibi(torch.nn.Module):
            def forward(self, x):
                n = x.shape[-1]
                if self.cached_seq_len is not None and self.cached_seq_len >= n:
                    a = self.cached_matrix
                else:
                    a = torch.arange(n).to(x.device)
                    self.cached_seq_len = n
                    self.cached_matrix = a
                if self.cached_matrix is not None and self.training:
                    b = self.cached_matrix
                else:
                    b = torch.arange(n).to(x.device)
                    self.cached_matrix = b
                return a + b
    """
    assert _found(source) == {
        (9, "SL403"): ("cold", "once per size (a cache rebuilt when missing or too small)"),
        (15, "SL403"): ("hot", "`Alibi.forward`"),  # `self.training`: every training step rebuilds it
    }


REBOUND_EVERY_PASS = """
    import torch
    def train(model, loader, optimizer):
        hidden = None
        for input_ids, labels in loader:
            input_ids = input_ids.cuda(non_blocking=True)
            mask = model.mask_for(input_ids)
            if mask is None:
                mask = torch.ones(int(input_ids.max().item()))
            if labels is None:
                labels = input_ids.argmax().item()
            if hidden is None:
                hidden = torch.zeros(int(input_ids.sum().item()))
            out = model(input_ids, mask, hidden)
            if out.isnan().any():
                hidden, cell = None, None
"""


def test_a_local_the_loop_binds_again_is_not_filled_on_the_first_pass_only():
    # ``if x is None: x = ...`` runs on one pass only when nothing else in the loop binds
    # ``x``: a value taken from each batch (or the loop's own target) may be None every time.
    found = _found(REBOUND_EVERY_PASS)
    assert found[(9, "SL201")] == ("hot", "the loop over `loader` in `train`")  # `mask = model.mask_for(...)` each pass
    assert found[(11, "SL201")] == ("hot", "the loop over `loader` in `train`")  # the loop's target
    assert found[(13, "SL201")] == ("hot", "the loop over `loader` in `train`")  # reset through a tuple


def test_a_local_filled_on_the_first_pass_of_a_loop_inside_a_step_runs_every_step():
    # Once per loop is once per step when the loop is not the one over batches: a mask
    # built on the first layer of a forward (T5's ``position_bias``) is built every call.
    source = """
        import torch
        class Encoder(torch.nn.Module):
            def forward(self, x, lengths):
                mask = None
                for layer in self.layers:
                    if mask is None:
                        max_len = int(lengths.max())
                        mask = torch.arange(max_len, device=x.device)[None] < lengths[:, None]
                    x = layer(x, mask)
                return x
    """
    assert _found(source) == {(8, "SL201"): ("hot", "`Encoder.forward`")}


def test_a_cache_rebuilt_in_the_else_branch_when_its_key_changes_is_not_once_per_size():
    # ``>=``: the cache only grows, so it is rebuilt once per new largest size. ``==`` on a
    # key that changes every step (the weight's version after each optimizer step, the
    # step itself) rebuilds it every step.
    source = """
        import torch
        class StandardizedLinear(torch.nn.Module):
            def forward(self, x, step):
                if self.cached is not None and self.cached_version == self.weight._version:
                    w = self.cached
                else:
                    w = self.weight / self.weight.std().item()
                    self.cached = w
                    self.cached_version = self.weight._version
                if self.table is not None and x.shape[0] < self.table_len:
                    t = self.table
                else:
                    t = torch.arange(int(x.max().item()))
                    self.table, self.table_len = t, x.shape[0]
                if self.table is not None and self.table_len < x.shape[0]:
                    t = self.table
                else:
                    t = torch.arange(int(x.min().item()))
                    self.table = t
                return x @ w + t
    """
    assert _found(source) == {
        (8, "SL201"): ("hot", "`StandardizedLinear.forward`"),
        (14, "SL201"): ("cold", "once per size (a cache rebuilt when missing or too small)"),
        (19, "SL201"): ("hot", "`StandardizedLinear.forward`"),  # reused while smaller: rebuilt once it is not
    }


def test_a_flag_the_file_sets_again_outside_the_constructor_is_not_one_shot():
    # fairseq FP16Optimizer: ``backward`` sets ``self._needs_sync = True`` every step and the
    # grads copy clears it: the block runs every step. dinov2's flag is set in __init__ only.
    source = """
        import torch
        class Trainer:
            def __init__(self):
                self.warmed = True
                self.grads_pending = False
            def backward(self, loss):
                loss.backward()
                self.grads_pending = True
            def step(self):
                if self.grads_pending:
                    torch.cuda.synchronize()
                    self.grads_pending = False
                if self.warmed:
                    torch.cuda.synchronize()
                    self.warmed = False
            def train(self, loader):
                for batch in loader:
                    self.backward(self.model(batch.cuda(non_blocking=True)))
                    self.step()
    """
    hot = ("hot", "the loop over `loader` in `Trainer.train` -> `Trainer.step`")
    assert _found(source) == {(12, "SL501"): hot, (15, "SL501"): ("cold", "once (a one-shot flag the block clears)")}


def test_a_tracing_check_or_an_eager_condition_is_an_eager_branch():
    # pytorch_geometric scatter: ``if ... or is_in_onnx_export() or not src.is_cuda:`` is the
    # eager path whenever the other clause holds; only every clause a tracing check is not.
    source = """
        import torch
        class Pool(torch.nn.Module):
            def forward(self, src, keep_vars=False):
                if torch.onnx.is_in_onnx_export() or not self.training:
                    print(src.sum().item())
                if torch.jit.is_tracing() or keep_vars:
                    print(src.max().item())
                if torch.jit.is_scripting() or torch.onnx.is_in_onnx_export():
                    print(src.min().item())
                return src
    """
    assert _found(source) == {
        (6, "SL201"): ("hot", "`Pool.forward`"),
        (8, "SL201"): ("hot", "`Pool.forward`"),
        (10, "SL201"): ("cold", "TorchScript, tracing or ONNX export only (not an eager step)"),
    }


def test_a_number_a_tensor_was_added_to_is_a_tensor():
    # ``loss = 0; loss += criterion(...)`` makes ``loss`` a device tensor: its quotient by a
    # number is no host tensor (``torch.div`` of two Python numbers is), and reading it syncs.
    source = """
        import torch
        def train(model, heads, criterion, loader, optimizer):
            for x, y in loader:
                feats = model(x.cuda(non_blocking=True))
                loss = 0
                for head in heads:
                    loss += criterion(head(feats), y.cuda(non_blocking=True))
                loss = torch.div(loss, len(heads))
                loss.backward()
                print(loss.item())
    """
    assert _found(source) == {(11, "SL201"): ("hot", "the loop over `loader` in `train`")}


def test_a_gradient_accumulation_boundary_is_the_optimizer_step_not_a_logging_interval():
    # ``(i + 1) % accumulation_steps == 0`` (ConvNeXt's ``update_freq``, MAE's ``accum_iter``)
    # guards the optimizer step itself: it runs on every training step.
    source = """
        import torch
        def train(model, criterion, loader, optimizer, args, accumulation_steps=4):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                if (i + 1) % accumulation_steps == 0:
                    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    if torch.isfinite(norm):
                        optimizer.step()
                if i % args.accum_freq == 0:
                    print(norm.item())
                if i % args.grad_accum == 0 and i % args.log_every == 0:
                    print(loss.item())
    """
    assert _found(source) == {
        (9, "SL202"): ("hot", "the loop over `loader` in `train`"),
        (12, "SL201"): ("hot", "the loop over `loader` in `train`"),  # ``freq`` of the accumulation
        (14, "SL201"): ("cold", "periodic (logging every N steps)"),
    }


def test_a_module_named_tracing_holds_checks_eager_steps_call(tmp_path):
    # detectron2 ``utils/tracing.py``: ``assert_fx_safe``, which ``ROIPooler.forward`` calls
    # every step, skips its check only under a tracer. A ``tracing/`` folder is export code;
    # a module of that name is not.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    files = {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "",
        "pkg/utils/tracing.py": """
            import torch

            def assert_fx_safe(condition, message):
                if torch.jit.is_scripting() or torch.jit.is_tracing():
                    return
                assert condition.item(), message
        """,
        "pkg/model.py": """
            import torch
            from pkg.utils.tracing import assert_fx_safe

            class Pooler(torch.nn.Module):
                def forward(self, x, boxes):
                    assert_fx_safe((boxes[:, 2] >= boxes[:, 0]).all(), "inverted boxes")
                    return x
        """,
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    findings = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.code, f.context, f.why) for f in findings] == [
        ("pkg/utils/tracing.py", 7, "SL201", "hot", "`Pooler.forward` -> `assert_fx_safe`"),
    ]


def test_a_cache_rebuilt_without_growing_the_size_it_is_checked_against_is_rebuilt_every_time():
    # ``self.max_len`` is never raised: every input longer than it rebuilds the table.
    source = """
        import torch
        class Positions(torch.nn.Module):
            def forward(self, x):
                n = x.shape[1]
                if self.table is not None and self.max_len >= n:
                    t = self.table[:n]
                else:
                    t = torch.arange(int(x.max().item()))
                    self.table = t
                return x + t
    """
    assert _found(source) == {(9, "SL201"): ("hot", "`Positions.forward`")}


def test_loss_names_are_read_word_by_word():
    # DiT's `LossAwareSampler.update_with_local_losses` (never called) was a "loss" root.
    from synclint.project.loss_names import is_loss_class, is_loss_function

    assert [is_loss_function(n) for n in ("compute_loss", "bbox_loss", "_loss", "criterion", "giouloss",
                                          "update_with_local_losses", "log_loss", "lossless_compress")] == [
        True, True, True, True, True, False, False, False]
    assert [is_loss_class(n) for n in ("DiceLoss", "SetCriterion", "FocalLossV2", "CrossEntropyLoss2d",
                                       "FastRCNNLossComputation", "LossAwareSampler", "LossMeter")] == [
        True, True, True, True, True, False, False]
    source = """
        import torch
        class LossAwareSampler:
            def update_with_local_losses(self, local_ts, local_losses):
                batch_sizes = [torch.tensor([0], dtype=torch.int32, device=local_ts.device)]
                return max(x.item() for x in batch_sizes)
        class DiceLoss(torch.nn.Module):
            def forward(self, x):
                return x.sum().item()
    """
    found = _found(source)
    assert found[(5, "SL403")][0] == "unknown"  # no longer a "loss" root
    assert found[(9, "SL201")][0] == "hot"


def test_a_tick_counter_is_a_schedule_and_a_train_flag_of_forward_is_a_python_bool():
    # edm `cur_tick % snapshot_ticks == 0`; DiT `LabelEmbedder.forward(self, labels, train)`.
    source = """
        import torch
        def training_loop(net, loader, snapshot_ticks=50, cur_tick=0):
            for images in loader:
                loss = net(images).sum()
                loss.backward()
                if snapshot_ticks is not None and cur_tick % snapshot_ticks == 0:
                    print(loss.item())
                cur_tick += 1
        class LabelEmbedder(torch.nn.Module):
            def forward(self, labels, train):
                if train and self.dropout_prob > 0:
                    labels = labels + 1
                return labels
    """
    assert _found(source) == {(8, "SL201"): ("cold", "periodic (logging every N steps)")}


def test_a_method_no_tensor_has_says_the_receiver_was_not_a_tensor():
    # llm-foundry adaptive_lion: `if state["moment_tracker"].insert_observation(moment_norm):`
    # (optimizer state entries are taken for tensors; this one is an outlier detector).
    source = """
        import math
        import torch
        class Lion(torch.optim.Optimizer):
            def step(self):
                for p in self.params:
                    state = self.state[p]
                    moment_norm = math.sqrt(torch.linalg.vector_norm(state["exp_avg"]) ** 2)
                    if state["moment_tracker"].insert_observation(moment_norm):
                        pass
                    if state["exp_avg"].abs().max() > 1:
                        pass
    """
    assert {key: context for key, (context, _why) in _found(source).items()} == {
        (8, "SL201"): "hot",  # math.sqrt reads the norm back
        (11, "SL202"): "hot",  # a tensor method: still a tensor
    }


def test_a_method_called_on_an_attribute_of_unknown_class_resolves_to_the_one_method_of_that_name(tmp_path):
    # improved-diffusion: TrainLoop.forward_backward calls
    # self.schedule_sampler.update_with_local_losses(...) (the sampler a constructor argument):
    # hot there; DiT ships the same sampler and never calls it.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    sampler = textwrap.dedent("""
        import torch
        class LossAwareSampler:
            def update_with_local_losses(self, local_ts, local_losses):
                sizes = [torch.tensor([0], dtype=torch.int32, device=local_ts.device)]
                return max(x.item() for x in sizes)
    """)
    trainer = textwrap.dedent("""
        class TrainLoop:
            def __init__(self, model, data, schedule_sampler=None):
                self.model, self.data, self.schedule_sampler = model, data, schedule_sampler
            def train_step(self, batch):
                losses = self.model(batch)
                self.schedule_sampler.update_with_local_losses(batch, losses)
    """)
    for project, files in (("used", {"sampler.py": sampler, "train.py": trainer}), ("unused", {"sampler.py": sampler})):
        for name, text in files.items():
            (tmp_path / project / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / project / name).write_text(text)
    (tmp_path / "unused" / "train.py").write_text("def train_step(model, batch):\n    return model(batch).sum()\n")
    for project, expected in (("used", "hot"), ("unused", None)):
        root = tmp_path / project
        found = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False))
        assert [(Path(f.path).name, f.line, f.code, f.context) for f in found] == (
            [("sampler.py", 5, "SL403", "hot"), ("sampler.py", 6, "SL201", "hot")] if expected else []
        )


FIRST_BATCH_FLAG = """
    import torch
    def generate(self, model, loader, device):
        lp = self.log_progress("generate", loader, total=len(loader))
        first_batch = True
        for batch in lp:
            x = batch.to(device)
            wm = model(x)
            y = batch.cpu()
            if first_batch and self.is_rank_zero():
                dump(wm.cpu())
            first = True
            if first:
                dump(wm.cpu())
            first = False
            first_batch = False
        return wm
    def evaluate(self, model, loader):
        first = True
        for i, batch in enumerate(loader):
            wm = model(batch.cuda())
            if first:
                dump(wm.cpu())
            first = i == 0
        warm = True
        for batch in loader:
            wm = model(batch.cuda())
            if warm:
                dump(wm.cpu())
                continue
            warm = False
"""


def test_a_block_the_loop_over_batches_clears_the_flag_of_runs_on_its_first_pass():
    # audiocraft's WatermarkSolver.generate: spectrograms of the first batch only; and the
    # loop over a progress wrapper of the loader shows the batch is on the host (it moves it).
    found = _found(FIRST_BATCH_FLAG)
    assert (9, "SL201") not in found  # `batch.cpu()`: the batch the loop moved is a host tensor
    assert found[(11, "SL201")] == ("cold", "first pass of its loop only (a flag the loop clears)")
    assert found[(14, "SL201")][0] == "hot"  # set true again on every pass
    assert found[(23, "SL201")][0] == "hot"  # set to another value than false
    assert found[(29, "SL201")][0] == "hot"  # a `continue` skips the clearing


BOUNDED_PRINTS = """
    import torch
    def eval_split(model, loader, factors):
        mistakes_printed_already = 0
        shown = 0
        for b, (x, y) in enumerate(loader):
            pred = model(x.cuda())
            correct = (pred == y.cuda()).cpu()
            for i in range(x.size(0)):
                if not correct[i] and mistakes_printed_already < 5:
                    mistakes_printed_already += 1
                    print(pred[i].sum().item())
            if shown < 3:
                shown += 1
                print(pred.sum().item())
            shown = 0
        return pred
    def train(model, loader):
        warmed = 0
        for x in loader:
            loss = model(x.cuda())
            if warmed < 100000:
                warmed += 1
                print(loss.item())
"""


def test_a_block_that_increments_the_counter_it_is_bounded_by_runs_a_few_times_per_pass():
    # minGPT's adder eval_split: print at most 5 mistakes per pass over the batches.
    found = _found(BOUNDED_PRINTS)
    assert found[(12, "SL201")] == ("cold", "at most 5 times per pass over the batches (a counter the block increments)")
    assert found[(15, "SL201")][0] == "hot"  # the loop sets the counter again on every pass
    # a bound larger than a handful of batches may cover the whole pass (a warm-up counter)
    assert found[(24, "SL201")][0] == "hot"


REARMED_BY_A_CLOSURE = """
    import torch
    def train(model, loader):
        first, shown = True, 0
        def next_epoch():
            nonlocal first, shown
            first, shown = True, 0
        for x in loader:
            loss = model(x.cuda())
            if first:
                print(loss.item())
            first = False
            if shown < 3:
                shown += 1
                print(loss.sum().item())
            next_epoch()
"""


def test_a_flag_or_counter_a_nested_function_sets_again_is_not_first_pass_only():
    # ``nonlocal``: the call in the loop sets the flag and the counter again on every batch.
    found = _found(REARMED_BY_A_CLOSURE)
    assert found[(11, "SL201")] == ("hot", "the loop over `loader` in `train`")
    assert found[(15, "SL201")] == ("hot", "the loop over `loader` in `train`")


NON_FINITE = """
    import torch
    class Loss(torch.nn.Module):
        def forward(self, scores, target, step):
            loss = (scores - target).pow(2).mean()
            if torch.isnan(loss):
                print(f"diverged: {loss}")
            if not torch.isfinite(scores).all() and step > 0:
                torch.save(scores.cpu(), "scores.pth")
            if torch.isfinite(loss):
                pass
            else:
                print(loss.item())
            if torch.isnan(loss).any() or step > 3:
                print(loss.item())
            if torch.isfinite(loss).all() and step > 0:
                pass
            else:
                print(loss.item())
            if target.isinf().any():
                target = torch.nan_to_num(target)
            if torch.isfinite(loss):
                print(loss.item())
            return loss
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (6, "hot"),  # the check itself runs every step
        (7, "cold"),  # taken only on a NaN loss, raising or not
        (8, "hot"),
        (9, "cold"),  # `not isfinite(...).all() and ...`: false on finite data
        (13, "cold"),  # the `else` of a check that is true on finite data
        (15, "hot"),  # `... or step > 3` runs on ordinary steps too
        (19, "hot"),  # the `else` of `isfinite(...) and step > 0`: ordinary steps with step == 0
        (23, "hot"),  # the branch taken on finite data is the ordinary step
    ],
)
def test_a_branch_taken_only_on_nan_or_infinite_values_is_rare(line, expected):
    assert _at(NON_FINITE, line) == {expected}


def test_a_non_finite_branch_says_why():
    assert _found(NON_FINITE)[(7, "SL201")] == ("cold", "only on NaN or infinite values (handling a diverged step)")


def test_epoch_and_phase_hooks_run_once_per_epoch_not_per_step():
    source = """
        import torch
        class Memory(torch.nn.Module):
            def cluster(self):
                return self.bank.argmax(1).cpu()

            def forward(self, x):
                return x @ self.bank.t()

        class Model(torch.nn.Module):
            def on_train_epoch_end(self):
                print(self.total.item())

            def on_phase_start(self, task):
                task.memory.cluster()

            def on_train_batch_end(self, outputs):
                print(outputs.sum().item())

            def validation_epoch_end(self, outputs):
                print(torch.stack(outputs).mean().item())

            def training_step(self, batch, i):
                self.on_epoch_end()
                return batch.sum()

            def on_epoch_end(self):
                print(self.total.item())
        """
    found = _found(source)
    HOOK = "epoch or phase hook code (runs per epoch, phase or run, not per step)"
    assert found[(5, "SL201")] == ("cold", "called only from epoch or phase hook code")
    assert found[(12, "SL201")] == ("cold", HOOK)
    assert found[(18, "SL201")] == ("unknown", "")  # a per-batch hook runs every step
    assert found[(21, "SL201")] == ("cold", HOOK)
    # a step that calls the hook itself makes it a step's code: the name is only a convention
    assert found[(28, "SL201")] == ("hot", "`Model.training_step` -> `Model.on_epoch_end`")


def test_a_loop_over_batches_in_an_epoch_hook_is_an_evaluation_pass():
    # A kNN or validation pass run from an epoch hook: the hook runs once per epoch, but
    # each pass of its loop over batches is an inference step, like the helper it calls.
    source = """
        import torch
        class KnnEval:
            def on_validation_epoch_end(self, trainer, pl_module):
                correct = 0
                for images, labels in self.val_loader:
                    feats = pl_module(images)
                    correct += (feats.argmax(1) == labels).sum().item()
                    self.update(feats)
                print(self.total.item())

            def update(self, feats):
                print(feats.norm().item())
        """
    found = _found(source)
    loop = "the loop over `self.val_loader` in `KnnEval.on_validation_epoch_end`"
    assert found[(8, "SL201")] == ("hot", loop)
    assert found[(13, "SL201")] == ("hot", f"{loop} -> `KnnEval.update`")
    assert found[(10, "SL201")] == ("cold", "after the loop over batches (a summary that runs once)")


NON_FINITE_PYTHON_BOOL = """
    import math
    import torch
    class Loss(torch.nn.Module):
        def forward(self, scores, target, clip):
            loss = (scores - target).pow(2).mean()
            if ~torch.isfinite(loss).item():
                print(loss.item())
            if ~math.isnan(clip):
                print(loss.item())
            if ~torch.isfinite(loss):
                print(loss.item())
            return loss
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # ``~`` of a Python bool is bitwise (``~True == -2``, ``~False == -1``): always true
        (8, "hot"),
        (10, "hot"),
        (12, "cold"),  # ``~`` of a bool tensor is the logical not
    ],
)
def test_bitwise_not_of_a_python_bool_is_always_true(line, expected):
    assert _at(NON_FINITE_PYTHON_BOOL, line) == {expected}


INFINITY_AS_A_SETTING = """
    import math
    import torch
    import torch.distributed as dist
    def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
        grads = [p.grad for p in parameters if p.grad is not None]
        total_norm = torch.nn.utils.get_total_norm(grads, norm_type)
        if math.isinf(norm_type):
            print(total_norm.item())
        else:
            dist.all_reduce(total_norm)
        if not math.isfinite(max_norm):
            print(total_norm.item())
        return total_norm

    class Clipper(torch.nn.Module):
        def forward(self, total_norm):
            if math.isinf(self.norm_type):
                print(total_norm.item())
            if math.isnan(self.last):
                print(total_norm.item())

    def train(model, loader, opt, clipper):
        for batch in loader:
            model(batch).backward()
            clip_grad_norm_(model.parameters(), 1.0, norm_type=float("inf"))
            clipper(model.weight)
            opt.step()
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # ``norm_type=inf`` (the infinity norm) and ``max_norm=inf`` (no clipping) are choices
        # the caller makes, taken every step: not a diverged value
        (9, "hot"),
        (13, "hot"),
        (19, "hot"),
        (21, "cold"),  # NaN is no setting: a NaN stored value is a diverged one
    ],
)
def test_infinity_in_a_parameter_or_attribute_is_a_setting_not_a_diverged_value(line, expected):
    assert _at(INFINITY_AS_A_SETTING, line) == {expected}


NAN_AS_MISSING_LABELS = """
    import torch
    def masked_loss(criterion, output, target):
        if torch.isnan(target).any():
            labelled = ~torch.isnan(target)
            output = output[labelled]
            target = target[labelled]
        if torch.isinf(output).any():
            output = output[torch.isfinite(output)]
        if torch.isnan(output).any():
            output = torch.where(torch.isfinite(output), output, 0.0)
            print(output.sum().item())
        return criterion(output, target)

    def train(model, loader, criterion):
        for x, y in loader:
            masked_loss(criterion, model(x), y).backward()
    """


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Keeping the finite elements (``x[~torch.isnan(x)]``) treats NaN as missing data
        # (unlabelled tasks of a multi-task set): the ordinary step, not a diverged one
        (6, "hot"),
        (7, "hot"),
        (9, "hot"),
        (12, "cold"),  # replacing the bad values and carrying on handles a diverged step
    ],
)
def test_a_branch_that_keeps_the_finite_elements_treats_nan_as_missing_data(line, expected):
    assert _at(NAN_AS_MISSING_LABELS, line) == {expected}


PERIODIC_EVALUATION = """
    import torch


    def nms(prediction, conf_thres=0.25, classes=None):
        keep = prediction[prediction[:, 4] > conf_thres]
        if classes is not None:
            keep = keep[(keep[:, 5:6] == torch.tensor(classes, device=keep.device)).any(1)]
        return keep


    def evaluate(model, loader, classes):
        for images in loader:
            nms(model(images.cuda()), conf_thres=0.1)
        for images in loader:
            nms(model(images.cuda()), classes={classes})


    def train(model, loader, optimizer):
        for step, images in enumerate(loader):
            optimizer.zero_grad()
            model(images.cuda()).sum().backward()
            optimizer.step()
            if step % 1000 == 0:
                evaluate(model, loader, [0])
    """


@pytest.mark.parametrize(("passed", "expected"), [("None", "cold"), ("classes", "hot")])
def test_the_loops_of_an_evaluation_called_every_n_steps_decide_what_the_step_passes(passed, expected):
    # PyTorch-YOLOv3: `_evaluate` runs every N epochs, so it is cold by its callers, but its
    # loop over batches is a step of its own (each pass an inference step, as the held-out
    # judges read evaluation loops: taking them for periodic work lost 17 judged-TRUE rows),
    # and none of that loop's calls passes `classes`.
    found = _found(PERIODIC_EVALUATION.replace("{classes}", passed))
    assert found[(6, "SL103")][0] == "hot"
    assert {found[(8, "SL103")][0], found[(8, "SL403")][0]} == {expected}


SCHEDULE_FLAGS = """
    import torch


    def step(self, loss, x):
        apply_gp = self.steps % 4 == 0
        apply_pl = not self.no_pl and self.steps > 5000 and self.steps % 32 == 0
        if apply_gp:
            x.norm().item()
        if apply_pl and x is not None:
            x.sum().item()
        if not apply_gp:
            loss.item()
        redone = self.steps % 4 == 0
        redone = redone or self.force
        if redone:
            loss.mean().item()
        grown = self.steps % 8 == 0
        grown |= self.force
        if grown:
            loss.max().item()
        early = self.it % 10 == 0 and self.steps < 2000
        late = self.steps % 2000 == 0
        if early or late:
            loss.min().item()
        if early or self.force:
            loss.std().item()
        return loss
    """


@pytest.mark.parametrize(("line", "periodic"),
                         [(9, True), (11, True), (13, False), (17, False), (21, False), (25, True), (27, False)])
def test_a_local_bound_to_a_schedule_guards_periodic_code(line, periodic):
    # lucidrains/stylegan2-pytorch: `apply_gradient_penalty = self.steps % 4 == 0`, then
    # `if apply_gradient_penalty:` around the penalty and its `.item()`. monodepth2 logs
    # `if early_phase or late_phase:`, two schedules (`or self.force` may run every step).
    found = _found(SCHEDULE_FLAGS)[(line, "SL201")]
    assert (found == ("cold", "periodic (logging every N steps)")) is periodic


INTERACTIVE_LOOPS = """
    import cv2
    import matplotlib.pyplot as plt
    import torch


    def show(model, loader):
        for data in loader:
            scores = model(data.cuda())
            keep = scores.cpu() > 0.5
            cv2.imshow("img", keep.numpy())
            cv2.waitKey(0)


    def plot(model, loader):
        for data in loader:
            plt.imshow(model(data.cuda()).cpu())
            plt.show()


    def stream(model, loader):
        for data in loader:
            cv2.imshow("img", model(data.cuda()).cpu().numpy())
            cv2.waitKey(1)


    def batch_plots(model, loader):
        for data in loader:
            plt.imshow(model(data.cuda()).cpu())
            plt.show(block=False)
    """


@pytest.mark.parametrize(("line", "expected"), [(10, "cold"), (17, "cold"), (23, "hot"), (29, "hot")])
def test_a_loop_that_waits_for_a_person_on_every_pass_is_a_demo(line, expected):
    # yhenon/pytorch-retinanet's visualize.py: each batch's detections drawn, then
    # `cv2.waitKey(0)`; a live stream (`waitKey(1)`) or a non-blocking plot keeps going.
    assert _at(INTERACTIVE_LOOPS, line) == {expected}


SOMETIMES_INTERACTIVE_LOOPS = """
    import cv2
    import matplotlib.pyplot as plt
    import torch


    def detect(model, loader, args):
        for data in loader:
            keep = model(data.cuda()).cpu() > 0.5
            if args.show:
                cv2.imshow("img", keep.numpy())
                cv2.waitKey(0)


    def detect_safely(model, loader):
        for data in loader:
            keep = model(data.cuda()).cpu() > 0.5
            try:
                cv2.imwrite("out.png", keep.numpy())
            except OSError:
                input("disk full? press enter")


    def detect_later(model, loader, callbacks):
        for data in loader:
            keep = model(data.cuda()).cpu() > 0.5
            callbacks.append(lambda: plt.show())


    def step_through(model, loader):
        for data in loader:
            keep = model(data.cuda()).cpu() > 0.5
            for image in keep:
                cv2.imshow("img", image.numpy())
                if cv2.waitKey() == ord("q"):
                    break
    """


@pytest.mark.parametrize(("line", "expected"), [(9, "hot"), (17, "hot"), (26, "hot"), (32, "cold")])
def test_a_loop_waits_for_a_person_only_on_every_pass(line, expected):
    # A wait under `if args.show:`, in an error handler or in a function the loop only
    # defines leaves the other passes (the default run) going at full speed.
    assert _at(SOMETIMES_INTERACTIVE_LOOPS, line) == {expected}


NON_BLOCKING_PLOTS = """
    import matplotlib
    import matplotlib.pyplot as plt
    import torch

    {setup}


    def train(model, loader):
        for data in loader:
            plt.plot(model(data.cuda()).cpu())
            plt.show()
    """


@pytest.mark.parametrize(
    ("setup", "expected"),
    [("", "cold"), ("plt.ion()", "hot"), ("matplotlib.interactive(True)", "hot"), ('matplotlib.use("Agg")', "hot"),
     ('plt.switch_backend("agg")', "hot"), ('matplotlib.use("TkAgg")', "cold")],
)
def test_plt_show_waits_only_with_a_gui_backend_out_of_interactive_mode(setup, expected):
    # `plt.show()` returns at once in interactive mode (`plt.ion()`: a live training plot)
    # and does nothing with a non-GUI backend (`matplotlib.use("Agg")`).
    assert _at(NON_BLOCKING_PLOTS.replace("{setup}", setup), 11) == {expected}


EVALUATION_FROM_TESTS = """
    import torch


    def nms(prediction, conf_thres=0.25, classes=None):
        keep = prediction[prediction[:, 4] > conf_thres]
        if classes is not None:
            keep = keep[(keep[:, 5:6] == torch.tensor(classes, device=keep.device)).any(1)]
        return keep


    def evaluate(model, loader):
        for images in loader:
            nms(model(images.cuda()), classes=[0])


    def test_evaluate(model, loader):
        evaluate(model, loader)


    def train(model, loader, optimizer):
        for images in loader:
            optimizer.zero_grad()
            nms(model(images.cuda())).sum().backward()
            optimizer.step()
    """


def test_the_loops_of_a_function_only_tests_call_are_not_the_steps():
    # Unlike an evaluation run every N steps, a helper only the tests call is no part of
    # the program: its loop's `classes=[0]` says nothing of what the step passes.
    found = _found(EVALUATION_FROM_TESTS)
    assert found[(6, "SL103")][0] == "hot"
    assert {found[(8, "SL103")][0], found[(8, "SL403")][0]} == {"cold"}


def test_plt_show_in_a_notebook_does_not_wait():
    # A kernel's backend (inline, widget) draws the figure and returns: a notebook's training
    # loop that plots its loss on every pass still syncs on every pass.
    notebook = notebook_of(
        "import matplotlib.pyplot as plt\nimport torch\n",
        "def train(model, loader, opt):\n    for x in loader:\n        loss = model(x.cuda()).sum()\n"
        "        plt.plot(loss.item())\n        plt.show()\n        input('next?')\n",
        "def run(model, loader, opt):\n    for x in loader:\n        loss = model(x.cuda()).sum()\n"
        "        plt.plot(loss.item())\n        plt.show()\n",
    )
    found = {(f.cell, f.line, f.code): f.context for f in check_notebook_source(notebook, "t.ipynb", include_cold=True)}
    assert found == {(2, 3, "SL401"): "cold", (2, 4, "SL201"): "cold", (3, 3, "SL401"): "hot", (3, 4, "SL201"): "hot"}


ACCUMULATION_BOUNDARIES = """
    import torch


    def train(model, loader, optimizer, scaler, args):
        for g_it, batch in enumerate(loader):
            loss = model(batch.cuda())
            scaler.scale(loss).backward()
            stepping = (g_it + 1) % args.ac == 0
            if stepping:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
                scaler.step(optimizer)
                optimizer.zero_grad()
            if (g_it + 1) % args.ac == 0:
                total = loss.item()
                optimizer.step()
            if g_it % 100 == 0:
                print(loss.item())
    """


@pytest.mark.parametrize(("line", "periodic"), [(11, False), (15, False), (18, True)])
def test_a_schedule_that_steps_the_optimizer_is_the_training_step(line, periodic):
    # VAR: `stepping = (g_it + 1) % args.ac == 0` is a gradient accumulation boundary whatever
    # its divisor is called: the block steps the optimizer, which is the training step.
    found = _found(ACCUMULATION_BOUNDARIES)[(line, "SL201")]
    assert (found == ("cold", "periodic (logging every N steps)")) is periodic


LAZY_REGULARISATION = """
    import torch


    def train(generator, loader, g_optim, args):
        for i, x in enumerate(loader):
            generator(x.cuda()).mean().backward()
            g_optim.step()
            g_regularize = i % args.g_reg_every == 0
            if g_regularize:
                generator(x.cuda()).pow(2).mean().backward()
                g_optim.step()
                print(generator.mean_path_length.item())
            if i % args.d_reg_every == 0:
                generator(x.cuda()).abs().mean().backward()
                g_optim.step()
                d_optim.step()
                print(generator.r1.item())
    """


@pytest.mark.parametrize(("line", "periodic"), [(13, True), (18, False)])
def test_a_schedule_that_steps_an_optimizer_stepped_on_every_step_again_is_periodic(line, periodic):
    # GPEN and rosinality's StyleGAN2: `g_optim.step()` on every step, then `if g_regularize:`
    # (`i % args.g_reg_every == 0`) regularises and steps it again: lazy regularisation every
    # 4th step, not the gradient accumulation boundary. A block that also steps an optimizer
    # the step did not (`d_optim`) may be that boundary: it stays hot.
    found = _found(LAZY_REGULARISATION)[(line, "SL201")]
    assert (found == ("cold", "periodic (logging every N steps)")) is periodic


def test_a_schedule_that_steps_an_optimizer_only_cleared_on_every_step_is_the_training_step():
    # `opt.zero_grad()` on every step clears gradients, it steps nothing: the block that
    # steps `opt` behind `i % args.update_every == 0` is the only step, the training step.
    source = """
        import torch
        def train(model, loader, opt, args):
            for i, x in enumerate(loader):
                opt.zero_grad()
                model(x.cuda()).mean().backward()
                update = i % args.update_every == 0
                if update:
                    opt.step()
                    print(model.loss.item())
        """
    assert _found(source)[(10, "SL201")][0] == "hot"


def test_a_schedule_that_steps_another_optimizer_through_the_scaler_is_the_training_step():
    # `scaler.step(d_optim)` on every step steps `d_optim`, not `g_optim`: the block behind
    # `i % args.g_every == 0` that runs `scaler.step(g_optim)` is the generator's step.
    source = """
        import torch
        def train(G, D, loader, g_optim, d_optim, scaler, args):
            for i, x in enumerate(loader):
                scaler.scale(D(x.cuda()).mean()).backward()
                scaler.step(d_optim)
                scaler.update()
                if i % args.g_every == 0:
                    scaler.scale(G(x.cuda()).mean()).backward()
                    scaler.step(g_optim)
                    scaler.update()
                    print(G.loss.item())
                if i % args.d_reg_every == 0:
                    scaler.scale(D(x.cuda()).pow(2).mean()).backward()
                    scaler.step(d_optim)
                    print(D.r1.item())
        """
    found = _found(source)
    assert found[(12, "SL201")][0] == "hot"
    assert found[(16, "SL201")] == ("cold", "periodic (logging every N steps)")

FIRST_BATCH_ONLY = """
    import torch


    def evaluate(generator, eval_loader):
        for batch_idx, (x, y) in enumerate(eval_loader):
            x = x.cuda(0)
            x = x[:1]
            break
        return generator(x).cpu()


    def train(generator, loader, eval_loader, opt):
        for step, (x, y) in enumerate(loader):
            generator(x.cuda()).mean().backward()
            opt.step()
            if step % 1000 == 0:
                evaluate(generator, eval_loader)


    def skips(generator, loader):
        for x in loader:
            if x is None:
                continue
            print(generator(x.cuda()).sum().item())
            break


    def retries(generator, loader):
        for x in loader:
            while True:
                print(generator(x.cuda()).sum().item())
                break
    """


def test_a_loop_that_breaks_at_the_end_of_its_first_pass_runs_once():
    # vits' `evaluate` takes the first batch of its loader and breaks: its copies run once
    # per call (every 1000 steps here), not once per batch.
    found = _found(FIRST_BATCH_ONLY)
    periodic = ("cold", "called only where it runs rarely: periodic (logging every N steps)")
    assert found[(7, "SL401")] == found[(10, "SL201")] == periodic
    assert found[(15, "SL401")][0] == "hot"
    # A `continue` may skip the `break`: the loop repeats. A loop inside the first-pass
    # loop's body still runs once per pass of its own enclosing loop.
    assert found[(25, "SL201")][0] == found[(32, "SL201")][0] == "hot"


REDEFINED = {
    "util.py": """
        import torch

        def tensor2im(t):
            return t.cpu().numpy()

        def tensor2im(t, scale=255.0):
            return (t * scale).cpu().numpy()

        def used_first(t):
            return t.cpu()

        KEEP = used_first

        def used_first(t):
            return t.cpu().numpy()

        def wrapped(t):
            return t.cpu()

        wrapped = torch.no_grad()(wrapped)
    """,
    "train.py": """
        import torch
        from util import tensor2im, used_first, wrapped

        def main(model, loader):
            for x in loader:
                y = model(x.cuda(non_blocking=True))
                tensor2im(y)
                used_first(y)
                wrapped(y)

        if __name__ == "__main__":
            main(None, [])
    """,
}


def test_a_function_its_module_defines_again_before_any_call_never_runs(tmp_path):
    # lpips' __init__.py (copied into stylegan2-pytorch and style-based-gan-pytorch) defines
    # `tensor2im` twice: the first can never be called.
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    for name, text in REDEFINED.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    every = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    found = {f.line: (f.context, f.why) for f in every if f.path.endswith("util.py") and f.code == "SL201"}
    assert found[5] == ("cold", "never runs: `tensor2im` is defined again at line 7 before anything calls it")
    assert found[8][0] == "hot"
    # Read before the second definition (`KEEP = used_first`), or rebound from itself by a
    # wrapper (`wrapped = torch.no_grad()(wrapped)`): the first function lives on.
    assert found[11][0] != "cold"
    assert found[19][0] != "cold"
    shown = {f.line for f in lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
             if f.path.endswith("util.py")}
    assert 5 not in shown and 8 in shown


def test_a_template_to_generate_code_from_is_cold_by_its_path(tmp_path):
    # LoRA vendors Hugging Face's cookiecutter example templates: `{{cookiecutter.model_class}},`
    # does not parse, and what does is no code of the program.
    from pathlib import Path

    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    template = tmp_path / "templates" / "{{cookiecutter.directory_name}}"
    template.mkdir(parents=True)
    (template / "run_{{cookiecutter.example_shortcut}}.py").write_text(
        "import torch\nfrom transformers import (\n    {{cookiecutter.model_class}},\n)\n")
    (template / "utils.py").write_text("import torch\nfor batch in loader:\n    print(model(batch.cuda()).item())\n")
    (tmp_path / "train.py").write_text("import torch\nfor batch in loader:\n    print(model(batch.cuda()).item())\n")
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert {Path(f.path).name for f in shown} == {"train.py"}
    every = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    whys = {(Path(f.path).name, f.code): f.why for f in every if "{{" in f.path}
    assert whys[("run_{{cookiecutter.example_shortcut}}.py", "SL000")].startswith("a template to generate code from")
    assert whys[("utils.py", "SL201")].startswith("a template to generate code from")


WARNING_PATHS = """
import logging
import warnings
import torch

log = logging.getLogger(__name__)


class Net(torch.nn.Module):
    def forward(self, x):
        loss = x.sum()
        force = False
        if torch.abs(loss) > 30:
            log.warning("High loss value: %.4f", loss.item())
            force = True
        if loss.max() > 100:
            warnings.warn(f"very high: {loss.max().item():.4f}")
        if loss.min() < 0:
            self.logger.error("negative: %s", loss.min().item())
        if loss > 1:
            log.warning("large: %s", loss.item())
            print(loss.item())
        if loss > 2:
            log.info("fine: %s", loss.item())
        if loss > 3:
            metrics.error(loss.item())
        return loss
"""


def test_a_block_that_only_warns_of_an_anomaly_is_a_warning_path():
    # sample-factory's learner warns of a high loss with the loss's value: the test runs
    # every step, the warning only when the step has gone wrong. A block that does more
    # than warn, an info message and a method no logger has are the step's.
    found = _found(WARNING_PATHS)
    warning = ("cold", "only when it warns of an anomaly (a warning path)")
    assert found[(14, "SL201")] == warning
    assert found[(17, "SL201")] == warning
    assert found[(19, "SL201")] == warning
    assert found[(13, "SL202")][0] == "hot"  # the test itself
    assert [found[(line, "SL201")][0] for line in (21, 22, 24, 26)] == ["hot"] * 4


def test_a_warning_on_the_line_of_its_test_leaves_the_test_hot():
    # Contexts are per line: a warning path written on its test's line would make the
    # test's own sync, which runs every step, cold with it.
    found = _found("""
        import logging
        import torch
        log = logging.getLogger(__name__)
        class Net(torch.nn.Module):
            def forward(self, x):
                loss = x.sum()
                if loss.item() > 30: log.warning("High loss")
                return loss
        """)
    assert found[(8, "SL201")][0] == "hot"


def test_a_warning_under_a_rank_or_flag_check_is_the_step_s():
    # `logger.warning` serves as the step's log where INFO is hidden: under a check of who
    # or whether to log (a rank, a flag), not of an anomaly, it runs every step.
    found = _found("""
        import logging
        import torch
        logger = logging.getLogger(__name__)
        def train(model, loader, opt, rank, args):
            for step, batch in enumerate(loader):
                loss = model(batch.cuda())
                loss.backward()
                opt.step()
                if rank == 0:
                    logger.warning(f"step {step}: loss {loss.item():.4f}")
                if is_main_process() and not dist.is_initialized():
                    logger.warning("loss %s", loss.item())
                if loss.detach() > 30:
                    logger.warning("high loss %s", loss.item())
        """)
    assert found[(11, "SL201")][0] == "hot"
    assert found[(13, "SL201")][0] == "hot"
    assert found[(15, "SL201")] == ("cold", "only when it warns of an anomaly (a warning path)")


def test_a_warning_under_a_value_read_off_a_tensor_is_a_warning_path():
    # CnOCR's `OcrModel.forward`: `if torch.any(input_lengths < 1).item(): logger.error(...)`.
    # A call without arguments tests who runs (`is_main_process()`), unless it reads a
    # tensor's values: then the block logs an anomaly. The test itself runs every step.
    found = _found("""
        import logging
        import torch
        logger = logging.getLogger(__name__)
        class Net(torch.nn.Module):
            def forward(self, x, lengths):
                if torch.any(lengths < 1).item():
                    logger.error(f"lengths min: {lengths.min()}")
                if (lengths > 9).any():
                    logger.error(f"lengths max: {lengths.max()}")
                if self.checker.enabled():
                    logger.error(f"lengths: {lengths.max()}")
                return self.head(x)
        """)
    warning = ("cold", "only when it warns of an anomaly (a warning path)")
    assert found[(7, "SL201")][0] == "hot"
    assert found[(8, "SL201")] == warning
    assert found[(10, "SL201")] == warning
    assert found[(12, "SL201")][0] == "hot"


def test_what_follows_an_early_return_on_a_cache_hit_runs_once():
    # nnDetection's ``set_cell_anchors``: ``if self.cell_anchors is not None: return``, then
    # the anchors are built and stored: the build runs on the first call only. Not where the
    # hit also needs evaluation mode (``or self.training`` misses every training step), nor
    # where what follows stores nothing the test reads.
    found = _found("""
        import torch
        from torch import nn
        class Anchors(nn.Module):
            def set_cell_anchors(self, device):
                if self.cell_anchors is not None:
                    return
                sizes = torch.as_tensor([1.0, 2.0], device=device)
                self.cell_anchors = sizes

            def get(self, x, key):
                if key in self.table and hasattr(self, "scale"):
                    return self.table[key]
                self.table[key] = torch.as_tensor([3.0], device=x.device)
                self.scale = 1.0
                return self.table[key]

            def eval_cached(self, x):
                if self.cached is not None and not self.training:
                    return self.cached
                self.cached = torch.as_tensor([3.0], device=x.device)
                return self.cached

            def other(self, x):
                if self.cached is not None:
                    return self.cached
                return torch.as_tensor([3.0], device=x.device)

            def forward(self, x):
                self.set_cell_anchors(x.device)
                return x + self.get(x, 0) + self.eval_cached(x) + self.other(x)
    """)
    lazy = "once per key (lazy initialisation: a cache filled on a miss)"
    assert found[(8, "SL403")] == ("cold", lazy)
    assert found[(14, "SL403")] == ("cold", lazy)
    assert found[(21, "SL403")][0] == "hot"
    assert found[(27, "SL403")][0] == "hot"


def test_an_early_return_on_a_hit_whose_miss_may_not_fill_stays_hot():
    # What follows ``if self.cached is not None: return self.cached`` runs once only if every
    # miss fills the cache: not where the fill is conditional (``if not self.training:``: every
    # training step misses), where the miss may return before filling, nor where the hit also
    # needs a flag the rest never sets (``and self.use_cache``: off, every call misses).
    found = _found("""
        import torch
        from torch import nn
        class Head(nn.Module):
            def conditional(self, x):
                if self.cached is not None:
                    return self.cached
                out = self.net(x)
                n = out.sum().item()
                if not self.training:
                    self.cached = out
                return out * n

            def flagged(self, x):
                if self.cached2 is not None and self.use_cache:
                    return self.cached2
                out = self.net(x)
                n = out.sum().item()
                self.cached2 = out
                return out * n

            def returns_first(self, x):
                if self.cached3 is not None:
                    return self.cached3
                out = self.net(x)
                n = out.sum().item()
                if n > 0:
                    return out
                self.cached3 = out
                return out

            def always(self, x):
                if self.cached4 is not None:
                    return self.cached4
                out = self.net(x)
                n = out.sum().item()
                self.cached4 = out
                return out * n

        class Model(nn.Module):
            def forward(self, x):
                h = self.head
                return h.conditional(x) + h.flagged(x) + h.returns_first(x) + h.always(x)
    """)
    assert found[(9, "SL201")][0] == "hot"
    assert found[(18, "SL201")][0] == "hot"
    assert found[(26, "SL201")][0] == "hot"
    assert found[(36, "SL201")] == ("cold", "once per key (lazy initialisation: a cache filled on a miss)")


def test_a_training_loop_after_an_early_return_on_a_hit_stays_hot():
    # ``if self.trained is not None: return self.trained`` at the top of ``fit``, then the
    # loop over batches and ``self.trained = model``: ``fit`` trains once, but every pass of
    # its loop is a step (the ``.item()`` in it syncs every step).
    found = _found("""
        import torch
        from torch.utils.data import DataLoader


        class Trainer:
            def fit(self, model, ds, opt):
                if self.trained is not None:
                    return self.trained
                loader = DataLoader(ds, batch_size=8)
                for x, y in loader:
                    loss = model(x.cuda(non_blocking=True)).mean()
                    loss.backward()
                    opt.step()
                    print(loss.item())
                self.trained = model
                return model


        def main():
            Trainer().fit(None, None, None)


        if __name__ == "__main__":
            main()
    """)
    assert found[(15, "SL201")] == ("hot", "the loop over `loader` in `Trainer.fit`")


def test_a_training_loop_in_a_lazy_initialisation_block_stays_hot():
    # ``if self.trained is None:`` around the loop over batches that fills ``self.trained``:
    # the block runs once, every pass of its loop is a step.
    found = _found("""
        import torch
        from torch.utils.data import DataLoader


        class Trainer:
            def fit(self, model, ds, opt):
                if self.trained is None:
                    loader = DataLoader(ds, batch_size=8)
                    for x, y in loader:
                        loss = model(x.cuda(non_blocking=True)).mean()
                        loss.backward()
                        opt.step()
                        print(loss.item())
                    self.trained = model
                return self.trained


        def main():
            Trainer().fit(None, None, None)


        if __name__ == "__main__":
            main()
    """)
    assert found[(14, "SL201")] == ("hot", "the loop over `loader` in `Trainer.fit`")


def test_an_early_return_on_a_hit_whose_miss_stores_none_stays_hot():
    # ``self.pending = None`` after ``if self.pending is not None: return ...`` fills nothing:
    # the next call misses again, so what follows runs every call.
    found = _found("""
        import torch
        from torch import nn
        class Head(nn.Module):
            def forward(self, x):
                if self.pending is not None:
                    return self.pending
                n = x.sum().item()
                self.pending = None
                return x * n
    """)
    assert found[(8, "SL201")][0] == "hot"


# -- memoised functions and a batch index's first pass (session 28's blind round) ------------

MEMOISED = """
    import functools
    from functools import lru_cache

    import torch
    from torch import Tensor, nn


    @lru_cache()
    def sizes_mask(nx, ny, device):
        return int(torch.ones(nx, ny, device=device).sum().item())


    @functools.cache
    def first_rows(n: int, device):
        return torch.arange(n, device=device).sum().item()


    @lru_cache(maxsize=None)
    def keyed_by_tensor(x: Tensor):
        return x.sum().item()


    class Block(nn.Module):
        @functools.cached_property
        def scale(self):
            return self.weight.sum().item()

        def forward(self, x):
            return x * sizes_mask(x.shape[0], x.shape[1], x.device) + first_rows(4, x.device) + keyed_by_tensor(x)
    """


def test_a_memoised_function_runs_once_per_distinct_arguments():
    # esvit's `@lru_cache` mask builder, called by every forward with the same sizes and
    # device, builds its mask once. A tensor argument is hashed by identity: each step's
    # new tensor misses the cache, so that function's body runs every step.
    found = _found(MEMOISED)
    memoised = ("cold", MEMOISED_WHY)
    assert found[(11, "SL201")] == found[(16, "SL201")] == found[(27, "SL201")] == memoised
    assert found[(21, "SL201")][0] == "hot"


FIRST_BATCH_BY_INDEX = """
    import numpy as np
    import torch
    import tqdm


    def evaluate(model, dataloader, device):
        rec_data_iter = tqdm.tqdm(enumerate(dataloader), total=len(dataloader))
        for i, batch in rec_data_iter:
            x, answers = (t.to(device) for t in batch)
            out = model(x)
            if i == 0:
                answer_list = answers.cpu().numpy()
            else:
                answer_list = np.append(answer_list, answers.cpu().numpy(), axis=0)
            for i in range(3):
                if i == 0:
                    print(out.sum().item())
        for n, (x, y) in tqdm.tqdm(enumerate(dataloader)):
            if n == 0 and x is not None:
                print(model(x.cuda(non_blocking=True)).cpu())
            if n % 100 == 0:
                print(model(x.cuda(non_blocking=True)).sum().item())
        for i, (x, y) in enumerate(dataloader):
            if i == 1:
                print(model(x.cuda(non_blocking=True)).cpu())
        return answer_list
    """


def test_the_first_pass_of_a_loop_over_batches_by_its_index_is_cold():
    # S3Rec's `if i == 0:` over `tqdm(enumerate(dataloader))` keeps its first batch's
    # answers: once per evaluation; the `else` branch runs every step. A name the loop binds
    # through a progress bar, or a local bound to one, is the batch index whatever it is
    # called; an inner `for i in range(3)` rebinds it, so `if i == 0:` there is the first
    # pass of that inner loop, every step. `i == 1` is not the first pass (left hot).
    found = _found(FIRST_BATCH_BY_INDEX)
    first = ("cold", "first batch only (once per pass over the data)")
    assert found[(13, "SL201")] == found[(21, "SL201")] == first
    assert found[(15, "SL201")][0] == found[(18, "SL201")][0] == "hot"
    assert found[(23, "SL201")] == ("cold", "periodic (logging every N steps)")
    assert found[(26, "SL201")][0] == "hot"


MEMOISED_IN_NAME_ONLY = """
    import functools
    from functools import lru_cache

    import torch
    from torch import Tensor, nn


    @lru_cache(maxsize=0)
    def not_kept(n, device):
        return torch.ones(n, device=device).sum().item()


    @functools.lru_cache()
    def many(*xs: Tensor):
        return xs[0].sum().item()


    @functools.lru_cache()
    def by_keyword(**xs: Tensor):
        return xs["a"].sum().item()


    @functools.cache
    def unannotated(x, n):
        return x.float().sum().item() + n


    @lru_cache(maxsize=None)
    def sizes(n, device):
        return torch.ones(n, device=device).sum().item()


    class Block(nn.Module):
        def forward(self, x):
            return x * not_kept(4, x.device) + many(x) + by_keyword(a=x) + unannotated(x, 2) + sizes(3, x.device)
    """


def test_a_cache_that_keeps_nothing_is_not_memoised():
    # `lru_cache(maxsize=0)` keeps no result: the body runs on every call.
    found = _found(MEMOISED_IN_NAME_ONLY)
    assert found[(11, "SL201")][0] == "hot"
    assert found[(31, "SL201")] == ("cold", MEMOISED_WHY)


def test_a_tensor_among_variadic_parameters_is_hashed_by_identity():
    # `*xs: Tensor`, `**xs: Tensor`: annotated as tensors like any other parameter.
    found = _found(MEMOISED_IN_NAME_ONLY)
    assert found[(16, "SL201")][0] == found[(21, "SL201")][0] == "hot"


def test_a_parameter_the_body_uses_as_a_tensor_is_hashed_by_identity():
    # No annotation, but `x.float()`: a tensor (an array would be unhashable), so every
    # step's new tensor misses the cache.
    found = _found(MEMOISED_IN_NAME_ONLY)
    assert found[(26, "SL201")][0] == "hot"


BATCH_INDEX_REBOUND = """
    import torch
    from tqdm import tqdm


    def evaluate(model, dataloader):
        for i, batch in enumerate(dataloader):
            out = model(batch)
            i = i % 2
            if i == 0:
                print(out.sum().item())
        for i, batch in enumerate(dataloader):
            out = model(batch)
            for i, layer in enumerate(model.layers):
                pass
            if i == 0:
                print(out.sum().item())
        for i, batch in enumerate(dataloader):
            out = model(batch)
            if i == 0:
                print(out.sum().item())
            i = 1
    """


def test_a_batch_index_the_body_rebinds_before_its_test_is_no_longer_the_index():
    # `i = i % 2`, or an inner loop's `for i, layer in ...` before `if i == 0:`: `i` is no
    # longer the loop's batch index there (every other batch; the last layer's index).
    # Rebound after the test, it is the index at the test on every pass.
    found = _found(BATCH_INDEX_REBOUND)
    assert found[(11, "SL201")][0] == found[(17, "SL201")][0] == "hot"
    assert found[(21, "SL201")] == ("cold", "first batch only (once per pass over the data)")


ENUMERATION_REBOUND = """
    import torch
    from tqdm import tqdm


    def evaluate(model, dataloader, pairs):
        it = tqdm(enumerate(dataloader))
        it = tqdm(pairs)
        for i, batch in it:
            out = model(batch)
            if i == 0:
                print(out.sum().item())
    """


def test_a_local_rebound_to_no_enumeration_yields_no_batch_index():
    # `it` held an enumeration of the loader, then something else: what its loop binds
    # first is no batch index.
    assert _found(ENUMERATION_REBOUND)[(12, "SL201")][0] == "hot"


MEMOISED_PER_CALL = """
    from functools import lru_cache

    import torch
    from torch import nn


    @lru_cache()
    def kept(n, device):
        return torch.ones(n, device=device).sum().item()


    class Block(nn.Module):
        def forward(self, x):
            @lru_cache()
            def made_per_call(n):
                return torch.ones(n, device=x.device).sum().item()

            return x * made_per_call(4) + kept(4, x.device)
    """


def test_a_cache_made_by_each_call_keeps_nothing_across_steps():
    # `@lru_cache` on a function defined inside the step makes a new, empty cache on every
    # call: its body runs every step. A module-level one keeps its results.
    found = _found(MEMOISED_PER_CALL)
    assert found[(17, "SL201")][0] == "hot"
    assert found[(10, "SL201")] == ("cold", MEMOISED_WHY)


FAIRSEQ_GUIDED_ATTENTION = """
    from functools import lru_cache

    import torch


    class GuidedAttentionLoss(torch.nn.Module):
        @staticmethod
        @lru_cache(maxsize=8)
        def _get_weight(s_len, t_len, sigma):
            grid_x, grid_y = torch.meshgrid(torch.arange(t_len), torch.arange(s_len))
            grid_x = grid_x.to(s_len.device)
            return grid_x

        def forward(self, src_lens, tgt_lens):
            return [self._get_weight(s, t, 0.4) for s, t in zip(src_lens, tgt_lens)]
    """


def test_a_memoised_function_that_reads_a_tensor_attribute_of_a_parameter_is_keyed_by_a_tensor():
    # fairseq's tacotron2 loss: `s_len.device` shows `s_len` is a tensor (hashed by identity,
    # a new one every step), so `@lru_cache` keeps nothing across steps and the copy is hot.
    found = _found(FAIRSEQ_GUIDED_ATTENTION)
    assert found[(12, "SL403")][0] == "hot"


EARLY_RETURNS = """
    import math
    import torch
    class Task(torch.nn.Module):
        def validation_step(self, batch, batch_idx):
            X, y = batch
            loss = self.model(X).sum()
            self.log("loss", loss.item())
            if self.current_epoch == 0 or math.log2(self.current_epoch) % 1 > 0 or batch_idx > 0:
                return
            self.plot(X.cpu().numpy())
        def training_step(self, batch, step):
            loss = self.model(batch).sum()
            if step % 100 != 0:
                return loss
            print(loss.item())
            return loss
    class Accumulating(torch.nn.Module):
        def training_step(self, batch, step):
            loss = self.model(batch).sum()
            loss.backward()
            if (step + 1) % self.accum_steps != 0:
                return loss
            self.optimizer.step()
            print(loss.item())
        def forward(self, x, i):
            if i > 0:
                return x
            return x.nonzero()
"""


def test_the_rest_after_an_early_return_off_the_first_batch_or_the_logging_steps_is_cold():
    # pyannote's validation_step plots its first batch (in some epochs) after an early return
    # one clause of which is `batch_idx > 0`; a return off the logging steps leaves the rest
    # periodic. Not off a gradient accumulation boundary (the rest steps the optimizer), nor
    # past a counter that is no batch index (`i` of a forward).
    found = _found(EARLY_RETURNS)
    assert found[(8, "SL201")][0] == "hot"
    assert found[(11, "SL201")] == ("cold", "first batch only (once per pass over the data)")
    assert found[(16, "SL201")] == ("cold", "periodic (after an early return when not logging)")
    assert found[(25, "SL201")][0] == "hot"
    assert found[(29, "SL101")][0] == "hot"


ACCUMULATING_UNDER_ANOTHER_NAME = """
    import torch
    class Accumulating(torch.nn.Module):
        def training_step(self, batch, step):
            loss = self.model(batch).sum()
            loss.backward()
            if (step + 1) % self.grad_steps != 0:
                return loss
            self.optimizer.step()
            print(loss.item())
        def validation_step(self, batch, step):
            loss = self.model(batch).sum()
            if not (step + 1) % self.n_acc == 0:
                return loss
            self.scaler.step(self.opt)
            print(loss.item())
"""


def test_the_rest_after_an_early_return_off_an_accumulation_boundary_of_any_name_is_hot():
    # An early return off `(step + 1) % self.grad_steps` whose rest steps the optimizer is a
    # gradient accumulation boundary whatever the divisor is called (as for an `if` block,
    # see _steps_the_optimizer): the rest is the training step, not a logging step.
    found = _found(ACCUMULATING_UNDER_ANOTHER_NAME)
    assert found[(10, "SL201")][0] == "hot"
    assert found[(16, "SL201")][0] == "hot"


#: StyleGAN2-ADA's training loop (and StyleGAN3's, EG3D's, GET3D's, projected-gan's): the
#: step, then a `continue` until the next tick, then once per tick a status line and metrics.
TICK_LOOP = """
    import torch
    def training_loop(G, opt, training_set_iterator, batch_size, kimg_per_tick, total_kimg):
        cur_nimg = 0
        cur_tick = 0
        tick_start_nimg = cur_nimg
        while True:
            images = next(training_set_iterator).to("cuda", non_blocking=True)
            loss = G(images).mean()
            loss.backward()
            opt.step()
            cur_nimg += batch_size
            done = (cur_nimg >= total_kimg * 1000)
            if {guard}:
                continue
            print(f"loss {{loss.item()}}")
            stats = torch.stack([p.norm() for p in G.parameters()]).nonzero()
            cur_tick += 1
            {reset}
            if done:
                break
"""


@pytest.mark.parametrize(
    ("guard", "reset", "cold"),
    [
        ("(not done) and (cur_tick != 0) and (cur_nimg < tick_start_nimg + kimg_per_tick * 1000)",
         "tick_start_nimg = cur_nimg", True),
        ("cur_nimg - tick_start_nimg < kimg_per_tick * 1000", "tick_start_nimg = cur_nimg", True),
        ("tick_start_nimg + kimg_per_tick > cur_nimg", "tick_start_nimg = cur_nimg", True),
        # Moved on by an amount, which may be less than the counter moves in a pass.
        ("cur_nimg < tick_start_nimg + kimg_per_tick", "tick_start_nimg += 1", False),
        # The bound never moves on: not a period (a resumed run skipping what it has seen).
        ("cur_nimg < tick_start_nimg + kimg_per_tick * 1000", "pass", False),
        # No deadline at all: only the first pass and the last are rare... but every other
        # pass goes on too: `done` alone is false on every pass but the last.
        ("(not done) and (cur_tick != 0)", "tick_start_nimg = cur_nimg", False),
        # A clause that is false on ordinary passes (a skipped bad batch): every step goes on.
        ("(cur_nimg < tick_start_nimg + kimg_per_tick) and torch.isfinite(loss)", "tick_start_nimg = cur_nimg", False),
        # `or`: the rest runs whenever the deadline has passed... or not: any true clause skips.
        ("(cur_nimg < tick_start_nimg + kimg_per_tick) or cur_tick == 0", "tick_start_nimg = cur_nimg", False),
    ],
    ids=["stylegan", "difference", "reversed", "bound moved by an amount", "bound never moves", "no deadline",
         "a bad-batch skip", "or"],
)
def test_the_rest_of_a_loop_after_a_continue_until_the_next_period_is_periodic(guard, reset, cold):
    found = _found(TICK_LOOP.format(guard=guard, reset=reset))
    why = "periodic (after a `continue` taken until the next period)"
    for at in ((16, "SL201"), (17, "SL101")):
        assert (found[at] == ("cold", why)) if cold else (found[at][0] == "hot"), found


@pytest.mark.parametrize("step", ["opt.step()", "opt.zero_grad()", "self.optimizer_step()", "engine.step()",
                                  "accelerator.backward(loss)"])
def test_a_continue_until_the_next_period_before_a_step_is_an_accumulation(step):
    # The rest steps the optimizer, itself or through a helper or an engine: an accumulation
    # boundary written as a deadline (`if step - last_update < accum: continue`), the
    # training step, whatever the guard looks like.
    source = TICK_LOOP.format(guard="cur_nimg < tick_start_nimg + kimg_per_tick", reset="tick_start_nimg = cur_nimg")
    source = source.replace("            cur_tick += 1\n", f"            cur_tick += 1\n            {step}\n")
    found = _found(source)
    assert found[(16, "SL201")][0] == "hot", found


#: ESPnet's `PositionalEncoding.extend_pe` (copied into wenet, FunASR, CosyVoice, auto_avsr):
#: the table grows when an input is longer than it.
EXTEND_PE = """
    import torch
    class PositionalEncoding(torch.nn.Module):
        def extend_pe(self, x):
            if self.pe is not None:
                if {size} >= x.size(1):
                    if self.pe.dtype != x.dtype or self.pe.device != x.device:
                        self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                    return
            pe = torch.zeros(x.size(1), self.d_model)
            {store}
        def forward(self, x):
            self.extend_pe(x)
            return x + self.pe[:, : x.size(1)]
"""


@pytest.mark.parametrize(
    ("size", "store", "lazy"),
    [
        ("self.pe.size(1)", "self.pe = pe.to(device=x.device)", True),
        ("self.pe.shape[1]", "self.pe = pe.to(device=x.device)", True),
        ("len(self.pe)", "self.pe = pe.to(device=x.device)", True),
        # The rest never stores the table: every longer input rebuilds it.
        ("self.pe.size(1)", "self.other = pe.to(device=x.device)", False),
        # The size of something the rest does not grow.
        ("self.max_len", "self.pe = pe.to(device=x.device)", False),
        # A local: every call misses.
        ("pe_len(x)", "self.pe = pe.to(device=x.device)", False),
    ],
    ids=["size()", "shape", "len", "no store", "a fixed bound", "a call"],
)
def test_a_table_that_grows_for_longer_inputs_is_rebuilt_rarely(size, store, lazy):
    found = _found(EXTEND_PE.format(size=size, store=store))
    lazy_why = "once per key (lazy initialisation: a cache filled on a miss)"
    assert (found[(11, "SL403")] == ("cold", lazy_why)) if lazy else (found[(11, "SL403")][0] == "hot"), found


#: A `continue` guard that reads like a deadline, where the rest is not once per period.
NOT_A_PERIOD = """
    import torch
    def loop(model, loader, opt, interval, rank, max_samples, epoch):
        step = 0
        next_log = 0
        n_seen = 0
        for images in loader:
            loss = model(images.cuda()).mean()
            step += 1
            if {guard}:
                continue
            print(loss.item())
            {move}
"""


@pytest.mark.parametrize(
    ("guard", "move"),
    [
        # An evaluation loop that skips once past a limit: nothing moves `max_samples` on
        # every pass, only the rest moves `n_seen`: the rest runs on every pass up to the limit.
        ("max_samples < n_seen", "n_seen += images.shape[0]"),
        # The bound moved on only under a condition: every pass in between goes on.
        ("step < next_log", "if step % 1000 == 0: next_log = step + interval"),
        # ...or only by a nested function, which moves its own local.
        ("step < next_log", "def later(): next_log = step + interval"),
        # ...or only after a `continue` of the rest (on rank 0): the other ranks go on every pass.
        ("step < next_log", "if rank != 0: continue\n            next_log = step + interval"),
        # ...or only after a `try` whose handler continues.
        ("step < next_log", "try:\n                rank.check()\n            except ValueError:\n                continue\n"
                            "            next_log = step + interval"),
        # A "past the first" clause on a counter this loop never moves (the epoch of an outer
        # loop): false on every pass of the first epoch.
        ("(epoch != 0) and (step < next_log)", "next_log = step + interval"),
    ],
    ids=["a limit", "moved under a condition", "moved in a nested function", "moved after a continue",
         "moved after a handler's continue", "past the first of another loop"],
)
def test_a_continue_guard_whose_bound_the_rest_may_not_move_on_is_no_period(guard, move):
    found = _found(NOT_A_PERIOD.format(guard=guard, move=move))
    assert found[(12, "SL201")][0] == "hot", found


#: A memory bank filled by what each call appends to it, up to a fixed capacity.
FILLED_TO_CAPACITY = """
    import torch
    class Memory(torch.nn.Module):
        def push(self, feats):
            if self.bank is not None:
                if self.bank.size(0) >= {bound}:
                    return
            print(feats.norm().item())
            self.bank = feats if self.bank is None else torch.cat([self.bank, feats])
        def forward(self, x):
            feats = self.encoder(x)
            self.push(feats)
            return feats
"""


@pytest.mark.parametrize(("bound", "lazy"), [("feats.size(0)", True), ("self.capacity", False), ("4096", False)],
                         ids=["the input's size", "a capacity", "a constant"])
def test_a_cache_checked_against_a_fixed_capacity_is_no_grow_for_longer_inputs(bound, lazy):
    # Checked against the input's size, one miss makes the bank fit it (ESPnet's extend_pe);
    # checked against a capacity, every call appends and misses until the bank is full.
    found = _found(FILLED_TO_CAPACITY.format(bound=bound))
    assert (found[(8, "SL201")][0] == "cold") if lazy else (found[(8, "SL201")][0] == "hot"), found
