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


    def forward_tensor(self, input):
        batch_sizes = None
        self.check_forward_args(input, None, batch_sizes)


class Head(torch.nn.Module):
    def sizes(self, counts: Tensor):
        return int(counts[0])

    def forward(self, x):
        lengths = x.sum(0)
        return self.sizes(lengths)
'''


def _codes(source: str) -> list[tuple[str, int, int]]:
    return sorted((f.code, f.line, f.column) for f in check_source(textwrap.dedent(source), "m.py", include_cold=True))


def _in_order(source: str, path: str) -> list[tuple[int, int, str]]:
    """(line, column, code) of each finding in ``source`` checked as ``path``, in the order
    the check reports them, cold ones included."""
    return [(f.line, f.column, f.code) for f in check_source(source, path, include_cold=True)]


def _at(source: str, code: str) -> list[tuple[int, int]]:
    """(line, column) of each finding of rule ``code`` in ``source``."""
    return [(line, column) for found, line, column in _codes(source) if found == code]


def test_packed_sequence_batch_sizes_are_host_through_unpacking_and_call_sites():
    # Lines 10 (reached through two call sites passing ``batch_sizes`` on) and 24 (right
    # after unpacking) read a PackedSequence's batch_sizes: host. ``sorted_indices``
    # lives with the data (line 25), and ``Head.sizes`` gets a device tensor (line 34).
    # ``forward_tensor`` passes ``None`` (a name only ever None): no device tensor either.
    assert _codes(RNN) == [("SL201", 25, 21), ("SL201", 39, 16)]


REBOUND_TO_HOST = """
    import torch
    from torch import nn


    class Sift(nn.Module):
        def extract(self, image):
            return image.cpu().numpy()

        def describe(self, image):
            return image.cpu().numpy()

        def forward(self, data, extra):
            image = data["image"]
            image = image.cpu()
            pred = []
            for k in range(len(image)):
                img = image[k]
                if "size" in data:
                    img = img[:, :4]
                pred.append(self.extract(img))
                other = image[k]
                if k > 0:
                    other = extra[k]
                for step in range(2):
                    self.describe(other)
                    other = extra
            return pred
"""


def test_a_name_rebound_to_a_host_tensor_is_passed_as_one():
    # glue-factory's SIFT: `image = image.cpu()` after `image = data["image"]`, then
    # `extract_single_image(image[k])`: the helper's `.cpu()` copies a host tensor. Not
    # where a branch may rebind the name to a device tensor (`other = extra[k]`), nor in a
    # loop whose earlier pass rebinds it.
    assert _codes(REBOUND_TO_HOST) == [("SL201", 11, 16), ("SL201", 15, 17)]


SHADOWED_OR_REBOUND_BY_A_WALRUS = """
    import torch
    from torch import nn


    class Sift(nn.Module):
        def each(self, image):
            return image.cpu().numpy()

        def logged(self, image):
            return image.cpu().numpy()

        def tested(self, image):
            return image.cpu().numpy()

        def forward(self, data, extra):
            img = data["image"].cpu()
            out = [self.each(img) for img in extra]
            print(img := extra[0])
            self.logged(img)
            mask = data["mask"].cpu()
            if (mask := extra[1]) is not None:
                self.tested(mask)
            return out
"""


def test_a_host_name_shadowed_by_a_comprehension_or_rebound_by_a_walrus_is_not_passed_as_one():
    # `img` holds a host tensor, but the comprehension's own `img` is each of `extra`, and a
    # walrus (in an expression statement, or in an `if` test) rebinds the name to a device
    # tensor: the helpers' `.cpu()` copy device tensors.
    assert _at(SHADOWED_OR_REBOUND_BY_A_WALRUS, "SL201") == [(8, 16), (11, 16), (14, 16), (17, 15), (19, 15), (21, 16)]

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
            none = None
    '''))
    assert host_names(tree.body[0], packed_sequences(tree.body[0]), lambda value: False) == {"sizes", "other", "none"}


def test_call_sites_in_tests_do_not_make_a_parameter_host(tmp_path):
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")  # one project: pkg and its tests
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "rope.py").write_text(textwrap.dedent('''
        import torch

        def rope_loss(position_ids: torch.Tensor, device):
            return position_ids.to(device=device)


        def helper(counts: torch.Tensor, device):
            return counts.to(device=device)

        def main(model, device):
            for batch in loader:
                helper(torch.tensor([1, 2]), device)
    '''))
    (tmp_path / "tests" / "test_rope.py").write_text(textwrap.dedent('''
        import torch
        from pkg.rope import rope_loss

        def test_rope():
            rope_loss(torch.arange(4), "cuda")
    '''))
    options = RunOptions(jobs=1, use_cache=False, include_cold=True)
    findings = [f for f in lint_paths([tmp_path], Settings(root=tmp_path), options) if "pkg" in f.path]
    # ``helper`` gets a host tensor from the step: copied to the device every step. The loss
    # (a step) is no host-to-device copy: only a test passes it a host tensor.
    assert sorted((f.code, f.line, f.column) for f in findings) == [("SL403", 9, 12)]


OVERRIDDEN_BASE = '''
import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence


class Base(torch.nn.Module):
    def expected_size(self, batch_sizes: Tensor | None):
        return int(batch_sizes[0]) if batch_sizes is not None else 0

    def check_args(self, input: Tensor, batch_sizes: Tensor | None):
        return self.expected_size(batch_sizes)


class GRU(Base):
    def check_args(self, input: Tensor, batch_sizes: Tensor | None):
        return self.expected_size(batch_sizes)

    def forward(self, packed: PackedSequence):
        data, batch_sizes, _, _ = packed
        return self.check_args(data, batch_sizes)


class LSTM(Base):
    def check_args(self, input: Tensor, batch_sizes: Tensor | None):
        return self.expected_size(batch_sizes) + 1

    def forward(self, packed: PackedSequence):
        data, batch_sizes, _, _ = packed
        return self.check_args(data, batch_sizes)
'''


def test_a_base_method_every_subclass_overrides_does_not_decide_what_its_callees_get():
    # ``Base.check_args`` never runs in the project (both subclasses replace it and nothing
    # calls it), so what it passes on says nothing: the two overrides pass host
    # ``batch_sizes``, and line 9 reads a host tensor.
    assert _codes(OVERRIDDEN_BASE) == []


def test_a_base_method_a_subclass_inherits_still_counts():
    # ``RNN`` inherits ``Base.check_args`` and hands it a device tensor (``x.sum(0)``):
    # line 9 reads a device tensor on the host.
    source = OVERRIDDEN_BASE + '''

class RNN(Base):
    def forward(self, x: Tensor):
        return self.check_args(x, x.sum(0))
'''
    assert _codes(source) == [("SL201", 9, 16)]


def test_superseded_methods_are_base_methods_no_project_code_runs(tmp_path):
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    key = str(tmp_path / "m.py")
    index = ProjectIndex({key: summarize(textwrap.dedent(OVERRIDDEN_BASE))}, tmp_path)
    assert [q for k, q in index.resolved_calls() if index.superseded((k, q))] == ["Base.check_args"]


def test_a_base_forward_every_subclass_overrides_still_runs_as_a_model():
    # ``Base.forward`` has no call the index sees (``model(x)`` runs it) and ``Sub`` replaces
    # it, but the project builds ``Base`` itself: its call decides what ``expected_size``
    # gets too. It passes a device tensor, so line 6 reads a device value every step.
    source = '''
import torch


def expected_size(x: torch.Tensor, sizes: torch.Tensor) -> int:
    return int(sizes.max())


class Base(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return expected_size(x, x.new_ones(4))


class Sub(Base):
    def forward(self, x: torch.Tensor):
        return expected_size(x, torch.tensor([1, 2, 3]))
'''
    assert _codes(source) == [("SL201", 6, 12)]


LOADER_FIELDS = """
import torch
def evaluation(model, data_loader, device):
    result = []
    for n, (image, question, question_id) in enumerate(data_loader):
        image = image.to(device, non_blocking=True)
        answers = model(image, question)
        for answer, ques_id in zip(answers, question_id):
            result.append(int(ques_id.item()))
        print(image.sum().item(), question_id.sum().item())
    for batch in data_loader:
        x = batch.to(device)
        y = batch.cpu()
        z = model(x).cpu()
    for batch in data_loader:
        x = batch.to(torch.float16)
        y = batch.cpu()
    for batch in data_loader:
        y = batch.cpu()
    return result
"""


def test_what_a_loop_over_a_loader_moves_to_the_device_shows_its_batches_are_on_the_host():
    # BLIP's train_vqa.evaluation: the loop moves the images and reads `question_id`, a
    # field the loader's default collate built and nothing moved, per answer.
    found = _in_order(LOADER_FIELDS, "vqa.py")
    assert found == [
        (10, 15, "SL201"),  # the moved images are on the device
        (12, 13, "SL401"),
        (14, 13, "SL201"),  # the model's output
        (17, 13, "SL201"),  # a cast is no move: nothing says where the batch is
        (19, 13, "SL201"),  # nor a loop that moves nothing
    ]


BATCH_FIELDS = """
import torch
def final_test(data_loader, model, device):
    for batch in data_loader:
        videos = batch[0]
        chunk_nb = batch[3]
        videos = videos.to(device, non_blocking=True)
        output = model(videos)
        print(int(chunk_nb[0].cpu().numpy()), output.cpu())
def test_video(test_loader, model, device):
    for idx, batch in enumerate(test_loader):
        lq = batch["L"].to(device)
        gt = batch["H"] if "H" in batch else None
        output = model(lq)
        print(gt[:, 0, ...].data.squeeze().float().cpu(), output.data.cpu())
def evaluate(dataloader, model):
    for ii, (imgs, sizes, gt_bboxes_) in enumerate(dataloader):
        sizes = [sizes[0][0].item(), sizes[1][0].item()]
        boxes = model.predict(imgs, [sizes])
        print(list(gt_bboxes_.numpy()))
def no_evidence(dataloader, model):
    for batch in dataloader:
        first = batch[0]
        print(first.cpu(), batch[1].item())
"""


def test_fields_of_a_batch_the_loop_shows_on_the_host_stay_there():
    # VideoMAE's final_test moves `videos = batch[0]` and reads `chunk_nb = batch[3]`;
    # KAIR's test loop moves `batch["L"]` and copies `batch["H"] if ... else None` back
    # (through `.data`); simple-faster-rcnn's eval reads a field with `.numpy()`, which
    # only a host tensor allows. A loop that shows nothing says nothing (the last one).
    found = _in_order(BATCH_FIELDS, "evaluate.py")
    assert found == [
        (9, 47, "SL201"),  # the model's output, on the device (`videos` moved without a wait)
        (12, 14, "SL401"),
        (15, 59, "SL201"),  # the output through `.data`, on the device
        (24, 15, "SL201"),
        (24, 28, "SL201"),
    ]


MASKED_ON_THE_HOST = """
import torch
def train_one_epoch(model, loader, device_id, media):
    for batch in loader:
        images = batch[0].to(device_id, non_blocking=True)
        input_ids = batch[1].squeeze(1)
        labels = input_ids.clone()
        for i in range(labels.shape[0]):
            ends = torch.where(labels[i] == media)[0]
            if labels[i][0] != media:
                labels[i][0] = -100
        model(images, labels.to(device_id)).backward()
def no_evidence(model, loader, device_id, media):
    for batch in loader:
        labels = batch[1].squeeze(1).clone()
        if labels[0] != media:
            labels[0] = -100
        model(batch[0], labels).backward()
"""


def test_a_copy_of_a_host_batch_s_field_is_masked_on_the_host():
    # open_flamingo's train_one_epoch: the loop moves the images to ``device_id`` (a GPU
    # index: evidence of a move), so ``batch[1]`` is the loader's host tensor, and so are
    # the squeezed field and its clone, which the loop masks per sample before the move:
    # no per-sample kernels (SL301), no `torch.where` (SL101) or comparison (SL202) that
    # waits. Only the upload of the masked labels remains. A loop that moves nothing says
    # nothing of its batch.
    found = _in_order(MASKED_ON_THE_HOST, "train_utils.py")
    assert found == [(12, 23, "SL403"), (16, 12, "SL202")]


MOVED_AFTER_COMPUTING = """
import torch
from torch.autograd import Variable
def train_epoch(model, data_loader):
    for batch_idx, data in enumerate(data_loader):
        x_unsorted = data['x'].float()
        y_len_unsorted = data['len']
        y_len_max = max(y_len_unsorted)
        x_unsorted = x_unsorted[:, 0:y_len_max, :]
        y_len, order = torch.sort(y_len_unsorted, 0, descending=True)
        x = torch.index_select(x_unsorted, 0, order)
        x = Variable(x).cuda()
        model(x).sum().backward()
def moved_another(model, data_loader):
    for batch_idx, data in enumerate(data_loader):
        y_len_unsorted = data['len']
        y_len_max = max(y_len_unsorted)
        y_len, order = torch.sort(y_len_unsorted, 0, descending=True)
        x = model.hidden
        x = Variable(x).cuda()
        model(data['x'][:, 0:y_len_max], order).sum().backward()
"""


def test_moving_what_the_loop_computed_from_its_batch_shows_the_batch_is_on_the_host():
    # GraphRNN's train_vae_epoch: the loop uploads a value it computed from the batch
    # (``x = Variable(x).cuda()``), so the batch's ``len`` is the loader's host tensor: its
    # max and the slices it bounds wait for nothing. A move of something else says nothing.
    found = _in_order(MOVED_AFTER_COMPUTING, "train.py")
    assert found == [(17, 21, "SL202"), (21, 30, "SL201")]


FILLED_IN_PLACE = """
import torch
def val_epoch(val_loader, model):
    for cur_iter, (inputs, labels, meta) in enumerate(val_loader):
        inputs = inputs.cuda(non_blocking=True)
        for key, val in meta.items():
            meta[key] = val.cuda(non_blocking=True)
        ori_boxes = meta["ori_boxes"]
        preds = model(inputs, meta["boxes"])
        print(ori_boxes.cpu(), meta["metadata"].cpu(), labels.cpu())
def test_loop(test_loader, model, device):
    for batch in test_loader:
        lq = batch["L"].to(device)
        batch["lq_path"] = batch["gt_path"]
        gt = batch["H"]
        print(gt.cpu(), model(lq).cpu())
def helper_moves(loader, model):
    for batch in loader:
        x = batch["x"].cuda()
        to_device(batch)
        print(batch["y"].cpu(), model(x))
"""


def test_a_batch_the_loop_fills_in_place_may_hold_device_tensors():
    # SlowFast's val_epoch moves `meta`'s values in place: `meta["ori_boxes"]` is then a
    # device tensor, and copying it back waits. Storing another item of the batch
    # (`batch["lq_path"] = batch["gt_path"]`) moves nothing; a helper named for moving
    # (`to_device(batch)`) may move its items in place.
    found = _in_order(FILLED_IN_PLACE, "val.py")
    assert found == [
        (10, 15, "SL201"),  # ori_boxes: a value the loop moved into `meta`
        (10, 32, "SL201"),
        (13, 14, "SL401"),
        (16, 25, "SL201"),  # the model's output (`gt` is a host field: no finding)
        (19, 13, "SL401"),
        (21, 15, "SL201"),  # `to_device(batch)` may have moved "y"
    ]


BATCHES_CHANGED_IN_PLACE = """
import torch
def replaced(loader, model, device):
    for batch in loader:
        batch["x"] = batch["x"].cuda()
        labels = batch["labels"]
        print(batch["x"].sum().item(), labels.sum().item())
def replaced_through_a_name(loader, model, device):
    for batch in loader:
        for key in batch:
            value = batch[key].to(device)
            batch[key] = value
        print(batch["labels"].sum().item())
def updated(loader, model, device):
    for batch in loader:
        batch.update({k: v for k, v in batch.items()})
        x = batch["x"].to(device)
        print(batch["labels"].sum().item())
def moves_its_own_fields(loader, model, device):
    for data in loader:
        data.to(device)
        y = data["y"]
        print(y.sum().item())
def moved_by_a_helper(loader, model, device):
    for batch in loader:
        move_(batch, device)
        inputs = to_cuda(batch)
        labels = batch["labels"]
        print(labels.sum().item(), batch["x"].to(device))
def host_fields_written_in_place(loader, model, device):
    for images, labels in loader:
        labels[labels == 255] = 0
        images = images.to(device)
        print(labels.sum().item())
def replaced_in_a_field(loader, model, device):
    for batch in loader:
        inputs = batch["inputs"]
        inputs["ids"] = inputs["ids"].cuda()
        print(inputs["ids"].sum().item())
def rebound_before_a_device_helper(loader, model, device):
    for images, target in loader:
        images = images.to(device)
        print(target.sum().item())
        target = target.cuda()
        score = metric_gpu(model(images), target)
"""


def test_a_batch_the_loop_changes_in_place_may_hold_device_tensors():
    # A dictionary whose fields the loop replaces with device tensors (at a key it spells,
    # that field only; at computed keys, through a name, by `update`, every field), an object that moves its own fields (PyG's `Data.to`, Hugging
    # Face's `BatchEncoding.to`, as a statement) and one handed with a device to a helper
    # may hold device tensors: reading them waits, also through a name bound to a field.
    # Writing a constant into a host field (`labels[...] = 0`) leaves it on the host, and
    # what the loop hands over after rebinding the name (`target = target.cuda()`) is no batch.
    found = _in_order(BATCHES_CHANGED_IN_PLACE, "train.py")
    assert found == [
        (5, 22, "SL401"),
        (7, 15, "SL201"),  # (`labels`, of a key the loop never replaced, stays on the host: no finding)
        (11, 21, "SL401"),
        (13, 15, "SL201"),
        (17, 13, "SL401"),
        (18, 15, "SL201"),
        (21, 9, "SL401"),
        (23, 15, "SL201"),
        (29, 15, "SL201"),
        (29, 36, "SL401"),
        (33, 18, "SL401"),
        (38, 25, "SL401"),  # a field of the batch (`inputs = batch["inputs"]`), copied blocking
        (39, 15, "SL201"),  # a nested dictionary changed through a name bound to it
        (42, 18, "SL401"),
        (44, 18, "SL401"),  # the GPU helper gets the copy, not the batch: line 43 is no sync
    ]


FIELDS_REPLACED_AT_SPELLED_KEYS = """
import torch
from torch.utils.data import DataLoader
def validate(model, dataset, device):
    loader = DataLoader(dataset, num_workers=2)
    for val_data in loader:
        val_images = val_data["image"].to(device)
        val_data["pred"] = model(val_images)
        val_data["label"] = val_data["label"].cpu()
        image = val_data["image"].cpu()
        pred = val_data["pred"][0].cpu()
        key = "label"
        other = val_data[key].cpu()
"""


def test_a_batch_whose_fields_the_loop_replaces_at_spelled_keys_keeps_its_other_fields_on_the_host():
    # MONAI's dints validation stores the prediction in the batch (`val_data["pred"] =
    # sliding_window_inference(...)`), then copies the batch's own label and image back:
    # host tensors of a loader with workers, no sync. The prediction, and a field at a key
    # the loop computes, may be device tensors.
    found = _in_order(FIELDS_REPLACED_AT_SPELLED_KEYS, "val.py")
    assert found == [(7, 22, "SL401"), (11, 16, "SL201"), (13, 17, "SL201")]


A_BATCH_WITH_DEVICE_FIELDS_READ_WHOLE = """
import torch
from torch.utils.data import DataLoader
def validate(model, dataset, device, optimizer):
    loader = DataLoader(dataset, num_workers=2)
    for val_data in loader:
        val_images = val_data["image"].to(device)
        val_data["pred"] = model(val_images)
        pred = val_data.get("pred").cpu()
        popped = val_data.pop("pred").cpu()
        for value in val_data.values():
            value.cpu()
        def closure():
            return val_data["pred"].cpu()
        optimizer.step(closure)
        label = val_data["label"].cpu()
"""


def test_a_batch_whose_fields_the_loop_replaces_at_spelled_keys_is_not_on_the_host_as_a_whole():
    # Only the batch's fields at the other keys the loop spells stay on the host: what
    # the batch gives by a method (`get`, `pop`, `values`) may be the prediction, on the
    # device, and so is the prediction a closure in the loop reads.
    found = _in_order(A_BATCH_WITH_DEVICE_FIELDS_READ_WHOLE, "val.py")
    assert found == [(7, 22, "SL401"), (9, 16, "SL201"), (10, 18, "SL201"), (12, 13, "SL201"), (14, 20, "SL201")]


A_BATCH_NAME_BOUND_ANEW = """
import torch
from torch.utils.data import DataLoader
def validate(model, dataset, device):
    loader = DataLoader(dataset, num_workers=2)
    for val_data in loader:
        val_images = val_data["image"].to(device)
        val_data["pred"] = model(val_images)
    val_data = torch.zeros(3)
    first = val_data[0].item()
    values = val_data.tolist()
"""


def test_a_name_bound_anew_after_the_loop_holds_no_batch_with_device_fields():
    # The keys the loop stored device values at belong to its batch, not to what the name
    # holds next: a host tensor.
    found = _in_order(A_BATCH_NAME_BOUND_ANEW, "val.py")
    assert found == [(7, 22, "SL401")]


ELEMENTS_MOVED_IN_A_COMPREHENSION = """
import torch
def evaluate(model, data_loader, device):
    for images, targets in data_loader:
        images = list(img.to(device) for img in images)
        outputs = model(images)
        res = {target["image_id"].item(): output for target, output in zip(targets, outputs)}
        labels = [t["labels"].cpu() for t in targets]
    for images, targets in data_loader:
        images = list(img.to(device) for img in images)
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        print(targets[0]["boxes"].sum().item())
"""


def test_a_loop_that_moves_the_elements_of_a_batch_in_a_comprehension_shows_its_batches_on_the_host():
    # torchvision's detection references (copied into many projects) move each image of the
    # batch in a comprehension and read the targets they left alone: host tensors, no sync
    # (sovit-123's fasterrcnn pipeline, s20-I). Targets moved the same way are device tensors.
    found = _in_order(ELEMENTS_MOVED_IN_A_COMPREHENSION, "engine.py")
    assert found == [(5, 23, "SL302"), (10, 23, "SL302"), (11, 24, "SL302"), (12, 15, "SL201")]


ELEMENTS_OF_A_FIELD_MOVED_IN_A_COMPREHENSION = """
import torch
def make_cams(model, data_loader):
    for pack in data_loader:
        label = pack["label"][0]
        outputs = [model(img[0].cuda(non_blocking=True)) for img in pack["img"]]
        valid = torch.nonzero(label)[:, 0]
    for pack in data_loader:
        label = pack["label"][0]
        outputs = [model(img[0].cuda(non_blocking=True)) for img in pack[key]]
        valid = torch.nonzero(label)[:, 0]
"""


def test_a_comprehension_that_moves_the_elements_of_a_field_shows_the_batch_on_the_host():
    # CCT's make_cam.py moves each image of ``pack["img"]`` and reads ``pack["label"]``, which
    # it leaves alone: a host tensor, whose nonzero waits for nothing. A field by a computed
    # key is not followed: the loader may yield device tensors.
    found = _in_order(ELEMENTS_OF_A_FIELD_MOVED_IN_A_COMPREHENSION, "cams.py")
    assert found == [(11, 17, "SL101")]


ELEMENT_NAMES_REUSED_OUTSIDE_THE_COMPREHENSION = """
import torch
def evaluate(model, data_loader, device):
    for images, targets in data_loader:
        sizes = [img.shape for img in images]
        extra = [img.cuda() for img in model.extra()]
        print(targets[0].item())
    for images, targets in data_loader:
        sizes = [img.shape for img in images]
        for img in model.extra():
            img = img.cuda()
        print(targets[0].item())
    for images, targets in data_loader:
        nested = [[img.cuda() for img in model.extra()] for img in images]
        print(targets[0].item())
    for images, targets in data_loader:
        extra = [images.cuda() for images in model.extra()]
        print(targets[0].item())
"""


def test_a_name_that_iterates_a_batch_only_in_a_comprehension_moves_nothing_of_it_elsewhere():
    # A comprehension's target is its own: a later ``img`` (another comprehension's, a loop's,
    # an inner clause's over something else) moves what it holds, not an image of the batch,
    # and a target that shadows the batch's name moves none of it. The loader may yield
    # device tensors: the reads of targets may wait for the device.
    found = _in_order(ELEMENT_NAMES_REUSED_OUTSIDE_THE_COMPREHENSION, "engine.py")
    assert found == [(7, 15, "SL201"), (12, 15, "SL201"), (14, 20, "SL302"), (15, 15, "SL201"), (17, 18, "SL401"),
                     (18, 15, "SL201")]


ELEMENTS_OF_A_BATCH_MOVED_IN_PLACE = """
import torch
def evaluate(model, data_loader, device):
    for images, targets in data_loader:
        images = list(img.to(device) for img in images)
        for t in targets:
            t["boxes"] = t["boxes"].to(device)
        print(targets[0]["boxes"].sum().item())
    for images, targets in data_loader:
        images = list(img.to(device) for img in images)
        for t in targets:
            t.update({k: v.to(device) for k, v in t.items()})
        print(targets[0]["labels"].item())
"""


def test_a_loop_that_moves_the_elements_of_a_batch_in_place_changes_the_batch():
    # The images moved in a comprehension show a host loader, but the targets' dictionaries
    # are the batch's own: storing device values in them moves the batch in place, and
    # reading targets[0]["boxes"] may wait for the device.
    found = _in_order(ELEMENTS_OF_A_BATCH_MOVED_IN_PLACE, "engine.py")
    assert found == [(5, 23, "SL302"), (7, 26, "SL302"), (8, 15, "SL201"), (10, 23, "SL302"), (12, 26, "SL302"),
                     (13, 15, "SL201")]


NUMPY_OF_A_REBOUND_NAME = """
import torch
def predict(loader, model, device):
    for batch in loader:
        x = batch[0]
        x = model(x).cpu()
        print(x.numpy())
        print(batch[1].sum().item())
    for images, labels in loader:
        labels = labels.cpu()
        print(labels.numpy(), images.sum().item())
"""


def test_numpy_of_a_name_bound_to_something_else_says_nothing_of_the_batch():
    # `.numpy()` proves where the tensor it reads lives; once `x` holds the model's output
    # (or `labels` a copy), the batch may be on the device.
    found = _in_order(NUMPY_OF_A_REBOUND_NAME, "predict.py")
    assert found == [
        (6, 13, "SL201"),
        (8, 15, "SL201"),  # the batch's field
        (10, 18, "SL201"),
        (11, 31, "SL201"),  # the batch's field
    ]


DEVICE_FED_LOADERS = """
import torch
from torch.utils.data import DataLoader, TensorDataset
def train(model, loader, accelerator, device):
    model, loader = accelerator.prepare(model, loader)
    for x, labels in loader:
        x = x.to(accelerator.device)
        m = labels.sum().item()
    data = TensorDataset(torch.randn(100, 3).cuda(), torch.randint(0, 2, (100,)).cuda())
    cuda_loader = DataLoader(data, batch_size=10)
    for x, y in cuda_loader:
        x = x.to(device)
        m = y.sum().item()
"""


LOADERS_GIVEN_A_DEVICE = """
import torch
from torch.utils.data import DataLoader
def train(train_dl, dataset, model, device):
    loader = DeviceDataLoader(train_dl, device)
    for images, labels in loader:
        images = images.to(device)
        m = labels.sum().item()
    for i, (images, labels) in enumerate(prefetch(train_dl, device=device)):
        images = images.to(device)
        m = labels.sum().item()
    pinned = DataLoader(dataset, pin_memory=True, pin_memory_device="cuda", generator=torch.Generator(device=device))
    for images, labels in pinned:
        images = images.to(device, non_blocking=True)
        m = labels.sum().item()
    batches = [(x.cuda(), y.cuda()) for x, y in train_dl]
    for images, labels in batches:
        images = images.to(device)
        m = labels.sum().item()
    for images, labels in DataLoader(dev, 32):
        images = images.to(device)
        m = labels.sum().item()
def fabric(fabric, accelerator, train_loader, val_loader, test_loader, device):
    train_loader = fabric.setup_dataloaders(train_loader)
    for x, y in train_loader:
        x = x.to(device)
        m = y.sum().item()
    val_loader = fabric.setup_dataloaders(val_loader, move_to_device=False)
    for x, y in val_loader:
        x = x.to(device)
        m = y.sum().item()
    test_loader = accelerator.prepare_data_loader(test_loader)
    for x, y in test_loader:
        x = x.to(device)
        m = y.sum().item()
"""


def test_a_loader_wrapper_given_a_device_yields_device_batches():
    # A wrapper given a device (a prefetcher, the tutorials' `DeviceDataLoader`) moves the
    # batches there itself, as does a list of batches moved once: a field the loop moves
    # again says nothing of the others; so do the loaders Lightning Fabric sets up and
    # Accelerate prepares. A loader that pins for a device or samples with a device's
    # generator yields host batches.
    found = _in_order(LOADERS_GIVEN_A_DEVICE, "train.py")
    assert found == [
        (7, 18, "SL401"),
        (8, 13, "SL201"),
        (10, 18, "SL401"),
        (11, 13, "SL201"),
        (18, 18, "SL401"),
        (19, 13, "SL201"),  # a list of batches moved once
        (20, 27, "SL402"),
        (21, 18, "SL401"),  # a development set's loader yields host batches
        (26, 13, "SL401"),
        (27, 13, "SL201"),  # Lightning Fabric moves the batches of the loaders it sets up
        (30, 13, "SL401"),  # ... unless told not to
        (34, 13, "SL401"),
        (35, 13, "SL201"),  # as Accelerate's prepare_data_loader does
    ]

def test_a_loader_built_from_device_tensors_or_prepared_by_accelerate_yields_device_batches():
    # Accelerate's prepared loader places every batch on the device, and a loader over a
    # dataset of CUDA tensors yields CUDA tensors: moving one field proves nothing about
    # the others.
    found = _in_order(DEVICE_FED_LOADERS, "train.py")
    assert found == [
        (7, 13, "SL401"),
        (8, 13, "SL201"),  # the labels Accelerate put on the device
        (10, 19, "SL402"),
        (12, 13, "SL401"),
        (13, 13, "SL201"),  # a field of a CUDA dataset the loop did not move
    ]


DEFAULTED = """
import torch
def embedded_dropout(embed, words, dropout=0.1, scale=None):
    if scale:
        embed = scale.expand_as(embed) * embed
    return embed[words]
def scaled(embed, words, scale=None):
    if scale:
        embed = scale.expand_as(embed) * embed
    return embed[words]
class Model(torch.nn.Module):
    def forward(self, x):
        y = scaled(self.weight, x, scale=x.sum())
        return embedded_dropout(self.weight, x) + y + scaled(self.weight, x)
"""


def test_a_parameter_no_call_passes_holds_its_constant_default():
    # awd-lstm's `embedded_dropout(embed, words)`: every call leaves `scale` to its default
    # `None`, so `if scale:` tests None. One call passing a tensor keeps the test a sync.
    found = _in_order(DEFAULTED, "model.py")
    assert found == [(8, 8, "SL202")]


LOOP_CARRIED = """
    import torch
    def train(model, loader, opt, device):
        hidden = torch.zeros(2, 8)
        count = torch.zeros(())
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            noise = torch.randn(2, 8).to(hidden)
            print(hidden.sum().item(), count.item())
            out, hidden = model(x, hidden + noise)
            count += 1
            loss = out.sum()
            loss.backward()
            opt.step()
"""


def test_a_host_tensor_the_loop_rebinds_to_a_device_one_is_not_on_the_host_on_the_next_pass():
    # `hidden` starts on the host, but from the second batch on it is the model's output:
    # `.to(hidden)` uploads and `hidden.sum().item()` waits for the device, every step.
    # `count += 1` keeps a host tensor on the host.
    assert _codes(LOOP_CARRIED) == [("SL201", 9, 15), ("SL403", 8, 17)]


ACCUMULATED_IN_PLACE = """
    import torch
    def train_step(model, data_iterator, device, steps):
        tokens = torch.tensor(0, dtype=torch.int64)
        for _ in range(steps):
            inputs, labels = next(data_iterator)
            tokens += (labels != -100).sum()
        print(int(tokens))
        return tokens.to(device)
"""


def test_a_host_tensor_accumulated_in_place_in_a_loop_stays_on_the_host():
    # torchtitan's `local_valid_tokens += (labels != IGNORE_INDEX).sum()`: `+=` on a host
    # tensor is in place, so it is still in host memory (no read-back at `int(tokens)`), and
    # moving it after the loop is an upload.
    assert _codes(ACCUMULATED_IN_PLACE) == [("SL403", 9, 12)]


TO_A_HOST_TENSORS_DEVICE = """
    import torch
    def train(model, loader, opt, device):
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = torch.as_tensor(y)
            out = torch.softmax(model(x), dim=1)
            out.sum().backward()
            opt.step()
            pred = out.argmax(1).to(y.device)
            print(pred.sum().item())
            hits = (out.argmax(1).to(y) == y).float().mean().item()
            ones = torch.ones(3).to(y.device)
"""


def test_a_move_to_where_a_host_tensor_lives_keeps_the_read_after_it():
    # `.to(y.device)` / `.to(y)` of the loader's labels copies the predictions to the host. What
    # it made is not taken for a host tensor ("y is on the host" may be wrong: `torch.as_tensor`
    # of a CUDA tensor keeps it there, as in edm's `round_sigma`), so the `.item()` after it
    # carries the sync; of a host tensor, such a move uploads nothing (no SL403 at line 13).
    assert _codes(TO_A_HOST_TENSORS_DEVICE) == [("SL201", 11, 15), ("SL201", 12, 16)]


HOST_IN_EVERY_BRANCH = """
import torch

NV = 5
if NV > 3:
    mask = torch.zeros(NV, dtype=torch.bool)
else:
    mask = torch.ones(NV, dtype=torch.bool)
if NV > 4:
    partial = torch.zeros(NV)
loader = torch.utils.data.DataLoader(range(3))
for data in loader:
    a = mask.nonzero()
    b = partial.nonzero()
    if NV == 1:
        c = torch.zeros(NV)
    elif NV == 2:
        c = data.cuda()
    else:
        c = torch.ones(NV)
    c.nonzero()
    if NV == 1:
        d = torch.zeros(NV)
    elif NV == 2:
        d = torch.ones(NV)
    else:
        raise ValueError(NV)
    d.nonzero()
    if NV == 1: e = torch.zeros(NV)
    else: continue
    e.nonzero()
"""


def test_a_name_every_block_of_an_if_leaves_on_the_host_is_on_the_host_after_it():
    # pixel-nerf's eval script builds its view mask in an if/else at module level; a block
    # that raises or continues never reaches the code after the ``if``. Without an
    # ``else``, or with a block that moves it to the device, the name may hold anything.
    assert _at(HOST_IN_EVERY_BRANCH, "SL101") == [
        (14, 9),  # `partial`: the `if` has no `else`
        (21, 5),  # `c`: one block copies a batch to the device
    ]


HOST_LOADERS = """
import numpy as np
import torch
from torch.utils.data import DataLoader


def validation(model, dataset):
    workers = DataLoader(dataset=dataset, num_workers=8, batch_size=1)
    for iteration, data in enumerate(workers, 1):
        model.set_input(data[0], data[1])
        print(np.squeeze(data[0].cpu().numpy()), model.pred_seg.cpu())
    pinned = DataLoader(dataset, pin_memory=True)
    for images, labels in pinned:
        model.set_input(images, labels)
        print(labels.cpu())
    plain = DataLoader(dataset, num_workers=0)
    for images, labels in plain:
        model.set_input(images, labels)
        print(labels.cpu())
    spawned = DataLoader(dataset, num_workers=4, multiprocessing_context="spawn")
    for images, labels in spawned:
        model.set_input(images, labels)
        print(labels.cpu())
    for batch in workers:
        model.to_device(batch, "cuda")
        print(batch["x"].cpu())
"""


def test_a_loader_pinned_or_with_workers_yields_host_batches():
    # Attention-Gated-Networks' validation hands each batch to ``model.set_input``, which
    # copies it: the batch itself stays where the loader made it. Only CPU tensors can be
    # pinned, and forked workers cannot use CUDA, so such a loader makes host tensors; a
    # loader with no workers, or workers started another way, may not. A batch handed
    # with a device to a helper may be moved in place.
    assert _at(HOST_LOADERS, "SL201") == [
        (11, 50),  # the model's output
        (19, 15),  # no workers: the dataset may build device tensors
        (23, 15),  # spawned workers may use CUDA
        (26, 15),  # the batch given to a helper with a device
    ]


SUBCLASSED_LOADERS = """
import torch
from monai.data import DataLoader, ThreadDataLoader
from torch_geometric.loader import DataLoader as GraphLoader


def validate(model, dataset, graphs, device):
    loader = DataLoader(dataset, num_workers=2, batch_size=1)
    for val_data in loader:
        val_data["pred"] = model(val_data)
        val_data["label"] = val_data["label"].cpu()
        val_data["pred"] = val_data["pred"].cpu()
    graph_loader = GraphLoader(graphs, batch_size=32, pin_memory=True)
    for data in graph_loader:
        out = model(data)
        print(data.y.cpu(), out.cpu())
    threads = ThreadDataLoader(dataset, num_workers=2)
    for val_data in threads:
        val_data["pred"] = model(val_data)
        print(val_data["label"].cpu())
"""


def test_subclasses_of_torchs_loader_read_its_settings():
    # The auto3dseg templates validate with MONAI's DataLoader (workers: host batches), whose
    # fields the loop replaces only at "pred"; PyG's loader pins graphs, whose fields are
    # attributes. MONAI's ThreadDataLoader runs its transforms (maybe onto the device) in a
    # thread: unknown.
    # (The model's outputs are of unknown residency: it takes a whole host batch.)
    assert _at(SUBCLASSED_LOADERS, "SL201") == [
        (16, 29),  # the model's output, not the graph batch's field ``data.y``
        (20, 15),  # a thread loader's batch
    ]


LOSS_OF_HOST_TENSORS = """
import torch
import torch.nn as nn


class Exp:
    def vali(self, vali_loader, criterion):
        total = []
        for batch_x, batch_y in vali_loader:
            pred = self.model(batch_x.cuda(non_blocking=True))
            true = batch_y.cuda(non_blocking=True)
            loss = criterion(pred.detach().cpu(), true.detach().cpu())
            total.append(loss.item())
            on_device = criterion(pred, true.detach().cpu())
            total.append(on_device.item())
            other = self.head(pred.cpu())
            total.append(other.item())
"""


def test_a_loss_of_host_tensors_is_on_the_host():
    # Crossformer's validation takes its loss on copies of the prediction and target.
    assert [(line, column, code) for code, line, column in _codes(LOSS_OF_HOST_TENSORS)] == [
        (12, 30, "SL201"),  # the copies themselves
        (12, 51, "SL201"),
        (14, 41, "SL201"),
        (15, 26, "SL201"),  # one argument on the device
        (16, 31, "SL201"),
        (17, 26, "SL201"),  # not a loss: a module of unknown residency
    ]


LEFT_BY_A_JUMP = """
import torch


def search(loader, n):
    best = torch.zeros(n)
    for batch in loader:
        if batch.sum() > 0:
            best = batch.cuda()
            break
        else:
            best = torch.zeros(n)
        best.nonzero()
    best.nonzero()


def last_pass(loader, n):
    best = torch.zeros(n)
    for batch in loader:
        if batch.sum() > 0:
            best = batch.cuda()
            continue
        else:
            best = torch.zeros(n)
    best.nonzero()


def caught(x, n):
    best = torch.zeros(n)
    try:
        if x.sum() > 0:
            best = x.cuda()
            raise ValueError(n)
        else:
            best = torch.zeros(n)
    except ValueError:
        pass
    best.nonzero()
"""


def test_a_block_that_jumps_out_of_an_if_still_reaches_where_it_jumps():
    # A block that breaks or continues skips the code after its ``if`` but reaches the
    # code after the loop (``continue`` on the last pass too); one that raises inside a
    # ``try`` reaches its handlers and what follows. Only right after the ``if`` (line 13)
    # is ``best`` surely on the host.
    assert _at(LEFT_BY_A_JUMP, "SL101") == [
        (14, 5),
        (25, 5),
        (38, 5),
    ]


HOST_LOADERS_REWRAPPED = """
import torch
from torch.utils.data import DataLoader


def train(model, dataset, fabric, to_gpu):
    loader = DataLoader(dataset, num_workers=4, pin_memory=True)
    model, loader = fabric.setup(model, loader)
    for images, labels in loader:
        model(images)
        print(labels.sum().item())
    loader = DataLoader(dataset, num_workers=4, pin_memory=True)
    loader = to_gpu()
    for images, labels in loader:
        model(images)
        print(labels.sum().item())
    loader = DataLoader(dataset, num_workers=4, pin_memory=True)
    for images, labels in CudaPrefetcher(loader):
        model(images)
        print(labels.sum().item())
    for images, labels in tqdm(enumerate(iter(loader))):
        model(images)
        print(labels.sum().item())
"""


def test_a_loader_of_host_batches_rebound_or_wrapped_may_yield_device_batches():
    # Fabric's and accelerate's setup hand back a loader that moves its batches; a
    # prefetcher wraps the loader to upload the next batch. Only ``enumerate``, ``iter``
    # and progress bars pass the loader's own batches on.
    assert _at(HOST_LOADERS_REWRAPPED, "SL201") == [
        (11, 15),
        (16, 15),
        (20, 15),
    ]


LOSS_OF_DEVICE_TENSORS = """
import torch


def dice_loss(pred, gt):
    pred = pred.cuda()
    gt = gt.cuda()
    return 1 - 2 * (pred * gt).sum() / (pred + gt).sum()


def train(model, loader, criterion, device, alpha):
    for x, y in loader:
        outputs = model(x.to(device))
        targets = [{k: v.to(device) for k, v in t.items()} for t in y]
        loss = criterion(outputs["pred_logits"], targets, torch.tensor(alpha))
        print(loss.item())
        dice = dice_loss(outputs["pred_masks"].cpu(), y.cpu())
        print(dice.item())
"""


def test_a_loss_given_a_device_tensor_or_moving_its_inputs_is_not_on_the_host():
    # A loss mixes a CUDA prediction of unknown kind with a 0-dim CPU tensor (an
    # ``alpha``) without complaint, and a loss of the file's own that moves its inputs
    # to the device says what it returns, whatever its name.
    assert _at(LOSS_OF_DEVICE_TENSORS, "SL201") == [
        (16, 15),  # the loss given a CUDA prediction and a CPU scalar
        (17, 26),  # the copy of the prediction
        (18, 15),  # the file's own loss moves its inputs back
    ]


SPAWNED_WORKERS = """
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader


def train(model, dataset):
    loader = DataLoader(dataset, num_workers=4)
    for images, labels in loader:
        model(images)
        print(labels.sum().item())


if __name__ == "__main__":
    mp.set_start_method("spawn")
"""


def test_workers_started_by_spawn_may_build_device_tensors():
    # A file that sets the start method to ``spawn`` (or ``forkserver``) starts its loader's
    # workers fresh: they may initialise CUDA, and its dataset build device tensors.
    assert _at(SPAWNED_WORKERS, "SL201") == [(11, 15)]


HOST_LISTS = """
import torch


def evaluate(model, loader, fill):
    for batch in loader:
        logits = []
        for clip in batch:
            logits.append(model(clip.cuda(non_blocking=True)).cpu())
        stacked = torch.stack(logits)
        print(stacked.tolist())
        outputs = []
        for clip in batch:
            outputs.append(model(clip.cuda(non_blocking=True)))
        print(torch.stack(outputs).tolist())
        handed = []
        fill(handed)
        print(torch.cat(handed).tolist())
        late = []
        for clip in batch:
            if late:
                print(torch.stack(late).tolist())
            late.append(model(clip.cuda(non_blocking=True)))
        closed = []
        def keep(x):
            closed.append(x)
        keep(model(batch.cuda(non_blocking=True)))
        print(torch.cat(closed).tolist())
"""


def test_a_list_grown_only_with_host_tensors_stacks_into_a_host_tensor():
    # ClipBERT's `run_video_qa` copies each clip's logits to the host and stacks them after
    # the loop. A list grown with device outputs, handed to a helper that may fill it,
    # grown on a later pass before what reads it, or by a closure, may hold device tensors.
    assert [line for code, line, _column in _codes(HOST_LISTS) if code == "SL201" and line != 9] == [
        15, 18, 22, 28]


REBOUND_BEFORE_GROWTH = """
import torch


def layers(model, loader):
    for batch in loader:
        x = torch.zeros(3)
        outs = []
        for layer in model:
            if len(outs) > 1:
                print(torch.stack(outs).tolist())
            x = layer(x.cuda(non_blocking=True))
            outs.append(x)
            x = x.cpu()


def items(model, loader):
    for batch in loader:
        v = batch.cpu()
        xs = []
        for v in model(batch.cuda(non_blocking=True)):
            if xs:
                print(torch.stack(xs).tolist())
            xs.append(v)
"""


def test_a_list_grown_with_a_host_name_the_loop_rebinds_may_hold_device_tensors():
    # The values a loop grows a list with are judged as the loop starts: ``x`` is on the
    # host then, but the body rebinds it to a device output before ``outs.append(x)`` (and
    # the loop target ``v`` holds each device row), so from the second pass on the stacked
    # list is on the device and its ``.tolist()`` waits for it.
    assert _at(REBOUND_BEFORE_GROWTH, "SL201") == [
        (11, 23), (14, 17), (23, 23)]


ALIASED_LISTS = """
import torch


def evaluate(model, loader, keep):
    for batch in loader:
        bound = []
        add = bound.append
        for clip in batch:
            add(model(clip.cuda(non_blocking=True)))
        print(torch.stack(bound).tolist())
        either = []
        kept = either if keep else None
        kept.append(model(batch.cuda(non_blocking=True)))
        print(torch.stack(either).tolist())
        stored = []
        state = {"logits": stored}
        state["logits"].append(model(batch.cuda(non_blocking=True)))
        print(torch.stack(stored).tolist())
"""


def test_a_list_grown_through_an_alias_may_hold_device_tensors():
    # ``add = xs.append``, ``ys = xs if keep else None`` and ``{"logits": xs}`` grow the
    # list where flow does not look: it may hold device outputs, and reading it waits.
    assert [line for code, line, _column in _codes(ALIASED_LISTS) if code == "SL201"] == [11, 15, 19]


ELEMENTS_OF_A_SHADOWING_TARGETS_FIELD_MOVED = """
import torch
def make_cams(model, data_loader, others):
    for pack in data_loader:
        label = pack["label"][0]
        outputs = [model(img[0].cuda(non_blocking=True)) for pack in others for img in pack["img"]]
        valid = torch.nonzero(label)[:, 0]
"""


def test_a_comprehension_over_the_field_of_its_own_target_shows_nothing_of_the_batch():
    # ``pack`` of ``for pack in others`` is the comprehension's, not the loader's batch: what
    # it moves says nothing of where ``pack["label"]`` lives, so the nonzero still shows.
    found = _in_order(ELEMENTS_OF_A_SHADOWING_TARGETS_FIELD_MOVED, "cams.py")
    assert found == [(7, 17, "SL101")]


def test_a_parameter_rebound_only_to_views_of_itself_keeps_the_host_tensors_its_callers_pass(tmp_path):
    # HybrIK's calc_coord_accuracy: every call passes `.cpu()` tensors (or a local bound to a view
    # of one); the body reshapes and slices `labels` before its `.cpu().numpy()`: no read-back.
    # A parameter the body moves (`masks = masks.to(device)`) or binds from elsewhere is no longer
    # the caller's tensor.
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "metrics.py").write_text(textwrap.dedent('''
        import torch

        def accuracy(pred, labels, masks, other, device):
            labels = labels.reshape(labels.shape[0], -1)
            labels = labels[:, :3].float() - labels[:, :1]
            masks = masks.to(device)
            other = torch.zeros(3)
            return labels.cpu().numpy(), masks.cpu(), other.cpu()
    '''))
    (tmp_path / "train.py").write_text(textwrap.dedent('''
        import torch
        from metrics import accuracy

        def train(model, loader, device):
            for x, y, m in loader:
                out = model(x.to(device, non_blocking=True))
                gt = y.cpu().reshape(-1, 3)[:, :2]
                accuracy(out, gt, m.cpu(), m.cpu(), device)
                accuracy(out, y.cpu().data, m.cpu(), m.cpu(), device)


        if __name__ == "__main__":
            train(None, [], "cuda")
    '''))
    options = RunOptions(jobs=1, use_cache=False, include_cold=True)
    found = sorted((f.line, f.code) for f in lint_paths([tmp_path], Settings(root=tmp_path), options)
                   if f.path.endswith("metrics.py"))
    assert found == [(9, "SL201")]  # masks, moved to the device: its read-back waits


def test_arithmetic_with_another_tensor_may_move_a_host_parameter_to_the_device(tmp_path):
    # A 0-dim host tensor (`loss.detach().cpu()`) meets a device tensor without error, and the
    # result lives on the device: `value = value * weight` is no longer the caller's host tensor,
    # so its `.item()` waits. Arithmetic of the parameter with itself or with numbers keeps it.
    from synclint.config import Settings
    from synclint.runner import RunOptions, lint_paths

    (tmp_path / "metrics.py").write_text(textwrap.dedent('''
        import torch

        def scaled(value, weight):
            value = value * weight
            return value.item()

        def shifted(value, offset):
            value = value.float() + offset
            return value.item()

        def centred(value):
            value = (value.double() - value[None]) * -2.0
            return value.item()
    '''))
    (tmp_path / "train.py").write_text(textwrap.dedent('''
        import torch
        from metrics import scaled, shifted, centred

        def train(model, loader, device):
            w = torch.ones(1, device=device)
            for x, y in loader:
                out = model(x.to(device, non_blocking=True))
                loss = out.sum().detach()
                scaled(loss.cpu(), w)
                shifted(loss.cpu(), out.mean())
                centred(loss.cpu())


        if __name__ == "__main__":
            train(None, [], "cuda")
    '''))
    options = RunOptions(jobs=1, use_cache=False, include_cold=True)
    found = sorted((f.line, f.code) for f in lint_paths([tmp_path], Settings(root=tmp_path), options)
                   if f.path.endswith("metrics.py"))
    assert found == [(6, "SL201"), (10, "SL201")]


FIELDS_BY_ATTRIBUTE = """
import torch
from torch.utils.data import DataLoader


def evaluate(model, graphs, device):
    loader = DataLoader(graphs, batch_size=32, pin_memory=True)
    for data in loader:
        out = model(data.x.to(device, non_blocking=True))
        print(data.y.cpu(), data.y.T.cpu(), out.cpu())
    for data in loader:
        data.y = data.y.to(device)
        print(data.y.cpu(), data.x.cpu())
    for data in loader:
        data.to(device)
        print(data.y.cpu())
    for data in loader:
        data = data.to(device)
        print(data.y.cpu())
"""


def test_a_field_of_a_host_batch_by_attribute_is_on_the_host():
    # A PyG ``Batch`` (or a named tuple) from a pinned loader: ``data.y`` is the collate's host
    # tensor, unless the loop stores a device value in the batch (``data.y = ...``), moves it
    # in place (``data.to(device)``) or rebinds it.
    assert _at(FIELDS_BY_ATTRIBUTE, "SL201") == [
        (10, 45),  # the model's output
        (13, 15),  # stored on the device
        (13, 29),  # (any field, once one is stored)
        (16, 15),  # moved in place
        (19, 15),  # rebound to the moved batch
    ]


DRAWN_BATCHES = """
import torch
from torch.utils.data import DataLoader


def train(model, data, device, steps, plain):
    data_iter = iter(DataLoader(data, batch_size=None, pin_memory=True))
    for step in range(steps):
        batch, wid = next(data_iter)
        obs = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        loss = model(obs)
        loss.backward()
        print(batch["reward"].max().item(), loss.item())
    while True:
        batch = next(data_iter)
        batch["x"] = batch["x"].to(device)
        print(batch["y"].item(), batch["x"].item())
    first = next(iter(DataLoader(data, num_workers=4)))
    print(first["y"].item())
    other = iter(plain)
    print(next(other)["y"].item())
    unknown = next(other)
    print(unknown["y"].item())
"""


def test_a_batch_drawn_by_next_from_a_loader_of_host_batches_is_on_the_host():
    # pydreamer's training loop draws each batch with `next(data_iter)` from a pinned loader
    # and moves a copy (`obs`): the batch's own fields stay where the loader made them. A
    # field the loop stores a device value at is not; nor is a batch of an unknown loader.
    assert _at(DRAWN_BATCHES, "SL201") == [
        (13, 45),  # the loss
        (17, 34),  # the field stored on the device
        (21, 11),  # an unknown iterable's element
        (23, 11),
    ]


FIELDS_OF_A_BATCH_MOVED_IN_AN_EXPRESSION = """
import torch
from torch_geometric.loader import DataLoader


def evaluate(model, graphs, device):
    loader = DataLoader(graphs, batch_size=32, pin_memory=True)
    for data in loader:
        out = model(data.to(device))
        print(data.y.cpu())
    for data in loader:
        data.apply(lambda t: t.cuda())
        print(data.y.cpu())
    for data in loader:
        setattr(data, "y", data.y.cuda())
        print(data.y.cpu())
    for data in loader:
        out = model(data.x.to(device))
        print(data.y.cpu())
"""


def test_a_batch_object_moved_anywhere_in_the_loop_has_device_fields():
    # PyG's ``Data.to``/``cuda``/``apply`` move the batch's own fields and return it:
    # ``model(data.to(device))`` leaves ``data.y`` on the device, as ``setattr`` does.
    # A field moved on its own (``data.x.to(device)``) leaves the others on the host.
    assert _at(FIELDS_OF_A_BATCH_MOVED_IN_AN_EXPRESSION, "SL201") == [(10, 15), (13, 15), (16, 15)]


FIELDS_STORED_BY_A_TUPLE_ASSIGNMENT = """
import torch
from torch_geometric.loader import DataLoader


def evaluate(model, graphs, device):
    loader = DataLoader(graphs, batch_size=32, num_workers=4)
    for data in loader:
        data.y, data.x = data.y.cuda(), data.x.cuda()
        print(data.y.cpu())
    for batch in loader:
        batch["x"], batch["y"] = batch["x"].cuda(), batch["y"].cuda()
        print(batch["y"].cpu())
    for data in loader:
        (data.y, count) = (data.y.cuda(), 1)
        print(data.y.cpu())
    for data in loader:
        data.w, n = data.w.float(), 2
        print(data.y.cpu())
"""


def test_fields_stored_on_the_device_by_a_tuple_assignment_are_not_host():
    # ``data.y, data.x = data.y.cuda(), data.x.cuda()`` stores device values in the batch
    # as two assignments would; a cast stored so keeps it on the host.
    assert _at(FIELDS_STORED_BY_A_TUPLE_ASSIGNMENT, "SL201") == [(10, 15), (13, 15), (16, 15)]


DRAWN_GRAPHS = """
import torch
from torch_geometric.loader import DataLoader


def train(model, graphs, device, steps):
    data_iter = iter(DataLoader(graphs, batch_size=32, pin_memory=True))
    for step in range(steps):
        data = next(data_iter)
        out = model(data.to(device))
        print(data.y.cpu())
    for step in range(steps):
        data = next(data_iter)
        out = model(data.x.to(device, non_blocking=True))
        print(data.y.cpu())
"""


def test_a_drawn_batch_object_moved_in_the_loop_has_device_fields():
    # PyG's `Data.to` moves the batch's own fields and returns it: after `model(data.to(device))`
    # `data.y` may be on the device, as for a `for` loop's batch (d8afcec).
    assert _at(DRAWN_GRAPHS, "SL201") == [(11, 15)]


REDRAWN_BATCHES = """
import torch
from torch.utils.data import DataLoader


def train(model, data, device, steps):
    loader = DataLoader(data, batch_size=8, pin_memory=True)
    data_iter = iter(loader)
    for step in range(steps):
        batch = next(data_iter, None)
        if batch is None:
            data_iter = iter(loader)
            batch = next(data_iter)
        move_to(batch, device)
        loss = model(batch["x"])
        loss.backward()
        print(batch["y"].sum().item())
"""


def test_a_batch_drawn_again_when_the_loader_runs_out_is_still_changed_in_place():
    # `batch = next(it, None); if batch is None: it = iter(loader); batch = next(it)`: both
    # draws bind the loader's batch, which `move_to(batch, device)` then moves in place. The
    # second draw is no rebinding to something else that would hide the move.
    assert _at(REDRAWN_BATCHES, "SL201") == [(17, 15)]


REBOUND_ITERATORS = """
import torch
from torch.utils.data import DataLoader


def train(model, data, device, steps):
    loader = DataLoader(data, batch_size=8, pin_memory=True)
    data_iter = iter(loader)
    for step in range(steps):
        batch = next(data_iter)
        loss = model(batch["x"].to(device))
        loss.backward()
        print(batch["y"].sum().item())
        if step == 0:
            data_iter = CudaPrefetcher(loader)
"""


def test_a_batch_drawn_from_an_iterator_the_loop_rebinds_to_another_is_not_known():
    # From the second step on, `data_iter` is the prefetcher, whose batches are on the
    # device: what `next(data_iter)` draws in the loop is not only the pinned loader's.
    assert _at(REBOUND_ITERATORS, "SL201") == [(13, 15)]


BOUND_BEFORE_THE_DRAW = """
import torch
from torch.utils.data import DataLoader


def train(model, data, device, steps):
    loader = DataLoader(data, batch_size=8, pin_memory=True)
    data_iter = iter(loader)
    for step in range(steps):
        batch = None
        batch = next(data_iter)
        move_to(batch, device)
        loss = model(batch["x"])
        loss.backward()
        print(batch["y"].sum().item())
"""


def test_a_name_bound_before_its_draw_still_takes_the_batch_there():
    # `batch = None` above the draw is no rebinding of the drawn batch: `move_to(batch,
    # device)` after the draw moves it in place.
    assert _at(BOUND_BEFORE_THE_DRAW, "SL201") == [(15, 15)]


DRAWN_IN_AN_INNER_LOOP = """
import torch
from torch.utils.data import DataLoader


def train(model, data, device, steps):
    loader = DataLoader(data, batch_size=8, pin_memory=True)
    data_iter = iter(loader)
    while True:
        for _ in range(4):
            batch = next(data_iter)
            loss = model(batch["x"].cuda())
        move_to(batch, device)
        print(batch["y"].sum().item())
"""


def test_a_batch_drawn_in_an_inner_loop_is_changed_by_the_outer_loop_too():
    # The last batch the inner loop draws lives on in the outer loop, which moves it in place.
    assert _at(DRAWN_IN_AN_INNER_LOOP, "SL201") == [(14, 15)]


def test_the_fields_of_a_host_reduction_are_on_the_host():
    # nougat's ``logits = torch.stack(scores, 1).cpu().max(-1)``: ``.values``/``.indices`` of
    # the result live where its input did; the same on a device tensor still sync.
    source = textwrap.dedent("""
        import torch
        def infer(model, loader):
            for x in loader:
                out = model(x.cuda(non_blocking=True))
                logits = torch.stack(out, 1).cpu().max(-1)
                values, indices = logits.values, logits.indices
                on_device = out[0].max(-1).indices
                for b in range(4):
                    mask = indices[b] != 0
                    n = mask.sum().item()
                    v = values[b, mask]
                    m = on_device[b].item()
    """)
    found = sorted((f.line, f.code) for f in check_source(source, "example.py", include_cold=True))
    assert found == [(6, "SL201"), (13, "SL201")]


def test_a_field_of_a_batch_drawn_once_is_copied_by_the_step():
    # ``fixed = next(iter(loader))["img"]`` before the loop, moved on every pass of a loop
    # over steps: the same host tensor copied every step (SL403's, as before), not a loop's
    # batch (no loop over the loader moves it); nor is a field of a batch drawn by ``next``
    # in the step loop one SL401 sees. A field of the loop's own batch stays the loader's.
    source = textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, ds, steps):
            loader = DataLoader(ds, batch_size=4, pin_memory=True)
            sample = next(iter(loader))
            fixed = sample["img"]
            for step in range(steps):
                out = model(fixed.cuda())
                out.backward()
            it = iter(loader)
            for step in range(steps):
                batch = next(it)
                x = batch["img"]
                model(x.cuda()).backward()
            for batch in loader:
                meta = batch["meta"]
                boxes = meta["boxes"]
                model(boxes.cuda(non_blocking=True)).backward()
    """)
    found = sorted((f.line, f.code) for f in check_source(source, "train.py", include_cold=True))
    assert found == [(9, "SL403"), (15, "SL403")]


UNPACKED_FIELDS = """
import torch
def evaluate(model, val_loader):
    for im, seg, gt in val_loader:
        im, seg, gt = im, seg, gt
        out = model(im.cuda())
        if seg.sum() < 2:
            out = out * 0
        print(out.cpu())
def train(model, loader):
    for batch in loader:
        images, labels = batch["x"], batch["y"]
        out = model(images.cuda())
        if labels.sum() > 0:
            print(out.cpu())
        sample = batch
        if sample["z"].sum() > 0:
            print(out.cpu())
def swap(model, loader):
    for x, y in loader:
        x, y = y.cuda(), x
        if x.sum() > 0:
            print(y.sum() > 0)
"""


def test_names_unpacked_from_a_host_batch_hold_what_each_element_holds():
    # CascadePSP's eval.py rebinds `im, seg, gt = im, seg, gt`; `images, labels =
    # batch["x"], batch["y"]` binds two fields; `sample = batch` is the batch. Each keeps the
    # loader's host tensor (the loops move a field, so the loader yields host tensors): its
    # tests read no device. A name unpacked from a device copy is on the device.
    assert _in_order(UNPACKED_FIELDS, "evaluate.py") == [
        (6, 21, "SL401"),
        (9, 15, "SL201"),  # the model's output
        (15, 19, "SL201"),
        (18, 19, "SL201"),
        (21, 16, "SL401"),
        (22, 12, "SL202"),  # `x` now holds the device copy of `y`; `y` holds the host `x`
    ]
    # (SL401 does not follow fields unpacked from a tuple: `images.cuda()` at line 13 is
    # not reported.)


def test_arithmetic_on_a_field_of_a_host_batch_stays_on_the_host():
    # CascadePSP: `(seg[b] + 1).sum() < 2`, `seg` a field the loader's collate built.
    source = ("import torch\ndef evaluate(model, loader):\n    for im, seg in loader:\n        out = model(im.cuda())\n"
              "        for b in range(seg.shape[0]):\n            if (seg[b] + 1).sum() < 2:\n                out[b] = 0\n")
    assert _in_order(source, "evaluate.py") == [(4, 21, "SL401")]


def test_names_unpacked_from_a_loader_batch_are_its_fields():
    # waveglow's train.py: `mel, audio = batch`, then `mel.cuda()`: a blocking copy of the
    # loader's batch (SL401), not a tensor built on the host (SL403); each field is of
    # unknown kind as the loader yields it, so no fix is offered without proof.
    source = ("import torch\nfrom torch.utils.data import DataLoader\ndef train(model, data):\n"
              "    loader = DataLoader(data, num_workers=2)\n    for batch in loader:\n"
              "        mel, audio = batch\n        out = model(mel.cuda(), audio.cuda())\n"
              "        if audio.sum() > 0:\n            out.backward()\n")
    found = [(f.line, f.column, f.code, f.fix is not None) for f in check_source(source, "train.py", include_cold=True)]
    assert found == [(4, 14, "SL402", True), (7, 21, "SL401", False), (7, 33, "SL401", False)]


UNPACKED_IN_THE_BODY = """
import torch
def evaluate(model, eval_loader, device):
    for t, batch in enumerate(eval_loader):
        idx, question, length, *rest = batch
        question = question.to(device)
        out = model(question)
        print(length.item(), question.sum().item(), rest[0].item())
        targets = torch.cat([length, length])
        print(targets[0].item(), torch.cat([length, out])[0].item())
"""


def test_names_unpacked_from_a_batch_in_the_body_are_its_fields():
    # habitat-lab's PACMAN trainer: `idx, question, answer, actions, action_length, goal_pos =
    # batch`, then only `question` goes to the device: `action_length.item()` reads a host
    # tensor, as for names the loop header unpacks; so does a concatenation of host fields
    # alone (1d-tokenizer's `torch.cat([target, target])`), and a starred name's list of the
    # other fields. A concatenation with a device tensor is on the device.
    assert _in_order(UNPACKED_IN_THE_BODY, "evaluate.py") == [
        (6, 20, "SL401"),
        (8, 30, "SL201"),
        (10, 34, "SL201"),
    ]

def test_per_sample_moves_of_host_tensors_to_the_device_are_launches():
    # Work on host tensors alone launches no kernels, but a sample of them made on (or
    # moved to) the device is a copy per sample: SL301 as before 5e2f2b7.
    for line in ('torch.as_tensor(h[i], device="cuda")', "torch.tensor(h[i]).cuda()", "h[i].float().cuda()"):
        source = f"import torch\ndef f(x: torch.Tensor):\n    h = x.cpu()\n    for i in range(h.shape[0]):\n        y = {line}\n    return h\n"
        assert [code for code, *_ in _codes(source)].count("SL301") == 1, line


def test_a_count_of_gpus_is_no_device():
    # ``args.gpu``, ``gpu_id``, ``local_rank`` name a GPU; ``n_gpu`` and ``num_gpu`` count
    # them: a loader wrapper given one does not put its batches on the device.
    source = """
import torch
def train(model, loader, opt, device, args, n_gpu, num_gpu, gpu_id):
    for images, labels in Prefetcher(loader, {n}):
        images = images.to(device)
        if labels.sum() > 0:
            continue
        model(images).sum().backward()
        opt.step()
"""
    assert _at(source.format(n="n_gpu"), "SL202") == _at(source.format(n="num_gpu"), "SL202") == []
    assert _at(source.format(n="args.gpu"), "SL202") == _at(source.format(n="gpu_id"), "SL202") == [(6, 12)]


def test_a_per_sample_copy_from_the_device_into_a_host_tensor_is_a_launch():
    # ``h[i].copy_(g[i])``: the receiver is on the host, the tensor it is given is not.
    source = ("import torch\ndef f(x: torch.Tensor):\n    h = x.cpu()\n    g = x.cuda()\n"
              "    for i in range(h.shape[0]):\n        h[i].copy_(g[i])\n    return h\n")
    assert _at(source, "SL301") == [(5, 5)]
    # (also from a tensor of unknown kind, which may be on the device: a parameter)
    unknown = source.replace("def f(x: torch.Tensor):", "def f(x: torch.Tensor, g):").replace("    g = x.cuda()\n", "")
    assert _at(unknown, "SL301") == [(4, 5)]


MOVED_FROM_THE_INDEX = """
import torch
def train(model, loader):
    for i, batch in enumerate(loader):
        step = torch.tensor(i)
        step = step.cuda()
        if batch['y'].sum() > 0:
            print(batch['y'].max().item())
"""


def test_moving_what_the_loop_computed_from_its_index_says_nothing_of_the_batch():
    # ``i`` of ``enumerate(loader)`` is a loop target but no part of the batch: a tensor
    # built from it alone and moved is a fresh host tensor, and the batch may be anywhere.
    found = _in_order(MOVED_FROM_THE_INDEX, "train.py")
    assert (7, 12, "SL202") in found and (8, 19, "SL201") in found
    # (the count of a progress bar around ``enumerate`` likewise)
    wrapped = _in_order(MOVED_FROM_THE_INDEX.replace("enumerate(loader)", "tqdm(enumerate(loader))"), "train.py")
    assert (7, 12, "SL202") in wrapped and (8, 19, "SL201") in wrapped


MOVED_BEFORE_DERIVED = """
import torch
def train(model, loader, hidden):
    for x, y in loader:
        hidden = hidden.cuda()
        hidden = model(x, hidden)
        print(y.sum().item())
"""


def test_a_name_moved_before_the_loop_derives_it_from_the_batch_says_nothing():
    # ``hidden`` holds the caller's state where it is moved; only below is it computed
    # from the batch. The move says nothing of where the loader's ``y`` lives.
    found = _in_order(MOVED_BEFORE_DERIVED, "train.py")
    assert (7, 15, "SL201") in found


MOVED_FROM_THE_SHAPE = """
import torch
def train(model, loader):
    for x, y in loader:
        hidden = torch.zeros(x.size(0), 16)
        hidden = hidden.cuda()
        mask = torch.ones(len(y))
        mask = mask.cuda()
        model(x, hidden, mask)
        print(y.sum().item())
"""


def test_moving_a_tensor_built_from_the_batch_s_size_says_nothing():
    # ``torch.zeros(x.size(0), 16)`` reads the batch's size, not its data: a fresh host
    # tensor, whose move says nothing of where the loader's ``y`` lives.
    found = _in_order(MOVED_FROM_THE_SHAPE, "train.py")
    assert (10, 15, "SL201") in found


MOVED_FROM_A_REBOUND_TARGET = """
import torch
def train(model, loader):
    for x, y in loader:
        x = torch.zeros(4, 16)
        z = x + 1
        z = z.cuda()
        model(z)
        print(y.sum().item())
def train_fields(model, loader):
    for batch in loader:
        img = batch[0]
        img = torch.zeros(4, 16)
        z = img + 1
        z = z.cuda()
        model(z)
        print(batch[1].sum().item())
"""


def test_a_loop_target_rebound_to_something_else_derives_nothing():
    # ``x`` no longer holds the batch's field where ``z`` is computed from it: moving ``z``
    # says nothing of where the loader's ``y`` lives.
    found = _in_order(MOVED_FROM_A_REBOUND_TARGET, "train.py")
    assert (9, 15, "SL201") in found and (17, 15, "SL201") in found


HOST_ARRAY_ITEMS = """
import torch
def evaluate(loader, model):
    for samples in loader:
        predictions = model(samples["image"].cuda())
        targets = samples["label"].cuda()
        predictions = predictions.max(1)[1].cpu().numpy()
        targets = targets.cpu().numpy()
        for pred, tgt in zip(predictions, targets):
            print(pred.item(), tgt.item())
        for row in targets:
            print(row.item())
        for logit in model(samples["image"].cuda()):
            print(logit.item())
"""


def test_the_items_of_a_host_array_are_host_values():
    # LAVIS's classification task reads `tgt.item()` of each element of
    # `targets.cpu().numpy()`: numpy scalars, read where they already are. The copies to the
    # host are the syncs; the items of a device tensor still are too.
    found = _in_order(HOST_ARRAY_ITEMS, "evaluate.py")
    assert [(line, code) for line, _column, code in found if code == "SL201"] == [(7, "SL201"), (8, "SL201"), (14, "SL201")]


OBJECT_ARRAY_ITEMS = """
import numpy as np
import torch
def evaluate(loader, model):
    for samples in loader:
        scores = [model(image.cuda()).max() for image in samples["images"]]
        ragged = np.array(scores, dtype=object)
        for score in ragged:
            print(score.item())
"""


def test_the_items_of_an_object_array_are_not_host_values():
    # `dtype=object` keeps the objects it is given (here CUDA tensors): its items are not
    # numpy scalars, and `score.item()` still copies each one to the host.
    found = _in_order(OBJECT_ARRAY_ITEMS, "evaluate.py")
    assert (9, 19, "SL201") in found, found
