"""The ``synclint`` command line (click). Exit codes: 0 clean, 1 findings, 2 error."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import click

from synclint import __version__
from synclint.cli_options import run_option_flags, run_options
from synclint.config import ConfigError, Configuration, Overrides, Settings
from synclint.file_options import file_option_flags, file_overrides
from synclint.discovery import MissingPathError, discover
from synclint.finding import Finding
from synclint.codes import is_known_selector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("text", "json", "sarif", "github")


def _split_codes(values: tuple[str, ...]) -> tuple[str, ...] | None:
    if not values:
        return None
    codes = tuple(c.strip().upper() for value in values for c in value.split(",") if c.strip())
    return codes


def _load(config: Path | None, paths: tuple[str, ...], select, ignore, extend_select) -> Configuration:
    """Each file's settings: its closest configuration file (or ``--config``), with the options on top."""
    unknown = [
        code
        for code in (_split_codes(select) or ()) + (_split_codes(ignore) or ()) + (_split_codes(extend_select) or ())
        if not is_known_selector(code)
    ]
    if unknown:
        raise click.UsageError(f"unknown rule selector(s): {', '.join(unknown)}")
    overrides = Overrides(
        select=_split_codes(select),
        ignore=_split_codes(ignore) or (),
        extend_select=_split_codes(extend_select) or (),
        fields=file_overrides(),
    )
    try:
        configuration = Configuration(overrides, config)
        for path in paths:  # report a broken configuration file before any work
            if Path(path).exists():
                configuration.settings_for(path)
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
    return configuration


def _selection_options(function):
    for option in reversed(
        [
            click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated)."),
            click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
            click.option("--extend-select", multiple=True, help="Codes to enable on top of the selection."),
            click.option(
                "--config",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="A pyproject.toml (with [tool.synclint]) or synclint.toml to use.",
            ),
        ]
    ):
        function = option(function)
    return function


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="synclint")
def cli() -> None:
    """Find, fix and prove the removal of host-device syncs in PyTorch code."""


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_selection_options
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True)
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--fix", "apply_fix", is_flag=True, help="Apply fixes (alias of `synclint fix --apply`).")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff: include unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the diff of the fixes instead of the findings.")
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Report only findings not recorded in this baseline file.",
)
@click.option(
    "--write-baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Record the current findings in this file and exit 0.",
)
@run_option_flags
@file_option_flags
def check(
    paths, select, ignore, extend_select, config, output_format, statistics, exit_zero, apply_fix, unsafe_fixes, diff,
    baseline, write_baseline,
):
    """Check PATHS (files or directories, default: .) for sync hazards."""
    paths = paths or (".",)
    settings = _load(config, paths, select, ignore, extend_select)
    if apply_fix or diff:
        sys.exit(_run_fix(paths, settings, apply=apply_fix and not diff, unsafe=unsafe_fixes))
    findings = _lint(paths, settings)
    if write_baseline is not None:
        sys.exit(_write_baseline(write_baseline, findings))
    if baseline is not None:
        findings = _without_baseline(findings, baseline)
    _emit(findings, output_format, statistics)
    if exit_zero:
        sys.exit(EXIT_CLEAN)
    sys.exit(EXIT_FINDINGS if findings else EXIT_CLEAN)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_selection_options
@click.option("--apply", "apply_fixes", is_flag=True, help="Write the fixes to the files.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change edge-case behaviour.")
@click.option("--diff", is_flag=True, help="Print the diff (the default without --apply).")
@file_option_flags
def fix(paths, select, ignore, extend_select, config, apply_fixes, unsafe_fixes, diff):
    """Show (default) or apply (--apply) the fixes for PATHS."""
    paths = paths or (".",)
    settings = _load(config, paths, select, ignore, extend_select)
    sys.exit(_run_fix(paths, settings, apply=apply_fixes and not diff, unsafe=unsafe_fixes))


@cli.command()
def clean() -> None:
    """Remove synclint's results cache."""
    from synclint.cache import cache_dir, clear

    removed = clear()
    click.echo(f"Removed the cache in {removed}." if removed else f"No cache in {cache_dir()}.")


@cli.command()
@click.argument("code")
def rule(code: str) -> None:
    """Print the documentation of one rule (by code or name)."""
    from synclint.rules import RULES_BY_CODE, RULES_BY_NAME

    found = RULES_BY_CODE.get(code.upper()) or RULES_BY_NAME.get(code.lower())
    if found is None:
        raise click.UsageError(f"unknown rule {code!r}; `synclint rules` lists them")
    fix_note = {"safe": "Fix is always available.", "unsafe": "Fix is sometimes available (unsafe)."}
    click.echo(f"# {found.name} ({found.code})\n")
    if found.fix_applicability:
        click.echo(fix_note.get(found.fix_applicability, "") + "\n")
    click.echo(found.documentation())


@cli.command()
@click.option("--output-format", type=click.Choice(("text", "json")), default="text")
def rules(output_format: str) -> None:
    """List every rule."""
    from synclint.rules import ALL_RULES

    if output_format == "json":
        import json

        click.echo(
            json.dumps(
                [
                    {"code": r.code, "name": r.name, "summary": r.summary(), "fix": r.fix_applicability}
                    for r in ALL_RULES
                ],
                indent=2,
            )
        )
        return
    for r in ALL_RULES:
        marker = {"safe": "[*]", "unsafe": "[~]"}.get(r.fix_applicability or "", "   ")
        click.echo(f"{r.code}  {marker} {r.name:<22} {r.summary()}")


def _lint(paths, settings: Settings) -> list[Finding]:
    from synclint.runner import lint_paths

    try:
        return lint_paths(paths, settings, run_options())
    except (MissingPathError, ConfigError) as error:
        raise click.UsageError(str(error)) from error


def _write_baseline(path: Path, findings: list[Finding]) -> int:
    from synclint.baseline import BaselineError, write_baseline

    try:
        count = write_baseline(path, findings)
    except BaselineError as error:
        click.echo(f"error: {error}", err=True)
        return EXIT_ERROR
    click.echo(f"Wrote {count} finding{'s' if count != 1 else ''} to the baseline {path}.", err=True)
    return EXIT_CLEAN


def _without_baseline(findings: list[Finding], path: Path) -> list[Finding]:
    from synclint.baseline import BaselineError, new_findings

    try:
        return new_findings(findings, path)
    except BaselineError as error:
        raise click.UsageError(str(error)) from error


def _emit(findings: list[Finding], output_format: str, statistics: bool) -> None:
    from synclint.reporters import REPORTERS, render_statistics

    out = sys.stdout
    if statistics and output_format != "text":
        raise click.UsageError("--statistics prints text counts; it cannot be combined with --output-format "
                               f"{output_format}")
    if statistics:
        render_statistics(findings, out)
        return
    reporter = REPORTERS.get(output_format)
    if reporter is None:
        raise click.UsageError(f"output format {output_format!r} is not available")
    reporter(findings, out)


def _run_fix(paths, settings: Settings, *, apply: bool, unsafe: bool) -> int:
    from synclint.engine import SourceError
    from synclint.fixers.apply import fix_file, write_atomically
    from synclint.notebook import fix_notebook, is_notebook

    try:
        files = discover(paths, settings)
        for file in files:
            settings.settings_for(file)
    except (MissingPathError, ConfigError) as error:
        raise click.UsageError(str(error)) from error
    changed = errors = applied = 0
    for file in files:
        try:
            result = (fix_notebook if is_notebook(file) else fix_file)(file, settings, unsafe=unsafe)
        except SourceError as error:
            click.echo(f"{file}: SL000 {error}", err=True)
            errors += 1
            continue
        if not result.changed:
            continue
        if apply:
            try:
                write_atomically(file, result.fixed)
            except OSError as error:  # reported; the other files are still fixed (exit 2 at the end)
                click.echo(f"{file}: cannot write the fixes: {error.strerror or error}", err=True)
                errors += 1
                continue
        changed += 1
        applied += result.applied
        if apply:
            continue
        if is_notebook(file):
            sys.stdout.writelines(result.diff_lines())
        else:
            diff = difflib.unified_diff(
                result.original.splitlines(keepends=True),
                result.fixed.splitlines(keepends=True),
                fromfile=f"a/{file}",
                tofile=f"b/{file}",
            )
            sys.stdout.writelines(diff)
    if apply:
        click.echo(f"Applied {applied} fix{'es' if applied != 1 else ''} in {changed} file{'s' if changed != 1 else ''}.", err=True)
        return EXIT_ERROR if errors else EXIT_CLEAN
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed else EXIT_CLEAN


@cli.command()
@click.argument("shell", type=click.Choice(("bash", "zsh", "fish")))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    bash:  eval "$(synclint completion bash)"   (e.g. in ~/.bashrc)
    zsh:   eval "$(synclint completion zsh)"    (e.g. in ~/.zshrc)
    fish:  synclint completion fish > ~/.config/fish/completions/synclint.fish
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    click.echo(completer(cli, {}, "synclint", "_SYNCLINT_COMPLETE").source())


def _register_optional_commands() -> None:
    """Commands whose modules are heavier are added without importing them eagerly."""
    try:
        from synclint.runtime.cli import run_command
    except ImportError:
        return
    cli.add_command(run_command)


_register_optional_commands()


def main() -> None:
    cli(prog_name="synclint")
