"""``--no-respect-gitignore``, ``--force-exclude`` and ``--max-file-size``, kept out of
the command signatures (as ``cli_options`` does for ``--jobs``).

The decorator consumes the options and leaves the Settings fields they set in
the click context; ``file_overrides()`` returns them for the configuration.
"""

from __future__ import annotations

import functools

import click

from synclint.sources import parse_size

_KEY = "synclint.file_overrides"


def _size(context, parameter, value):
    if value is None:
        return None
    try:
        return parse_size(value.strip() if not value.strip().isdigit() else int(value))
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


def file_option_flags(command):
    @click.option(
        "--respect-gitignore/--no-respect-gitignore", default=None,
        help="Skip files ignored by .gitignore when searching directories (default: on).",
    )
    @click.option(
        "--force-exclude/--no-force-exclude", default=None,
        help="Apply the excludes to files named on the command line too.",
    )
    @click.option(
        "--max-file-size", callback=_size, default=None, metavar="SIZE",
        help="Files larger than SIZE (bytes, or e.g. 2MB) get one SL000 instead of a check; 0: no limit "
        "(default: 1MiB).",
    )
    @functools.wraps(command)
    def wrapper(*args, respect_gitignore, force_exclude, max_file_size, **kwargs):
        fields = {
            "respect_gitignore": respect_gitignore, "force_exclude": force_exclude, "max_file_size": max_file_size,
        }
        click.get_current_context().meta[_KEY] = tuple((k, v) for k, v in fields.items() if v is not None)
        return command(*args, **kwargs)

    return wrapper


def file_overrides() -> tuple[tuple[str, object], ...]:
    context = click.get_current_context(silent=True)
    return context.meta.get(_KEY, ()) if context is not None else ()
