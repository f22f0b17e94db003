from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword
from synclint.rules.base import Invalid, Rule

_DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


class UnpinnedLoader(Rule):
    """Flags `DataLoader(...)` without `pin_memory=True` in code that uses CUDA.

    ## What it does
    Finds `torch.utils.data.DataLoader` constructions that do not pass
    `pin_memory=True`, in files that mention CUDA.

    ## Why is this bad?
    Batches in pageable memory cannot be copied asynchronously: even with
    `non_blocking=True` the copy is staged through a pinned buffer
    synchronously, so the host stalls on every batch.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True)
    ```

    ## Fix safety
    Adding `pin_memory=True` is safe: results are identical; it costs pinned
    host memory for the prefetched batches. An explicit `pin_memory=False`
    (or one passed positionally, or possibly through `**kwargs`) is never
    changed: the finding's message says so.
    """

    code = "SL402"
    name = "unpinned-loader"
    TOKENS = frozenset({"DataLoader"})  # see synclint.prefilter
    fix_applicability = "safe"
    hot_path_only = False

    VALID = (
        "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=True)\nx.cuda()\n",
        "from torch.utils.data import DataLoader\nl = DataLoader(ds)\n",
        "import torch\nl = torch.utils.data.DataLoader(ds, pin_memory=True)\nd = 'cuda'\n",
        "import torch\nl = MyLoader(ds)\nd = 'cuda'\n",
        "import torch\nl = torch.utils.data.DataLoader(ds, **kwargs)\nd = 'cuda'\n",
        "import torch\nl = torch.utils.data.DataLoader(ds, pin_memory=args.pin)\nd = 'cuda'\n",
    )
    INVALID = (
        Invalid("import torch\nl = torch.utils.data.DataLoader(ds, batch_size=4)\nd = 'cuda'\n", 2, 5, "import torch\nl = torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True)\nd = 'cuda'\n"),
        Invalid("from torch.utils.data import DataLoader\nl = DataLoader(ds)\nx = x.cuda()\n", 2, 5, "from torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=True)\nx = x.cuda()\n"),
        Invalid("from torch.utils.data import DataLoader as DL\nl = DL(ds, pin_memory=False)\nx = x.cuda()\n", 2, 5, None),
        Invalid("import torch.utils.data as tud\nl = tud.DataLoader(ds, shuffle=True)\ndevice = 'cuda:0'\n", 2, 5, "import torch.utils.data as tud\nl = tud.DataLoader(ds, shuffle=True, pin_memory=True)\ndevice = 'cuda:0'\n"),
        Invalid("from torch.utils.data import DataLoader\ndef make(ds):\n    return DataLoader(dataset=ds)\nx = 'cuda'\n", 3, 12, "from torch.utils.data import DataLoader\ndef make(ds):\n    return DataLoader(dataset=ds, pin_memory=True)\nx = 'cuda'\n"),
        Invalid("from torch.utils.data import dataloader\nl = dataloader.DataLoader(ds)\nx = 'cuda'\n", 2, 5, "from torch.utils.data import dataloader\nl = dataloader.DataLoader(ds, pin_memory=True)\nx = 'cuda'\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualify(node.func) not in _DATALOADERS or not self.context.mentions_cuda:
            return
        if any(arg.star == "**" for arg in node.args):
            return  # pin_memory may come from **kwargs
        pin = keyword(node, "pin_memory")
        if pin is not None and not (isinstance(pin.value, cst.Name) and pin.value.value == "False"):
            return
        self.report(
            node,
            "`DataLoader` without `pin_memory=True`: batches in pageable memory are copied "
            "to the device synchronously; pass `pin_memory=True`",
            self.propose_fix(node),
        )
