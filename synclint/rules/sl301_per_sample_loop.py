from __future__ import annotations

import re

import libcst as cst

from synclint.analysis.imports import callee_name, dotted_name
from synclint.analysis.kinds import Kind
from synclint.prefilter import TENSOR_EVIDENCE
from synclint.project.summary import BACKWARD_METHODS
from synclint.rules.base import Invalid, Rule
from synclint.analysis.kinds import NON_TENSOR_METHODS, classify_torch_callable
from synclint.analysis.loaders import is_sample_collection
from synclint.analysis.reads import names_read
from synclint.traversal import walk

_BATCH_NAME = re.compile(r"^(batch_size|bs|b|num_images|n_images|num_samples|n_samples|nimgs|num_imgs)$", re.I)
_IOU_NAME = re.compile(r"iou", re.I)
#: Loop variables that name pieces of every sample, not samples: chunks of a tensor split
#: for memory (``for student_chunk, label_chunk in zip(student_logits, labels)``, torchtune's
#: chunked distillation loss) and levels of a feature pyramid (``for lvl, (H_, W_) in
#: enumerate(spatial_shapes)``, GroundingDINO's proposals per level).
#: So do the layers, scales, stages and branches of a network and the views or crops of a
#: multi-crop batch (``for layer_index, layer_predictions in enumerate(predictions)``:
#: a YOLO loss per output layer, each of another grid size).
_PIECE_NAME = re.compile(
    r"(^|_)(chunks?|shards?|lvl|levels?|layers?|scales?|stages?|branch(es)?|views?|crops?|resolutions?|skips?"
    r"|heads?)(_|$)",
    re.I,
)
#: Names of ground truth, by their first or last word: ``flow_gt``, ``targets``,
#: ``target_masks``, ``gt_boxes`` (not ``max_label_len``, a length).
_TRUTH_NAME = re.compile(r"^(gts?|targets?|labels?|ground_truths?)(_|$)|(^|_)(gts?|targets?|labels?|ground_truths?)$", re.I)
#: Words that make such a name a quantity or a setting of the truth, no truth to compare
#: with: ``target_size``, ``num_labels``, ``target_mean``, ``label_smoothing``.
_NOT_TRUTH_WORD = re.compile(
    r"(^|_)(num|n|max|min|sizes?|shapes?|lens?|lengths?|dims?|counts?|dtype|device|means?|stds?|vars?|scales?"
    r"|smoothing|height|width|h|w|names|embeddings?|embeds?|features?|feats?|prototypes?)(_|$)", re.I
)


#: Container methods that store a tensor and launch nothing (``group.append(image)``:
#: vit-pytorch's NaViT groups images by their shapes' Python ints). What they store may
#: launch kernels itself: see :meth:`_BodyScan._computes`. No name a tensor's method has
#: too (``add``, ``put``): ``total = total.add(t)`` on a parameter of unknown kind launches.
_STORING_METHODS = frozenset({"append", "extend", "insert", "appendleft", "put_nowait", "setdefault"})

_BUILTINS = frozenset(
    {"isinstance", "len", "print", "str", "repr", "int", "float", "bool", "getattr", "hasattr",
     "range", "list", "tuple", "dict", "set", "zip", "enumerate", "type", "any", "all", "id"}
)


class _BodyScan(cst.CSTVisitor):
    """What a loop body does: tensor ops launched, IoU-like calls, indexing by the loop variable."""

    def __init__(self, rule: PerSampleLoop, loop_names: set[str]) -> None:
        super().__init__()
        self.rule = rule
        self.loop_names = loop_names
        self.tensor_ops = 0
        self.iou_call: str | None = None
        self.indexes_by_loop_var = False
        #: The body calls what the loop variable picks (``self.adapt_convs[i](xs[i])``,
        #: ``getattr(self, f"head{i}")(x)``): another module or function on each pass.
        self.calls_what_the_pass_picks = False
        #: Names bound to what the pass picks (``m = getattr(self, f"pathway{i}_stem")``).
        self._picked: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._picked_by_the_pass(node.value):
            self._picked.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self._picked_by_the_pass(node.func) or (isinstance(node.func, cst.Name) and node.func.value in self._picked):
            self.calls_what_the_pass_picks = True
        context = self.rule.context
        qualified = context.qualify(node.func)
        name = dotted_name(node.func) or ""
        if _IOU_NAME.search(name.rsplit(".", 1)[-1]):
            self.iou_call = name
        if qualified is not None and qualified.startswith("torch."):
            # Kernels, not ``torch._assert`` / ``torch.jit.is_scripting`` / ``isinstance`` checks,
            # nor work on host tensors alone (``torch.where(labels[i] == eos)`` of labels the
            # loop masks in host memory before their move: open_flamingo), which launches none.
            tensors = any(context.is_tensor(arg.value) for arg in node.args)
            if classify_torch_callable(qualified) == "tensor" and not (tensors and self._stays_on_the_host(node)):
                self.tensor_ops += 1
        elif (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value not in NON_TENSOR_METHODS
            and context.is_tensor(node.func.value)
        ):
            # (``h[i].cuda()`` moves it; ``h[i].copy_(g[i])`` copies a device tensor into it)
            if not self._stays_on_the_host(node, node.func.value):
                self.tensor_ops += 1
        elif self.iou_call == name:
            self.tensor_ops += 1
        elif (
            qualified is None
            and not (isinstance(node.func, cst.Name) and node.func.value in _BUILTINS)
            and any(context.is_tensor(arg.value) for arg in node.args)
            and not self._all_on_the_host(node.args)
        ):
            if not (isinstance(node.func, cst.Attribute) and node.func.attr.value in _STORING_METHODS):
                self.tensor_ops += 1  # ``self.normalize(image)``: a helper processing a tensor
            elif any(self._computes(arg.value) for arg in node.args):
                self.tensor_ops += 1  # ``losses.append((pred[i] - t) ** 2)``: the stored value is computed

    def _stays_on_the_host(self, call: cst.Call, receiver: cst.BaseExpression | None = None) -> bool:
        """The call reads and makes host tensors only: its receiver (a method's), every
        argument that may be a tensor and its result live in host memory (not
        ``torch.as_tensor(h[i], device="cuda")`` nor ``h[i].copy_(g[i])``: a copy per sample)."""
        context = self.rule.context
        return ((receiver is None or context.on_host(receiver)) and self._all_on_the_host(call.args)
                and context.on_host(call))

    def _all_on_the_host(self, args) -> bool:
        """Every argument that may be a tensor (of a tensor kind, or of unknown kind) lives in
        host memory: ssd.pytorch's ``match(..., truths, defaults, ..., loc_t, conf_t, idx)``
        fills host tensors from the targets, of unknown kind, which are on the device."""
        context = self.rule.context
        return all(context.on_host(arg.value) for arg in args if context.kind_of(arg.value) is not Kind.PYTHON)

    def _picked_by_the_pass(self, func: cst.BaseExpression) -> bool:
        """``modules[i]`` or ``getattr(obj, f"conv{i}")``, with ``i`` a loop variable: a
        tensor is not callable, so what is picked is a module or a function, not a sample
        (when called: here, or through a name bound to it, see :meth:`visit_Assign`)."""
        if isinstance(func, cst.Subscript):
            return any(
                isinstance(element.slice, cst.Index) and self._names_a_loop_variable(element.slice.value)
                for element in func.slice
            )
        return (
            isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr"
            and len(func.args) >= 2 and self._names_a_loop_variable(func.args[1].value)
        )

    def _names_a_loop_variable(self, node: cst.CSTNode) -> bool:
        finder = _NameFinder(self.loop_names)
        walk(node, finder)
        return finder.found

    def _computes(self, value: cst.BaseExpression) -> bool:
        """A stored tensor that is computed where it is stored: arithmetic, a comparison,
        indexing by a tensor (``boxes[boxes[:, 2] > 0]``), a call that returns one (a helper
        of the project, ``self.loss_single(pred[i], t)``, that no rule above counts). A name,
        an attribute and a view (``images[i]``) launch nothing."""
        context = self.rule.context
        if isinstance(value, (cst.Name, cst.Attribute)) or not context.is_tensor(value):
            return False
        if isinstance(value, cst.Subscript):
            return any(
                isinstance(element.slice, cst.Index) and context.is_tensor(element.slice.value)
                for element in value.slice
            )
        return True

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for element in node.slice:
            index = element.slice
            value = index.value if isinstance(index, cst.Index) else None
            if isinstance(value, cst.Name) and value.value in self.loop_names:
                self.indexes_by_loop_var = True
            elif isinstance(value, cst.Tuple) and any(
                isinstance(e.value, cst.Name) and e.value.value in self.loop_names for e in value.elements
            ):
                self.indexes_by_loop_var = True


class _NameFinder(cst.CSTVisitor):
    """Whether an expression reads one of ``names`` as a variable (``self.i`` does not read ``i``)."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)  # (not a keyword's name)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value in self.names


class PerSampleLoop(Rule):
    """Flags Python loops over the samples of a batch whose body launches tensor ops.

    ## What it does
    Finds `for` loops that walk a batch one sample at a time — over
    `range(len(targets))`, `range(x.shape[0])`, `range(batch_size)`, a list of
    per-sample tensors, or `enumerate` / `zip` of them — and launch tensor
    operations in the body (typically a loss per image). `len()` of a list of
    tensors counts samples only when it is named like them: a list `torch.cat` or
    `torch.stack` takes (eight flips of one batch), or one in the list branch of
    `isinstance(outputs, (list, tuple))`, is no batch. A loop that carries
    state from one iteration to the next through a call (`hidden =
    self.cell(x[t], hidden)`: the time steps of a recurrent layer; or, statements
    apart, `updated = optimizer([filter], x[t])` then `filter = updated[0]`: a
    tracker adapting frame by frame) is sequential by nature and is not flagged
    (a list the body appends each result to, stacked on the last pass, carries
    nothing), nor is one whose variables name pieces of every
    sample (`for student_chunk, label_chunk in ...`, `for lvl, (h, w) in
    enumerate(spatial_shapes)`, `for layer_index, layer_out in
    enumerate(outputs)`: levels, layers, scales, stages, branches, views,
    crops, skip connections and heads), or whose one list does (`for index, i in
    enumerate(skips)`, nnFormer's decoder), nor one that calls what the loop variable picks
    (`self.adapt_convs[i](xs[i])`, `getattr(self, f"head{i}")(x)`, also through a
    local: `m = getattr(self, f"stem{i}"); m(x[i])`: each pass
    runs its own weights, a branch of the network rather than a sample), nor
    one that only stores each sample
    (`group.append(image)` launches nothing; `out.append(x * 2)` does), nor
    one that runs a backward pass on every pass (`accelerator.backward(loss)`:
    gradient accumulation, micro-batches split to fit in memory), nor one that
    pairs each item with the whole batch's ground truth (`(flow_preds[i] -
    flow_gt).abs()`: RAFT's loss over refinement steps; a sample would be paired
    with its own truth, `targets[i]`), unless it hands its index to a call that
    may pick the sample's truth. Work on host tensors launches no kernels: a call
    counts only when its receiver, an argument that may be a tensor (of unknown
    kind too) or its result may be on the device (open_flamingo masks a
    `.clone()` of its loader's host labels per sample before moving them: not
    flagged; `h[i].copy_(g[i])` of a device `g`, or `torch.as_tensor(h[i],
    device="cuda")`, is).

    ## Why is this bad?
    Each iteration launches the same kernels again for a handful of elements:
    B times the launch overhead, and usually a host-side shape check
    (`if targets.shape[0] > 0`) that blocks pipelining. In the seed
    detection loss the per-image loop took 938 ms per step; concatenating took
    25 ms, padding + masking 1.8 ms, and a fused kernel 0.63 ms.

    ## Example
    ```python
    for i in range(len(targets_list)):
        n = targets_list[i].shape[0]
        loss_sum += generalized_box_iou(pred[i, :n], targets_list[i]).sum()
    ```

    ## Use instead
    Pad the targets to a fixed number of slots in `collate_fn`, compute the
    loss on the whole batch and mask the padding:
    ```python
    from synclint.ops import giou_loss
    loss = giou_loss(pred, padded_targets)  # fused C++/CUDA, forward and backward
    ```

    ## Fix safety
    A loop that sums a per-sample loss over `pred[i, :n]` and `targets[i]`
    is rewritten to pad the targets inside the loss (`pad_sequence`), mask the
    padding from the per-sample counts and sum once (unsafe), only when the loss
    is elementwise per box: `synclint.ops.giou_loss`, a functional elementwise
    loss with `reduction="none"`, an inline elementwise expression of the slice
    and target, or a function of the module that indexes only the last
    dimension (`b[..., 0]`) and divides only by clamped positive values. A
    reducing loss (`F.mse_loss(p, t).sum()`) or a pairwise one (`cdist`) gets no
    fix. The count must be read after the loop only as `max(total, k)` in
    arithmetic with the loss sum. A batch with no boxes gives a 0-d tensor
    where the original gave `0.0`; an empty list of targets now raises.
    """

    code = "SL301"
    name = "per-sample-loop"
    TOKENS = TENSOR_EVIDENCE | {"iou", "ioU", "iOu", "iOU", "Iou", "IoU", "IOu", "IOU"}  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        # Per-sample work on a host copy launches no kernels (the loop below in INVALID
        # does the same on a tensor that may be on the device).
        "import torch\ndef f(x: torch.Tensor):\n    h = x.cpu()\n    for i in range(h.shape[0]):\n"
        "        h[i] = torch.relu(h[i])\n    return h\n",
        # A prediction per refinement step, each against the whole batch's truth (RAFT's
        # sequence loss): the passes are steps, not samples.
        "import torch\ndef sequence_loss(flow_preds, flow_gt, valid, gamma=0.8):\n    n_predictions = len(flow_preds)\n"
        "    flow_loss = 0.0\n    for i in range(n_predictions):\n        i_weight = gamma ** (n_predictions - i - 1)\n"
        "        flow_pred = flow_preds[i]\n        i_loss = (flow_pred - flow_gt).abs()\n"
        "        flow_loss += i_weight * (valid[:, None] * i_loss).mean()\n    return flow_loss\n",
        # Each correction step's masks against the same target masks (SAM 2's loss).
        "import torch\nclass Loss(torch.nn.Module):\n    def forward(self, outputs, targets):\n"
        "        target_masks = targets.unsqueeze(1).float()\n        src_masks_list = outputs['masks']\n        total = 0\n"
        "        for src_masks, ious in zip(src_masks_list, outputs['ious']):\n"
        "            total = total + self.focal(src_masks, target_masks) + ious.mean()\n        return total\n",
        # The outputs of each flow of a normalizing flow, unpacked from the model's output.
        "import torch\nclass FlowLoss(torch.nn.Module):\n    def forward(self, model_output):\n"
        "        z, log_s_list, attn_list = model_output\n        total = 0\n"
        "        for i, attn in enumerate(attn_list):\n            total = total + torch.log(attn).sum()\n"
        "        return total\n",
        # The outputs of a self-ensemble: eight flips of one batch (RCAN), counted by
        # ``len`` of a list that ``torch.cat`` takes, not samples.
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        sr_list = [self.model(x.flip(-1)), self.model(x), self.model(x.flip(-2))]\n"
        "        for i in range(len(sr_list)):\n            sr_list[i] = torch.flip(sr_list[i], [-1])\n"
        "        return torch.cat(sr_list, dim=0).mean(dim=0, keepdim=True)\n",
        # Each sub-discriminator's outputs, in the list branch of an isinstance check.
        "import torch\nclass AdvLoss(torch.nn.Module):\n    def forward(self, outputs):\n"
        "        if isinstance(outputs, (tuple, list)):\n            loss = 0.0\n"
        "            for i, outputs_ in enumerate(outputs):\n                loss = loss + torch.mean((1 - outputs_) ** 2)\n"
        "            return loss / (i + 1)\n        return torch.mean((1 - outputs) ** 2)\n",
        # A stem per pathway, picked by name and called through a local (SlowFast's stems).
        "import torch\nclass Stem(torch.nn.Module):\n    def forward(self, x):\n        for pathway in range(len(x)):\n"
        "            m = getattr(self, 'pathway{}_stem'.format(pathway))\n            x[pathway] = m(x[pathway])\n"
        "        return x\n",
        # Frames a tracker adapts to one after another: the filter the optimizer returns for one
        # frame is the one the next frame's update starts from (pytracking's LWL).
        "import torch\nclass Net(torch.nn.Module):\n    def forward(self, feats, filter):\n        preds = []\n"
        "        for i in range(feats.shape[0]):\n            pred = self.decoder(self.apply_filter(filter, feats[i]))\n"
        "            preds.append(pred)\n            if i < feats.shape[0] - 1:\n"
        "                updated = self.optimizer([filter], feats[i], torch.sigmoid(pred))\n"
        "                filter = updated[0]\n        return torch.stack(preds)\n",
        # One module per iteration (litgpt's MoE: each expert has its own weights).
        "import torch\nfrom torch import nn\nclass MoE(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.experts = nn.ModuleList(nn.Linear(4, 4) for _ in range(n))\n        self.gate = nn.Linear(4, n)\n"
        "    def forward(self, x):\n        masks = self.gate(x) > 0\n        for mask, expert in zip(masks, self.experts):\n"
        "            x = x + expert(x) * mask.float()\n        return x\n",
        "import torch\nfor i in range(10):\n    layers.append(torch.nn.Linear(2, 2))\n",
        # The branches of a multi-scale block (score_sde's RefineBlock): its own conv per input.
        "import torch\nclass Refine(torch.nn.Module):\n    def forward(self, xs):\n        hs = []\n"
        "        for i in range(len(xs)):\n            hs.append(self.adapt_convs[i](xs[i]))\n        return hs\n",
        # A loss per output layer of a detector, each of another grid size.
        "import torch\ndef loss(predictions, targets):\n    total = 0\n"
        "    for layer_index, layer_predictions in enumerate(predictions):\n"
        "        total = total + torch.sigmoid(layer_predictions).sum()\n    return total\n",
        "import torch\ndef f(xs):\n    for x in xs:\n        print(x)\n",
        # numpy's functions on host arrays (pointMLP's ``compute_overall_iou``): ``np`` names
        # a module, whatever ``np.sum(...)`` would say of a name bound to a tensor.
        "import numpy as np\nimport torch\ndef iou(pred, target):\n    pred_np, target_np = pred.cpu().numpy(), target.cpu().numpy()\n"
        "    out = []\n    for i in range(pred.size(0)):\n        inter = np.sum(np.logical_and(pred_np[i] == 1, target_np[i] == 1))\n"
        "        out.append(inter / np.sum(target_np[i] == 1))\n    return out\n",
        "import torch\ndef f(x: torch.Tensor):\n    for _ in range(3):\n        x = torch.relu(x)\n    return x\n",
        "import torch\ndef f(blocks, x):\n    for block in blocks:\n        x = block(x)\n    return x\n",
        # Python arithmetic on each image's shape, the images only stored in lists.
        "import torch\nfrom typing import List\nfrom torch import Tensor\n"
        "def group(images: List[Tensor], patch: int):\n    groups, g = [], []\n    for image in images:\n"
        "        h, w = image.shape[-2:]\n        n = (h // patch) * (w // patch)\n        g.append(image)\n"
        "        if n > 64:\n            groups.append(g)\n    return groups\n",
        # Levels of a feature pyramid, not samples.
        "import torch\ndef proposals(memory, spatial_shapes: torch.Tensor):\n    out = []\n"
        "    for lvl, (h, w) in enumerate(spatial_shapes):\n        out.append(torch.zeros(h, w, device=memory.device))\n"
        "    return out\n",
        # Chunks of the sequence (torchtune's chunked distillation loss), not samples.
        "import torch\ndef loss(student_logits, labels, n):\n    labels = [t.reshape(-1) for t in labels.tensor_split(n, dim=1)]\n"
        "    total = 0.0\n    for student_chunk, label_chunk in zip(student_logits, labels):\n"
        "        total += torch.nn.functional.cross_entropy(student_chunk, label_chunk)\n    return total\n",
        # Gradient accumulation: each pass runs a whole forward and backward on a micro-batch.
        "import torch\ndef step(model, batch_samples, accelerator, losses):\n    for i, batch in enumerate(batch_samples):\n"
        "        loss = model(**batch).loss * len(batch_samples)\n        accelerator.backward(loss)\n"
        "        losses.append(loss.detach())\n",
        "import torch\ndef f(targets):\n    n = len(targets)\n    for i in range(n):\n        print(i)\n",
        "import torch\nfor epoch in range(5):\n    train(model)\n",
        "import torch\ndef f(q, k, v):\n    for x in [q, k, v]:\n        x.mul_(2)\n",
        "import torch\nfrom typing import Iterable\ndef f(parameters: Iterable[torch.Tensor]):\n"
        "    for p in parameters:\n        p.grad.zero_()\n",
        "import torch\ndef f(x: torch.Tensor, output_size):\n    for i in range(len(output_size)):\n"
        "        x = x.narrow(i, 0, output_size[i])\n",
        "import torch\ndef check(targets):\n    for target in targets:\n        boxes = target['boxes']\n"
        "        torch._assert(len(boxes.shape) == 2, 'boxes must be 2-d')\n",
        "import torch\nclass RNN(torch.nn.Module):\n    def forward(self, x, hidden=None):\n        result = []\n"
        "        seq_len = x.shape[0]\n        for i in range(seq_len):\n            hidden = self.cell(x[i], hidden)\n"
        "            result.append(hidden[0])\n        return torch.stack(result, 0)\n",
        # A list appended to and rebuilt from itself on every pass carries state: the next
        # pass appends to the normalised results.
        "import torch\ndef f(gt_boxes, gt_classes, batch_size):\n    counts = [gt_boxes[0]]\n"
        "    for i in range(batch_size):\n        valid = gt_classes[i] > -1\n"
        "        counts.append(torch.sum(gt_boxes[i][valid]))\n"
        "        counts = list(torch.softmax(torch.stack(counts), 0))\n    return counts\n",
    )
    INVALID = (
        # Host tensors filled per sample from device ones (ssd.pytorch's ``match``): the
        # targets, of unknown kind, may be on the device.
        Invalid("import torch\ndef loss_fn(targets, priors, num):\n    loc_t = torch.Tensor(num, 8, 4)\n"
                "    for idx in range(len(targets)):\n        truths = targets[idx][:, :-1]\n"
                "        match(0.5, truths, priors, loc_t, idx)\n    return loc_t\n", 4, 5, None),
        # Each image's labels picked from the whole batch's by a mask of the pass (YOLO's
        # validation): a pass per sample, though ``targets`` is read whole.
        Invalid(
            "import torch\ndef val(preds, targets):\n    out = []\n    for si, pred in enumerate(preds):\n"
            "        b = targets[:, 0] == si\n        labels = targets[b]\n        out.append(box_iou(pred[:, :4], labels[:, 1:]))\n"
            "    return out\n",
            4, 5,
        ),
        # A length named after labels is no ground truth (wenet's CIF).
        Invalid(
            "import torch\ndef cif(fires, frames, alphas, threshold, batch_size):\n    list_ls = []\n"
            "    max_label_len = torch.round(alphas.sum(-1)).int().max()\n    for b in range(batch_size):\n"
            "        fire = fires[b, :]\n        l = torch.index_select(frames[b, :, :], 0, torch.nonzero(fire >= threshold).squeeze())\n"
            "        pad_l = torch.zeros([int(max_label_len - l.size(0)), 4])\n        list_ls.append(torch.cat([l, pad_l], 0))\n"
            "    return torch.stack(list_ls, 0)\n",
            5, 5,
        ),
        # The loop hands its index to the helper, which may pick the sample's truth by it.
        Invalid(
            "import torch\ndef loss_fn(preds: torch.Tensor, targets):\n    total = 0\n    for i in range(preds.shape[0]):\n"
            "        total = total + single(preds[i] - targets, i)\n    return total\n",
            4, 5,
        ),
        # Results collected per sample, stacked on the last pass (effdet's target assigner).
        Invalid(
            "import torch\ndef targets(gt_boxes, gt_classes, batch_size):\n    counts = []\n"
            "    for i in range(batch_size):\n        valid = gt_classes[i] > -1\n"
            "        counts.append(torch.sum(gt_boxes[i][valid]))\n        if i == batch_size - 1:\n"
            "            counts = torch.stack(counts)\n    return counts\n",
            4, 5,
        ),
        # The running sum is logged before it is added to: what it is rebound to does not
        # come from the call it was passed to (``print``), so no state is carried.
        Invalid(
            "import torch\ndef loss_fn(pred: torch.Tensor, targets):\n    total = 0.0\n"
            "    for i in range(len(targets)):\n        print(total)\n"
            "        total = total + torch.nn.functional.l1_loss(pred[i], targets[i])\n    return total\n",
            4, 5,
        ),
        # A running sum rebound statements after the per-sample call: no recurrence.
        Invalid(
            "import torch\ndef loss_fn(pred: torch.Tensor, targets):\n    total = 0.0\n"
            "    for i in range(len(targets)):\n        loss_i = torch.nn.functional.l1_loss(pred[i], targets[i])\n"
            "        total = total + loss_i\n    return total\n",
            4, 5,
        ),
        # The kernels launch in what is appended: a loss per sample, a boolean mask per sample.
        Invalid(
            "import torch\ndef loss_fn(pred: torch.Tensor, targets):\n    losses = []\n"
            "    for i in range(len(targets)):\n        losses.append((pred[i] - targets[i]) ** 2)\n    return losses\n",
            4, 5,
        ),
        Invalid(
            "import torch\nfrom typing import List\ndef keep(gt_boxes: List[torch.Tensor]):\n    kept = []\n"
            "    for boxes in gt_boxes:\n        kept.append(boxes[boxes[:, 2] > 0])\n    return kept\n",
            5, 5,
        ),
        # A helper of the module that returns a tensor (kornia's segmentation overlay).
        Invalid(
            "import torch\nfrom typing import Optional, Union\nclass Seg:\n"
            "    def colorize(self, mask: torch.Tensor, colors: torch.Tensor) -> torch.Tensor:\n"
            "        return colors[mask.argmax(0)]\n"
            "    def overlay(self, semantic_masks: Optional[Union[torch.Tensor, list[torch.Tensor]]] = None):\n"
            "        outputs = []\n        for semantic_mask in semantic_masks:\n"
            "            colors = self.palette(semantic_mask.size(0))\n"
            "            outputs.append(self.colorize(semantic_mask, colors))\n        return outputs\n",
            8, 9,
        ),
        Invalid(
            "import torch\nfrom typing import List\ndef f(gt_boxes: List[torch.Tensor], total):\n"
            "    for t in gt_boxes:\n        total = total.add(t)\n    return total\n",
            4, 5,
        ),
        # Samples, with the id of the chunk each came from: not pieces of every sample.
        Invalid(
            "import torch\nclass Loss(torch.nn.Module):\n    def forward(self, preds, targets, chunk_ids):\n"
            "        total = 0\n        for pred, target, chunk_id in zip(preds, targets, chunk_ids):\n"
            "            total = total + torch.nn.functional.l1_loss(pred, target)\n        return total\n",
            5, 9,
        ),
        Invalid(
            "import torch\ndef loss_fn(pred, targets_list):\n    batch_size = len(targets_list)\n"
            "    for i in range(batch_size):\n        t = targets_list[i]\n        s = torch.abs(pred[i, : t.shape[0]] - t).sum()\n",
            4, 5,
        ),
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    for i in range(x.shape[0]):\n        x[i] = torch.relu(x[i])\n",
            3, 5,
        ),
        Invalid(
            "import torch\nfrom typing import List\ndef f(gt_boxes: List[torch.Tensor]):\n    out = 0\n"
            "    for t in gt_boxes:\n        out = out + t.sum()\n    return out\n",
            5, 5,
        ),
        Invalid(
            "import torch\ndef f(p: torch.Tensor, ts):\n    for i in range(p.size(0)):\n        p[i].mul_(2)\n",
            3, 5,
        ),
        Invalid(
            "import torch\ndef f(preds: torch.Tensor, targets):\n    for i, t in enumerate(targets):\n        torch.nn.functional.l1_loss(preds[i], t)\n",
            3, 5,
        ),
        Invalid(
            "import torch\ndef f(preds, targets):\n    for i in range(len(targets)):\n        generalized_box_iou(preds[i], targets[i])\n",
            3, 5,
        ),
        Invalid('import torch\ndef loss_fn(pred, targets):\n    total = 0\n    acc = 0.0\n    for i in range(len(targets)):\n        n = targets[i].shape[0]\n        total += n\n        acc += torch.abs(pred[i, :n] - targets[i]).sum()\n    return acc / max(total, 1)\n', 5, 5, 'import torch\ndef loss_fn(pred, targets):\n    total = 0\n    acc = 0.0\n    padded_targets = torch.nn.utils.rnn.pad_sequence(targets, batch_first=True)\n    valid = torch.nn.utils.rnn.pad_sequence([t.new_ones(len(t), dtype=torch.bool) for t in targets], batch_first=True)\n    losses = torch.abs(pred[:, : padded_targets.shape[1]] - padded_targets)\n    total += valid.sum()\n    acc += torch.where(valid.view(valid.shape + (1,) * (losses.dim() - 2)), losses, 0).sum()\n    return acc / total.clamp(min=1)\n'),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._batch_sized: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._batch_sized.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._batch_sized.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._is_batch_size(node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._batch_sized[-1].add(target.target.value)

    def _is_batch_size(self, node: cst.BaseExpression) -> bool:
        """``len(seq)``, ``x.shape[0]``, ``x.size(0)``, ``batch_size``-like names."""
        if isinstance(node, cst.Name):
            return node.value in self._batch_sized[-1] or bool(_BATCH_NAME.match(node.value))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len":
            return bool(node.args) and self._is_batch(node.args[0].value)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
            index = node.slice[0].slice if len(node.slice) == 1 else None
            return (
                node.value.attr.value == "shape"
                and isinstance(index, cst.Index)
                and isinstance(index.value, cst.Integer)
                and index.value.value == "0"
            )
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
            return len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer) and node.args[0].value.value == "0"
        return False

    def _per_sample_iteration(self, node: cst.For) -> str | None:
        """"direct" when the loop walks per-sample tensors, "indexed" when it walks
        sample indices (the body must then index by the loop variable), else None."""
        iterable = node.iter
        if self.context.flow.is_loader(iterable):
            return None  # a loader yields whole batches
        if _walks_pieces(node):
            return None  # chunks of every sample, not one sample each
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            name = iterable.func.value
            if name == "range" and len(iterable.args) == 1:
                return "indexed" if self._is_batch_size(iterable.args[0].value) else None
            if name in ("enumerate", "zip"):
                if any(self.context.kind_of(a.value) is Kind.MODULE for a in iterable.args):
                    return None  # ``zip(masks, self.experts)``: one module per iteration (MoE experts, layers)
                if any(self._is_sample_sequence(a.value) for a in iterable.args):
                    return "direct"
                if name == "enumerate" and iterable.args and self.context.is_device_tensor(iterable.args[0].value):
                    return "direct"  # ``for i, row in enumerate(batch_tensor)``: one row per iteration
                return None
        return "direct" if self._is_sample_sequence(iterable) else None

    def _is_sample_sequence(self, node: cst.BaseExpression) -> bool:
        """A per-sample collection by name (``targets``, ``gt_boxes``): a list of
        parameters or of ``[query, key, value]`` is a sequence of tensors too, but
        not a batch."""
        return is_sample_collection(node) or self.context.kind_of(node) is Kind.TENSOR_DICT_SEQUENCE

    def _is_batch(self, node: cst.BaseExpression) -> bool:
        """``len(batch)`` counts samples when ``batch`` is a tensor or a sample collection."""
        return self.context.is_tensor(node) or self._is_sample_sequence(node)

    def visit_For(self, node: cst.For) -> None:
        iteration = self._per_sample_iteration(node)
        if iteration is None:
            return
        loop_names = {n.value for n in _names(node.target)}
        if _is_recurrence(node.body):
            return  # ``h = self.cell(x[t], h)``: each step needs the previous one, nothing to batch
        if _backpropagates(node.body):
            return  # gradient accumulation over micro-batches: split on purpose, to fit in memory
        if _against_whole_truth(node, loop_names):
            return  # ``(flow_preds[i] - flow_gt).abs()``: each pass is a whole batch's prediction (a stage)
        scan = _BodyScan(self, loop_names)
        walk(node.body, scan)
        if scan.tensor_ops == 0 or (iteration == "indexed" and not scan.indexes_by_loop_var):
            return
        if scan.calls_what_the_pass_picks:
            return  # ``self.adapt_convs[i](xs[i])``: each pass runs its own weights (a branch, not a sample)
        if scan.iou_call:
            advice = (
                f"the body computes a box IoU loss (`{scan.iou_call}`): pad the targets and call "
                "the fused `synclint.ops.giou_loss(pred, targets)` once per batch"
            )
        else:
            advice = "concatenate the samples, or pad them to a fixed size and mask, and launch once per batch"
        self.report(
            node,
            f"Per-sample Python loop launches the same kernels once per sample; {advice}"
            f"{self.context.flow.context_phrase(enclosing_only=True)}",
            self.propose_fix(node),
        )


def _is_recurrence(body: cst.BaseSuite) -> bool:
    """The loop carries state through a call: a name the body passes to a call before
    binding it is bound later in the body to what that call computed (``hidden =
    self.cell(x[i], hidden)``, ``h, c = step(x[t], (h, c))``; or, statements apart,
    pytracking's per-frame filter: ``updated = optimizer([filter], labels)`` then
    ``filter = updated[0]``, the next frame reading it).

    Time steps of a recurrent layer or of a decoder, or frames a tracker adapts to one
    after another, are sequential by nature: the iterations cannot be launched as one
    batch. Accumulating (``total = total + loss``, ``acc += loss``, ``total =
    total.add(loss)``) is no recurrence: the running value is not passed to a call (or,
    ``print(total)``, not to one whose result it is rebound to), and the sum can be taken once.
    """
    scan = _CarriedState(_collections(body))
    scan.block(body)
    return scan.found


class _Appended(cst.CSTVisitor):
    """Names a body appends to (``results.append(r)``): they collect what the passes compute."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STORING_METHODS and isinstance(func.value, cst.Name):
            self.names.add(func.value.value)


def _collections(body: cst.BaseSuite) -> set[str]:
    scan = _Appended()
    walk(body, scan)
    return scan.names


class _CarriedState:
    """Reads the statements of a loop body in order (into ``if``/``with``/``try`` blocks and
    inner loops, not into functions it defines): for each name it binds, which names
    still holding the last pass's value were passed to the calls its value comes from,
    and whether a name is rebound to a value that came from itself so."""

    def __init__(self, collections: set[str]) -> None:
        #: Names the body appends each pass's result to: stacking them (on the last pass,
        #: effdet's ``if last_sample: out = torch.stack(out)``) collects, it carries nothing.
        self.collections = collections
        #: How many ``if`` blocks the statement read now is in: a collection rebound outside
        #: any (``xs = list(torch.stack(xs).cumsum(0))`` every pass) carries state.
        self.branches = 0
        self.bound: set[str] = set()
        #: For each name the body binds, the names holding the last pass's value that a call
        #: was given on the way to its value (``updated = optimizer([filter], x)``: ``filter``;
        #: then ``filter = updated[0]``: ``filter`` too).
        self.carried_into: dict[str, set[str]] = {}
        self.found = False

    def block(self, body: cst.BaseSuite) -> None:
        statements = body.body if isinstance(body, cst.IndentedBlock) else (body,)
        for statement in statements:
            if self.found:
                return
            self.statement(statement)

    def statement(self, statement: cst.CSTNode) -> None:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                self.small(small)
            return
        branching = isinstance(statement, cst.If)
        self.branches += branching
        for block in _blocks_of(statement):
            self.block(block)
        self.branches -= branching

    def small(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            self.assign([t.target for t in small.targets], small.value)
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and small.value is not None:
            self.assign([small.target], small.value)

    def assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        # What a call given the last pass's value computed, directly or through names bound
        # from such calls: a name rebound to it carries state (not ``print(total)`` then
        # ``total = total + loss``: the sum does not come from what ``print`` returned).
        passed = _passed_to_calls(value)
        carried = passed - self.bound
        for name in names_read(value) | passed:
            carried |= self.carried_into.get(name, set())
        for target in targets:
            for name in (n.value for n in _names(target)):
                if name in carried and not (name in self.collections and self.branches):
                    self.found = True
                self.bound.add(name)
                self.carried_into[name] = carried


def _blocks_of(statement: cst.CSTNode) -> list[cst.BaseSuite]:
    blocks: list[cst.BaseSuite] = []
    if isinstance(statement, (cst.If, cst.While, cst.For, cst.With, cst.Try, cst.TryStar)):
        blocks.append(statement.body)
    orelse = getattr(statement, "orelse", None)
    while isinstance(orelse, cst.If):  # ``elif``
        blocks.append(orelse.body)
        orelse = orelse.orelse
    if isinstance(orelse, cst.Else):
        blocks.append(orelse.body)
    for handler in getattr(statement, "handlers", ()):
        blocks.append(handler.body)
    final = getattr(statement, "finalbody", None)
    if isinstance(final, cst.Finally):
        blocks.append(final.body)
    return blocks


class _CallArguments(cst.CSTVisitor):
    """Names read in the arguments of calls (``f(x, [h])``: ``x`` and ``h``; not ``t`` of
    ``t.add(y)``, a receiver, nor names of nested functions or lambdas)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            self.names.update(names_read(arg.value))


def _passed_to_calls(node: cst.CSTNode) -> set[str]:
    scan = _CallArguments()
    walk(node, scan)
    return scan.names


class _BackwardCall(cst.CSTVisitor):
    """Whether a body calls a backward pass (not in a function it defines)."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in BACKWARD_METHODS:
            self.found = True


def _backpropagates(body: cst.BaseSuite) -> bool:
    """The body runs a backward pass (``accelerator.backward(loss)``, ``loss.backward()``):
    each pass is a whole forward and backward on a micro-batch (gradient accumulation,
    per-sample gradients), split so the activations fit in memory; launching once per
    batch would undo the split, not speed it up."""
    scan = _BackwardCall()
    walk(body, scan)
    return scan.found


class _Exprs(cst.CSTVisitor):
    """The names an expression reads (not ``x`` of ``self.x``), and whether it reads a
    subscript by a name of ``loop_names`` (the loop variables, and masks of the pass:
    ``preds[i]``, ``targets[targets[:, 0] == i]``, ``targets[b]`` after ``b = targets[:,
    0] == i``): the name of what is so subscripted is not read whole."""

    def __init__(self, loop_names: set[str]) -> None:
        super().__init__()
        self.loop_names = loop_names
        self.whole: set[str] = set()
        self.per_pass: set[str] = set()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        if not any(names_read(element) & self.loop_names for element in node.slice):
            return True
        self.per_pass.add((dotted_name(node.value) or "").rsplit(".", 1)[-1])
        for element in node.slice:
            walk(element, self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)  # (not a keyword's name)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        # ``torch.index_select(targets, 0, idx[i])``, ``targets.narrow(0, i, 1)``: a
        # subscript spelled as a call.
        func = node.func
        if callee_name(func) not in _PICKERS:
            return True
        if isinstance(func, cst.Attribute) and dotted_name(func.value) != "torch":
            source, indices = func.value, list(node.args)
        elif node.args:
            source, indices = node.args[0].value, list(node.args[1:])
        else:
            return True
        if not any(names_read(arg.value) & self.loop_names for arg in indices):
            return True
        self.per_pass.add((dotted_name(source) or "").rsplit(".", 1)[-1])
        for arg in indices:
            walk(arg.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.whole.add(node.value)


#: Calls that pick elements of their first argument (or of the tensor they are a method
#: of) by the others: a subscript spelled as a call.
_PICKERS = frozenset({"index_select", "gather", "take", "take_along_dim", "narrow", "select", "masked_select"})


class _PassReads(cst.CSTVisitor):
    """How a loop body pairs what each pass walks with ground truth: ``flow_preds[i] -
    flow_gt`` or ``loss(src_masks, target_masks)`` pairs a pass's item with the whole
    truth; ``targets[i]`` (or ``targets[targets[:, 0] == i]``) picks the pass's own."""

    def __init__(self, loop_names: set[str], items: set[str]) -> None:
        super().__init__()
        self.loop_names = loop_names
        #: The loop's counters (``range``'s index, ``enumerate``'s count), not its items.
        self.indices = loop_names - items
        #: Names holding what the pass walks: the loop's items, and names bound to them
        #: or to a subscript by a loop variable (``flow_pred = flow_preds[i]``).
        self.items = set(items)
        #: Names whose value depends on the pass: the loop variables and what the body
        #: binds from them (or from the items).
        self.derived = set(loop_names)
        #: Masks of the pass: names bound from a comparison with what depends on the pass's
        #: counter (``b = targets[:, 0] == si``, ``idx = (batch_idx == i).nonzero()``), not
        #: from arithmetic on it (``scale = 2 ** i``: a level's stride).
        self.masks: set[str] = set()
        self.walked: set[str] = set()
        self.truth_per_pass = False
        self.paired_with_whole_truth = False
        #: The body hands a loop variable itself to a call (``self.single(preds[i],
        #: targets, i)``), or a mask or container of it (``targets[:, 0] == i``, ``[i]``):
        #: the callee may pick the sample's truth by it.
        self.passes_loop_variable = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _read(self, node: cst.CSTNode) -> _Exprs:
        # A subscript by the loop's variables, or by a mask of the pass (``b = targets[:, 0]
        # == si``, then ``targets[b]``), picks the pass's own rows.
        reads = _Exprs(self.loop_names | self.masks)
        walk(node, reads)
        self.walked |= reads.per_pass
        self.truth_per_pass = self.truth_per_pass or any(_TRUTH_NAME.search(name) for name in reads.per_pass)
        return reads

    def _of_item(self, reads: _Exprs) -> bool:
        return bool(reads.per_pass) or bool(reads.whole & self.items)

    def _whole_truth(self, reads: _Exprs) -> bool:
        return any(_TRUTH_NAME.search(name) and not _NOT_TRUTH_WORD.search(name)
                   for name in reads.whole - self.items - self.derived)

    def visit_Assign(self, node: cst.Assign) -> None:
        reads = self._read(node.value)
        bound = {n.value for target in node.targets for n in _names(target.target)}
        if self._of_item(reads):
            self.items |= bound
        if reads.per_pass or reads.whole & (self.items | self.derived):
            # Bound from the pass (``b = targets[:, 0] == si``, then ``labels = targets[b]``):
            # truth so named is the pass's own.
            if not self._of_item(reads) and (reads.whole & self.masks or _compares(node.value, self.derived - self.items)):
                self.masks |= bound
            self.derived |= bound
            self.truth_per_pass = self.truth_per_pass or any(_TRUTH_NAME.search(name) for name in bound)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._pair([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._pair([node.left, *(target.comparator for target in node.comparisons)])

    def visit_Call(self, node: cst.Call) -> None:
        if any(isinstance(arg.value, cst.Name) and arg.value.value in self.indices or self._built_from_index(arg.value)
               for arg in node.args):
            self.passes_loop_variable = True
        self._pair([arg.value for arg in node.args])

    def _built_from_index(self, node: cst.BaseExpression) -> bool:
        """A mask or a container of the loop's counter (``targets[:, 0] == i``, ``[i]``):
        handed to a call, it may pick the sample's truth there as well as the counter."""
        if not isinstance(node, (cst.Comparison, cst.List, cst.Tuple, cst.Set, cst.Dict)):
            return False
        reads = _Exprs(self.loop_names)
        walk(node, reads)
        return bool(reads.whole & self.indices) and not reads.per_pass

    def _pair(self, operands: list[cst.CSTNode]) -> None:
        reads = [self._read(operand) for operand in operands]
        if any(self._of_item(r) for r in reads) and any(self._whole_truth(r) and not self._of_item(r) for r in reads):
            self.paired_with_whole_truth = True


class _Comparisons(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.found = False

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.found = self.found or bool(names_read(node) & self.names)


def _compares(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether ``node`` holds a comparison that reads one of ``names``."""
    finder = _Comparisons(names)
    walk(node, finder)
    return finder.found


def _against_whole_truth(node: cst.For, loop_names: set[str]) -> bool:
    """Each pass pairs what it walks with the same ground truth, read whole: RAFT's
    sequence loss (``for i in range(len(flow_preds))``: ``(flow_preds[i] - flow_gt).abs()``,
    weighted ``gamma ** (n - i - 1)``), SAM 2's loss over correction steps (``zip(
    src_masks_list, ious_list)``, each step's masks against ``target_masks``). A pass over
    samples reads each sample's truth (``targets[i]``, ``targets[targets[:, 0] == i]``,
    ``targets[b]`` by a mask ``b`` of the pass); a name only shaped like truth, a quantity
    or setting of it (``target_size``, ``num_labels``, ``target_mean``), is no truth;
    pairing one sample with the whole batch's truth would be a bug, so the walked items
    are predictions of the whole batch, one per refinement step, head or deep-supervision
    output: not samples. Not when the loop hands its variable to a call
    (``self.single(preds[i], targets, i)`` may pick the sample's truth inside), nor when
    it walks ground truth itself."""
    iterable = node.iter
    walked: set[str] = set()
    items = {n.value for n in _names(node.target)}
    function = iterable.func.value if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) else None
    if function in ("enumerate", "zip"):
        walked.update((dotted_name(arg.value) or "").rsplit(".", 1)[-1] for arg in iterable.args)
        if function == "enumerate" and isinstance(node.target, (cst.Tuple, cst.List)) and node.target.elements:
            items -= {n.value for n in _names(node.target.elements[0].value)}  # the counter
    elif function == "range":
        items = set()  # indices, not items
    else:
        walked.add((dotted_name(iterable) or "").rsplit(".", 1)[-1])
    reads = _PassReads(loop_names, items)
    walk(node.body, reads)
    walked |= reads.walked
    walked.discard("")
    return (
        reads.paired_with_whole_truth
        and not reads.truth_per_pass
        and not reads.passes_loop_variable
        and not any(_TRUTH_NAME.search(name) for name in walked)
    )


def _walks_pieces(node: cst.For) -> bool:
    """Every name the loop binds (``enumerate``'s counter aside) names a piece:
    ``for student_chunk, label_chunk in zip(...)``; or ``enumerate``'s counter does
    (``for lvl, (h, w) in enumerate(spatial_shapes)``: it counts levels). One
    sample-named variable beside a ``chunk_id`` still walks samples. Or the one list it walks
    is named for pieces: ``for index, i in enumerate(skips)`` (nnFormer's decoder, over the
    encoder's skip connections, one whole-batch tensor per stage)."""
    target = node.target
    iterable = node.iter
    if (
        isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate"
        and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
    ):
        counter = target.elements[0].value
        if isinstance(counter, cst.Name) and _PIECE_NAME.search(counter.value):
            return True
        target = target.elements[1].value
        iterable = iterable.args[0].value if iterable.args else iterable
    if isinstance(iterable, (cst.Name, cst.Attribute)) and _PIECE_NAME.search((dotted_name(iterable) or "").rsplit(".", 1)[-1]):
        return True
    names = list(_names(target))
    return bool(names) and all(_PIECE_NAME.search(name.value) for name in names)


def _names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names(element.value)
