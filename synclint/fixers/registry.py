"""Imports every fixer module so their ``@fixer`` registrations run.

Order matters where two fixers serve one code: the first proposal wins.
"""

from synclint.fixers import (  # noqa: F401
    count_nonzero,
    device_accumulation,
    device_factory,
    ignore_index,
    masked_fill,
    nonzero_static,
    padded_batch,
    repeat_output_size,
    scatter_count,
    sorted_unique_count,
    true_keyword,
    where_reduction,
    where_select,
    where_update,
)
