"""Names that say a function runs every step, whatever the call graph says.

Code in such a function is reported even when nothing in the project is seen
calling it (a ``forward`` reached only through hooks, a loss a trainer looks up
by name): :meth:`synclint.analysis.flow.FlowState.hot_path`, and the pruning of
hidden code (:mod:`synclint.hidden_code`), which must keep what it reports.
"""

from __future__ import annotations

import re

from synclint.project.loss_names import is_loss_class, is_loss_function

STEP_NAME = re.compile(
    r"^(training_step|train_step|train_one_epoch|train_epoch|step|validation_step|"
    r"compute_loss|fit_one_batch|run_step|train_batch|eval_batch)$"
)


def names_a_step(function: str, cls: str | None) -> bool:
    """``forward``, a loss (by its name or its class's), or a training step."""
    return (
        function == "forward"
        or is_loss_function(function)
        or bool(STEP_NAME.match(function))
        or (cls is not None and is_loss_class(cls))
    )
