"""Forms found on the removed lines of public sync-removal commits (benchmarks/realcode):
per-step code the call graph must see as hot, and syncs hidden behind helpers and builtins."""

from __future__ import annotations

import textwrap

from synclint.engine import check_source


def _found(source: str, include_cold: bool = False) -> dict[tuple[int, int, str], str]:
    findings = check_source(textwrap.dedent(source), "example.py", include_cold=include_cold)
    return {(f.line, f.column, f.code): f.context for f in findings}


# -- loops over batches the call graph must see ------------------------------------------

def test_a_loop_over_a_batches_method_is_a_step():
    source = """
        import torch
        class Trainer:
            def fit(self):
                for batch in self._iter_batches():
                    self._train_batch(batch)
            def _train_batch(self, batch):
                total = torch.tensor(0.0, device=self.device)
                return total
        """
    assert _found(source) == {(8, 17, "SL403"): "hot"}


def test_a_while_loop_drawing_batches_with_next_is_a_step():
    source = """
        import torch
        def validate(model, validation_dataloader):
            validation_iterator = iter(validation_dataloader)
            while True:
                try:
                    batch = next(validation_iterator)
                except StopIteration:
                    break
                tokens = (model(batch) != -100).sum()
                print(float(tokens.item()))
        """
    assert _found(source) == {(11, 21, "SL201"): "hot"}


def test_a_loop_fetching_a_batch_in_its_body_is_a_step():
    # llm.c's train_gpt2.py: a module-level loop over steps, each accumulating micro-batches
    # from ``train_loader.next_batch()``; nanoGPT's ``get_batch("train")``.
    source = """
        import torch
        if __name__ == "__main__":
            for step in range(num_iterations + 1):
                for micro_step in range(grad_accum_steps):
                    x, y = train_loader.next_batch()
                    loss = model(x, y)
                    lossf += loss.detach()
                lossf = lossf.item()
            print(loss.item())
        def evaluate(model):
            for k in range(eval_iters):
                x, y = get_batch("val")
                out = model(x, y).item()
        """
    assert _found(source, include_cold=True) == {
        (9, 17, "SL201"): "hot", (10, 11, "SL201"): "cold", (14, 15, "SL201"): "hot",
    }


def test_a_private_batch_fetcher_draws_batches_too():
    # flair's language model trainer: `data, targets = self._get_batch(data_source, i, n)`
    # in `evaluate`'s loop: a loop over batches, so the `total_loss.item()` returned after
    # it runs once per evaluation.
    source = """
        import torch
        class Trainer:
            def evaluate(self, data_source, n):
                total_loss = 0
                for i in range(0, data_source.size(0) - 1, n):
                    data, targets = self._get_batch(data_source, i, n)
                    total_loss += self.model(data).sum()
                return total_loss.item() / len(data_source)
        """
    assert _found(source, include_cold=True) == {(9, 16, "SL201"): "cold"}

def test_an_epoch_loop_around_the_fetching_loop_is_not_a_step():
    source = """
        import torch
        def train(model, loader, epochs):
            for epoch in range(epochs):
                it = iter(loader)
                while True:
                    batch = next(it)
                    model(batch).sum().item()
                print(model.weight.sum().item())
        """
    found = _found(source, include_cold=True)
    assert found == {(8, 13, "SL201"): "hot", (9, 15, "SL201"): "unknown"}


def test_code_after_a_gradient_accumulation_loop_is_still_the_step():
    # The micro-steps' iterations make up one step: what follows them in the step's
    # function runs every step, not once after a loop over batches, and their first
    # pass runs once per step.
    source = """
        import torch
        def train_step(model, opt, grad_accum_steps):
            tokens = None
            for micro_step in range(grad_accum_steps):
                x, y = get_batch("train")
                if tokens is None:
                    tokens = (y > 0).sum().item()
                loss = model(x, y) / grad_accum_steps
                loss.backward()
            opt.step()
            return loss.item()
        """
    assert _found(source, include_cold=True) == {(8, 22, "SL201"): "hot", (12, 12, "SL201"): "hot"}


def test_a_step_loop_counted_in_accumulation_units_ends_the_steps():
    source = """
        import torch
        def train(model, max_iters, grad_accum_steps):
            for step in range(max_iters // grad_accum_steps):
                x, y = get_batch("train")
                model(x, y).backward()
            print(model.weight.sum().item())
        """
    assert _found(source, include_cold=True) == {(7, 11, "SL201"): "cold"}


def test_an_epoch_loop_peeking_at_a_batch_is_not_a_step():
    # ``next(iter(val_loader))`` once per epoch, beside the loop over the epoch's batches.
    source = """
        import torch
        def train(model, train_loader, val_loader, epochs):
            for epoch in range(epochs):
                for batch in train_loader:
                    model(batch).sum().backward()
                x_vis = next(iter(val_loader))
                print(model(x_vis).sum().item())
        """
    assert _found(source, include_cold=True) == {(8, 15, "SL201"): "unknown"}


def test_a_loop_prefetching_the_first_batch_of_an_inner_step_loop_is_not_a_step():
    # A benchmark's stages: each fetches the first batch, runs the steps (each fetching
    # the next), then waits for the device once to time the stage.
    source = """
        import torch
        for stage, num_steps in enumerate([10, 20]):
            x, y = get_batch("train")
            for k in range(num_steps):
                loss = model(x, y)
                x, y = get_batch("train")
                print(loss.item())
            torch.cuda.synchronize()
        """
    assert _found(source, include_cold=True) == {(8, 15, "SL201"): "hot", (9, 5, "SL501"): "unknown"}


def test_a_while_loop_without_batches_is_not_a_step():
    source = """
        import torch
        def poll(queue):
            while True:
                item = next(queue)
                print(torch.exp(item).item())
        def helper(x):
            return x.nonzero()
        """
    assert _found(source, include_cold=True) == {(6, 15, "SL201"): "unknown", (8, 12, "SL101"): "unknown"}


def test_a_loop_running_a_backward_pass_on_every_pass_is_a_step():
    """NeRF slices each batch from rays it holds (no loader, no fetch call): the
    ``.backward()`` on every pass makes the loop a training loop, and what it calls hot.
    An epoch loop around such a loop is not one, nor a loop that backpropagates only in
    a loop nested in it."""
    source = """
        import torch
        def render(rays):
            out = rays.sum(-1)
            if torch.isnan(out).any():
                print("nan")
            return out
        def train(model, rays, n_iters, epochs):
            for i in range(n_iters):
                batch = rays[i * 64:(i + 1) * 64]
                loss = render(model(batch)).mean()
                loss.backward()
                print(loss.item())
        def fit(model, rays, n_iters, epochs):
            for epoch in range(epochs):
                print(rays.sum().item())
                for i in range(n_iters):
                    scaler.scale(model(rays).mean()).backward()
                    print(rays.max().item())
        """
    assert _found(source, include_cold=True) == {
        (5, 8, "SL202"): "hot",
        (13, 15, "SL201"): "hot",
        (16, 15, "SL201"): "unknown",  # once per epoch
        (19, 19, "SL201"): "hot",
    }


def test_a_loop_that_only_backpropagates_does_not_end_the_step_or_the_run():
    """A loop that draws no batch but backpropagates may be a step's own inner loop (a
    backward per loss, chunks, a GAN's critic iterations): the code after it is still
    the step, and the loop around it that draws the batch is still the loop over batches."""
    source = """
        import torch
        def train_step(model, optimizer, batch):
            losses = model(batch)
            for loss in losses.values():
                loss.backward(retain_graph=True)
            optimizer.step()
            print(losses["total"].item())
        def main(model, optimizer, loader):
            for batch in loader:
                train_step(model, optimizer, batch)
        def train_gan(G, D, iters, critic_iters):
            for it in range(iters):
                x = get_batch()
                for _ in range(critic_iters):
                    D(x).mean().backward()
                g_loss = G(x).mean()
                g_loss.backward()
                print(g_loss.item())
        """
    assert _found(source, include_cold=True) == {(8, 11, "SL201"): "hot", (19, 15, "SL201"): "hot"}


def test_a_loop_backpropagating_its_own_items_or_running_once_is_not_a_step():
    """``layer.backward(grad)`` over the loop's own layers is one backward pass walked
    layer by layer (a hand-written network), not a step per pass; a loop whose body
    ends in ``break`` runs once; a loop over a list written out in the source sweeps
    configurations (a test script's shapes), one check each."""
    source = """
        import torch
        class Net:
            def backward(self, grad):
                for layer in reversed(self.layers):
                    grad = layer.backward(grad)
                    print(grad.sum().item())
                return grad
        def calibrate(model, x):
            while True:
                model(x).sum().backward()
                print(x.sum().item())
                break
        def check(make, x):
            for stride, channels in [(1, 32), (1, 128), (2, 32)]:
                make(stride, channels)(x).mean().backward()
                print(x.grad.sum().item())
        """
    assert _found(source, include_cold=True) == {
        (7, 19, "SL201"): "unknown",
        (12, 15, "SL201"): "unknown",
        (17, 15, "SL201"): "unknown",  # one pass per configuration written out
    }


def test_a_step_s_loop_over_views_that_backpropagates_does_not_end_the_step():
    """pytorchvideo's MoCo ``training_step`` runs ``manual_backward`` once per view: the
    code after that loop (the queue update reading ``self.ptr``) is still the step, not
    "after the loop over batches"."""
    source = """
        import torch
        class MoCo(torch.nn.Module):
            def training_step(self, batch, batch_idx):
                for vids in batch:
                    loss = self.model(vids).mean()
                    self.manual_backward(loss)
                self._enqueue()
            def _enqueue(self):
                ptr = int(self.ptr.item())
                return ptr
        """
    assert _found(source, include_cold=True) == {(10, 19, "SL201"): "hot"}


# -- unknown code: shown on the strength of the op alone -----------------------------------

LIBRARY = """\
import torch


def fill_value(src: torch.Tensor):
    return src.max().item()


def loose(x):
    return x.max().item()


def any_set(flags: torch.Tensor):
    return 1 if flags.any() else 0


def permute(hidden, mask):
    return torch.arange(len(hidden), device=hidden.device).repeat_interleave(mask.sum(dim=1))


def count(x):
    return x.cuda().sum().item()


def tiles(num_tiles, sizes, on_gpu, rank):
    device = torch.cuda.current_device()
    if num_tiles is not None:
        num_tiles = num_tiles.to(device=device)
    if on_gpu:
        sizes = sizes.to(device)
    total = int(num_tiles.sum().item()) if num_tiles is not None else 0
    first = sizes[0].item()
    moved = sizes.to(torch.device("cuda", rank))
    last = moved.max().item()
    chosen = "cpu"
    back = sizes.to(chosen).item()
    return total, first, last, back

"""


def test_unknown_findings_are_shown_only_on_a_proven_operand(tmp_path):
    from synclint.config import Settings
    from synclint.project import PROVEN_SYNC, UNREACHED
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'lib'\n")
    (tmp_path / "lib.py").write_text(LIBRARY)
    # A step elsewhere in the project: "nothing reaches it" now means something.
    (tmp_path / "model.py").write_text("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    everything = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    rows = {(f.line, f.column, f.code, f.why, f.severity) for f in everything}
    assert rows == {
        (5, 12, "SL201", UNREACHED, "warning"),  # a tensor, but maybe a host one: hidden
        (9, 12, "SL201", UNREACHED, "warning"),  # x may be anything: hidden
        (13, 17, "SL202", UNREACHED, "warning"),  # truthiness: not among the ops shown on their own
        (17, 12, "SL104", PROVEN_SYNC, "info"),  # repeat_interleave of a tensor made on hidden's device
        (21, 12, "SL201", PROVEN_SYNC, "info"),  # moved to the accelerator, then read back
        # A name bound to a move to an accelerator device (the current CUDA device, by
        # name; kept after ``if x is not None:``, where the other path has no tensor).
        (30, 17, "SL201", PROVEN_SYNC, "info"),
        (31, 13, "SL201", UNREACHED, "warning"),  # moved only when on_gpu: maybe a host tensor
        (33, 12, "SL201", PROVEN_SYNC, "info"),  # torch.device("cuda", rank)
        (35, 12, "SL201", UNREACHED, "warning"),  # a copy to "cpu" through a name: of what?
    }
    shown = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert {(f.line, f.code) for f in shown} == {(17, "SL104"), (21, "SL201"), (30, "SL201"), (33, "SL201")}


def test_a_build_helper_called_from_code_of_no_known_context_is_not_cold_by_name():
    source = """
        import torch
        class Engine:
            def __init__(self):
                self.anchors = build_anchors(torch.ones(3, device="cuda"))
            def add_request(self, sizes):
                return self._build_request(sizes.to("cuda"))
            def _build_request(self, sizes):
                return int(sizes.sum().item())
        def build_anchors(x):
            return x.nonzero()
        """
    assert _found(source, include_cold=True) == {(9, 20, "SL201"): "unknown", (11, 12, "SL101"): "cold"}


def test_the_grad_of_anything_is_a_tensor_even_where_numpy_is_imported():
    source = """
        import numpy
        import torch
        class Engine(torch.nn.Module):
            def forward(self, x):
                return x
            def step(self):
                clip(self.parameters())
        def clip(parameters):
            parameters = list(filter(lambda p: p.grad is not None, parameters))
            total_norm = max(p.grad.data.abs().max() for p in parameters)
            return torch.cuda.FloatTensor([float(total_norm)])
        """
    assert _found(source) == {(11, 18, "SL202"): "hot", (12, 36, "SL201"): "hot"}


def _project(tmp_path, files: dict[str, str], include_cold: bool = False):
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    options = RunOptions(jobs=1, use_cache=False, include_cold=include_cold)
    return lint_paths([tmp_path], Settings(root=tmp_path), options)



# -- tensors read back where an op takes a Python number ----------------------------------

def test_tensors_passed_where_an_op_takes_a_python_number():
    source = """
        import torch
        class Dispatch(torch.nn.Module):
            def forward(self, counts: torch.Tensor, exp_avgs, grads, step_factor: torch.Tensor, n: int):
                total = counts.sum()
                index = torch.arange(total, device=counts.device)
                fine = torch.arange(n, device=counts.device) + torch.arange(counts.shape[0])
                torch._foreach_lerp_(exp_avgs, grads, step_factor * 0.1)
                torch._foreach_lerp_(exp_avgs, grads, 0.1)
                losses = torch.Tensor([total, counts.max()]).to(counts.device)
                return index, fine, losses
        """
    assert _found(source) == {
        (6, 30, "SL201"): "hot",  # arange of a 0-d device tensor
        (8, 47, "SL201"): "hot",  # a 0-d tensor as the Scalar weight
        (10, 18, "SL201"): "hot",  # legacy constructor of device tensors
    }


def test_factory_sizes_and_foreach_scalars_that_are_tensors():
    source = """
        import torch
        class Dispatch(torch.nn.Module):
            def forward(self, counts: torch.Tensor, xs: list[torch.Tensor], lr: torch.Tensor, n: int):
                buf = torch.zeros((counts.max(), 4), device=counts.device)
                fill = torch.full((n,), lr, device=lr.device)
                grid = torch.linspace(0, 1, steps=counts.sum())
                extra = counts.new_zeros(counts.sum(), n)
                ok = torch.zeros(n, counts.shape[0]) + torch.full((n,), 0.5)
                torch._foreach_add_(xs, lr)
                torch._foreach_add_(xs, lr, alpha=1.0)
                torch._foreach_mul_(xs, lr)
                torch._foreach_mul_(xs, scalar=lr)
                torch._foreach_addcdiv_(xs, xs, xs, value=lr)
                torch._foreach_clamp_max_(xs, lr)
                host = counts.cpu()
                fine = torch.arange(host.sum())
                return buf, fill, grid, extra, ok, fine
        """
    assert _found(source) == {
        (5, 28, "SL201"): "hot",  # a size inside the shape tuple
        (6, 33, "SL201"): "hot",  # the fill value
        (7, 43, "SL201"): "hot",  # linspace's steps
        (8, 34, "SL201"): "hot",  # a method factory's size
        (10, 33, "SL201"): "hot",  # no alpha=: the Scalar overload
        (13, 40, "SL201"): "hot",  # scalar= names the Scalar overload
        (14, 51, "SL201"): "hot",  # addcdiv's Scalar value
        (15, 39, "SL201"): "hot",  # clamp_max has no Tensor overload
        (16, 16, "SL201"): "hot",  # the .cpu() itself; arange of a host tensor is not flagged
    }


def test_builtin_max_over_abs_of_unknown_tensors_in_a_numpy_file():
    source = """
        import numpy as np
        import torch
        def clip_norm(input_tensors, mpu=None):
            total_norm = max(t.data.abs().max() for t in input_tensors)
            return torch.FloatTensor([float(total_norm)])
        """
    assert _found(source, include_cold=True) == {(5, 18, "SL202"): "unknown", (6, 31, "SL201"): "unknown"}


def test_a_host_factory_cast_then_moved_is_a_host_to_device_copy():
    source = """
        import torch
        def _safe_divide(num: torch.Tensor, denom: torch.Tensor, zero_division: float = 0.0):
            zero_division = torch.tensor(zero_division).float().to(num.device)
            return torch.where(denom != 0, num / denom, zero_division)
        class Metric(torch.nn.Module):
            def forward(self, num, denom):
                return _safe_divide(num, denom)
        """
    assert _found(source) == {(4, 21, "SL403"): "hot"}


# -- attributes that hold a Python number at times and a tensor at others ----------------

SCALER = """
    import torch
    class _ScaleMixin:
        def __init__(self):
            self._multiply_factor = 1.0
            self.scale = 1.0
            self.steps = 0
        def _unscale_grads(self):
            if self._multiply_factor != 1.0:
                self._multiply_factor = 1.0
            if self.scale != 1.0:
                self.scale = 0.5
            if isinstance(self._multiply_factor, float):
                if self._multiply_factor > 2:
                    self.steps += 1
        def step(self):
            self._unscale_grads()
            self.steps += 1
        def clip_grad_norm(self, max_norm, grad_norm):
            clip_coef = (max_norm / (grad_norm + 1e-6)).clamp_(max=1)
            self._multiply_factor *= clip_coef
            self.scale *= 0.5
    class FP16Optimizer(_ScaleMixin, object):
        pass
    """


def test_an_attribute_once_multiplied_by_a_tensor_may_be_a_tensor():
    """``self._multiply_factor``: 1.0 in ``__init__``, ``*= clip_coef`` (a tensor) in another
    method: comparing it in a condition waits for the device whenever it holds a tensor.
    ``self.scale`` (only ever numbers) and the ``isinstance(..., float)`` branch stay quiet;
    the optimizer's ``step``, inherited from a mixin, is a step."""
    assert _found(SCALER, include_cold=True) == {(9, 12, "SL202"): "hot"}
    (finding,) = check_source(textwrap.dedent(SCALER), "example.py")
    assert finding.why == "optimizer step `FP16Optimizer.step` (inherited from `_ScaleMixin.step`) -> `_ScaleMixin._unscale_grads`"


def test_train_batch_and_eval_batch_are_steps_even_when_only_tests_call_them(tmp_path):
    """DeepSpeed's ``PipelineEngine.train_batch``: one call is one training step, whoever
    calls it (in the library itself, only its tests)."""
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'lib'\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "lib" / "engine.py").write_text(textwrap.dedent(
        """\
        import torch
        class PipelineEngine:
            def train_batch(self, data_iter):
                self.total_loss = self.module(next(data_iter)).detach()
                return self._aggregate_total_loss()
            def eval_batch(self, data_iter):
                return self.module(next(data_iter)).max().item()
            def _aggregate_total_loss(self):
                return self.total_loss.mean().item()
        """
    ))
    (tmp_path / "tests" / "test_engine.py").write_text(
        "from lib.engine import PipelineEngine\ndef test_train():\n    PipelineEngine().train_batch(iter([1]))\n"
    )
    found = lint_paths([tmp_path / "lib"], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [(f.line, f.column, f.code, f.why) for f in found] == [
        (7, 16, "SL201", "`PipelineEngine.eval_batch`"),
        (9, 16, "SL201", "`PipelineEngine.train_batch` -> `PipelineEngine._aggregate_total_loss`"),
    ]


def test_bytes_literals_are_no_devices():
    source = """
        import torch
        def f(x):
            stdout = b"2.1.0"
            device = b"cuda"
            return x.to(device).item(), torch.zeros(2, device=b"cpu").nonzero()
        """
    assert {code for (_line, _col, code) in _found(source, include_cold=True)} == {"SL201", "SL101"}
    assert not any(f.code == "SL000" for f in check_source(textwrap.dedent(source), "example.py", include_cold=True))


def test_a_name_bound_to_a_factory_on_the_device_is_no_proof(tmp_path):
    """Only a move to an accelerator proves a name's residency for unknown code: a scalar
    made on the device for a collective (``torch.tensor(k, device=dev)``, then all-reduced
    and read back) is the set-up code's idiom as much as the step's."""
    from synclint.config import Settings
    from synclint.project import PROVEN_SYNC, UNREACHED
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'lib'\n")
    (tmp_path / "lib.py").write_text(textwrap.dedent(
        """\
        import torch
        def agree(k):
            n = torch.tensor(k, device=torch.cuda.current_device())
            torch.distributed.all_reduce(n)
            return int(n.item()), torch.tensor(k, device="cuda").item()
        """
    ))
    (tmp_path / "model.py").write_text("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    found = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert sorted((f.line, f.column, f.why) for f in found) == [(5, 16, UNREACHED), (5, 27, PROVEN_SYNC)]


def test_a_packed_sequences_batch_sizes_is_a_host_tensor():
    source = """
        import torch
        from torch.nn.utils.rnn import PackedSequence
        class RNN(torch.nn.Module):
            def forward(self, input, hx=None):
                orig_input = input
                if isinstance(orig_input, PackedSequence):
                    input, batch_sizes, sorted_indices, unsorted_indices = input
                    max_batch_size = batch_sizes[0]
                    hx = torch.zeros(2, max_batch_size, 3, device=input.device)
                    total = torch.zeros(input.sum(), device=input.device)
                return hx
        """
    assert _found(source) == {(11, 33, "SL201"): "hot"}  # only the size read from the data


def test_shape_methods_and_topk_given_tensor_sizes():
    source = """
        import torch
        def forward(x: torch.Tensor, lengths: torch.Tensor, n: int):
            max_len = lengths.max()
            a = x.view(max_len, -1)
            b = x.view(n, -1).view(torch.float16).reshape(x.shape[0], -1)
            k = (lengths > 0).sum()
            c = x.topk(k)
            d = torch.topk(x, k=n)
            e = x.narrow(0, 0, max_len)
            f = x.repeat(n, 1).expand(max_len, -1)
            return a, b, c, d, e, f
        """
    assert _found(source) == {
        (5, 16, "SL201"): "hot",  # a size of view
        (8, 16, "SL201"): "hot",  # topk's k
        (10, 24, "SL201"): "hot",  # narrow's length
        (11, 31, "SL201"): "hot",  # an expand size
    }


def test_sizes_that_are_symbolic_ints_host_shapes_or_submodules_are_not_read_back():
    source = """
        import torch
        class Shard(torch.nn.Module):
            def forward(self, x: torch.Tensor, n: int):
                start = torch.sym_min(n, x.size(0))
                a = x.narrow(0, start, torch.sym_ite(n > 1, n, 1))
                shape = torch.onnx.operators.shape_as_tensor(x)
                bsz, seq_len = shape[0], shape[1]
                b = x.view(bsz.view(1), seq_len, -1)
                c = self.expand(x)
                d = x.view(x.sum(), -1)
                return a, b, c, d
        """
    assert _found(source) == {(11, 20, "SL201"): "hot"}  # only the size read from the data
