"""``--jobs``, ``--no-cache`` and ``--include-cold`` for ``synclint check``, kept out of its signature.

The decorator consumes the options and leaves a :class:`RunOptions` in the
click context, where ``run_options()`` finds it; the command itself needs no
new parameters.
"""

from __future__ import annotations

import functools

import click

from synclint.runner import RunOptions

_KEY = "synclint.run_options"


def run_option_flags(command):
    @click.option(
        "--jobs", "-j", type=click.IntRange(min=1), default=None,
        help="Worker processes (default: all cores).",
    )
    @click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
    @click.option(
        "--include-cold", is_flag=True,
        help=("Also report findings in code that does not run every step (setup, logging, data pipeline); "
              "fix, check --fix and --diff fix them too."),
    )
    @functools.wraps(command)
    def wrapper(*args, jobs, no_cache, include_cold, **kwargs):
        click.get_current_context().meta[_KEY] = RunOptions(
            jobs=jobs, use_cache=not no_cache, include_cold=include_cold
        )
        return command(*args, **kwargs)

    return wrapper


def run_options() -> RunOptions:
    context = click.get_current_context(silent=True)
    return context.meta.get(_KEY, RunOptions()) if context is not None else RunOptions()
