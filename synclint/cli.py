"""The ``synclint`` command line (click). Exit codes: 0 clean, 1 findings, 2 error."""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from synclint import __version__
from synclint.cli_options import run_option_flags, run_options
from synclint.config import ConfigError, Configuration, Overrides
from synclint.file_options import file_option_flags, file_overrides
from synclint.discovery import MissingPathError, discover
from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.sources import source_lines
from synclint.codes import is_known_selector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = (
    "full", "concise", "text", "json", "json-lines", "junit", "gitlab", "pylint", "rdjson", "sarif", "github",
)
TEXT_FORMATS = frozenset({"full", "concise", "text"})


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
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default="full",
    show_default=True,
    help="full/text: with the source line; concise: one line each; the rest for tools and CI.",
)
@click.option(
    "-o", "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to this file instead of stdout.",
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--exit-non-zero-on-fix", is_flag=True, help="With --fix: exit 1 if anything was fixed, even if nothing remains."
)
@click.option("--fix", "apply_fix", is_flag=True, help="Apply the fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix/--diff) and count fixes marked [~].")
@click.option("--show-fixes", is_flag=True, help="With --fix: list what was fixed, per file and rule.")
@click.option("--diff", is_flag=True, help="Print the diff of the fixes instead of the findings.")
@click.option(
    "--stdin-filename",
    help="With `-` (or no paths): the name stdin is checked as (config, per-file-ignores, notebooks).",
)
@click.option("--show-settings", is_flag=True, help="Print the settings the first path is checked with, then exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, then exit.")
@click.option(
    "--add-noqa", is_flag=True, help="Add a `# synclint: ignore[CODE]` comment to every line with a finding."
)
@click.option("--watch", "-w", is_flag=True, help="Check again whenever a Python file or config under PATHS changes.")
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
    paths, select, ignore, extend_select, config, output_format, output_file, statistics, exit_zero,
    exit_non_zero_on_fix, apply_fix, unsafe_fixes, show_fixes, diff, stdin_filename, show_settings, show_files,
    add_noqa, watch, baseline, write_baseline,
):
    """Check PATHS (files, directories, or - for stdin; default: .) for sync hazards."""
    stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not stdin:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    paths = paths or (".",)
    settings = _load(config, (stdin_filename,) if stdin and stdin_filename else paths, select, ignore, extend_select)
    if statistics and output_format not in TEXT_FORMATS:
        raise click.UsageError(
            f"--statistics prints text counts; it cannot be combined with --output-format {output_format}"
        )
    if show_settings:
        sys.exit(_show_settings(settings, paths))
    if show_files:
        sys.exit(_show_files(paths, settings))
    report = _Report(output_format, output_file, statistics, unsafe_fixes, show_fixes)
    if stdin:
        sys.exit(_check_stdin(stdin_filename, settings, report, apply_fix, diff, unsafe_fixes, exit_zero))
    if watch:
        if apply_fix or diff or add_noqa or write_baseline:
            raise click.UsageError("--watch only reports; it cannot be combined with --fix, --diff, --add-noqa "
                                   "or --write-baseline")
        # Settings are read again on every run: a config change is one of the events.
        _watch(paths, lambda: _check_once(paths, _load(config, paths, select, ignore, extend_select), report, baseline))
        return
    if diff:
        sys.exit(_run_fix(paths, settings, apply=False, unsafe=unsafe_fixes))
    if add_noqa:
        sys.exit(_add_noqa(paths, settings))
    if apply_fix:
        sys.exit(_check_and_fix(paths, settings, report, baseline, exit_zero, exit_non_zero_on_fix, unsafe_fixes))
    findings = _lint(paths, settings)
    if write_baseline is not None:
        sys.exit(_write_baseline(write_baseline, findings))
    if baseline is not None:
        findings = _without_baseline(findings, baseline)
    report.emit(findings)
    if exit_zero:
        sys.exit(EXIT_CLEAN)
    sys.exit(EXIT_FINDINGS if findings else EXIT_CLEAN)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_selection_options
@click.option("--apply", "apply_fixes", is_flag=True, help="Write the fixes to the files.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change edge-case behaviour.")
@click.option("--diff", is_flag=True, help="Print the diff (the default without --apply).")
@click.option("--stdin-filename", help="With `-` (or no paths): the name stdin is fixed as.")
@run_option_flags
@file_option_flags
def fix(paths, select, ignore, extend_select, config, apply_fixes, unsafe_fixes, diff, stdin_filename):
    """Show (default) or apply (--apply) the fixes for PATHS (or - for stdin)."""
    stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not stdin:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    paths = paths or (".",)
    settings = _load(config, (stdin_filename,) if stdin and stdin_filename else paths, select, ignore, extend_select)
    if stdin:  # --apply: the fixed source on stdout; else its diff
        report = _Report("concise", None, False, unsafe_fixes, False)
        sys.exit(_check_stdin(stdin_filename, settings, report, apply_fixes and not diff, not apply_fixes or diff,
                              unsafe_fixes, exit_zero=False))
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

    from synclint.suppression import UNUSED_SUPPRESSION_CODE, UNUSED_SUPPRESSION_DOCS, UNUSED_SUPPRESSION_NAME

    if code.upper() == UNUSED_SUPPRESSION_CODE or code.lower() == UNUSED_SUPPRESSION_NAME:
        click.echo(f"# {UNUSED_SUPPRESSION_NAME} ({UNUSED_SUPPRESSION_CODE})\n")
        click.echo(UNUSED_SUPPRESSION_DOCS)
        return
    found = RULES_BY_CODE.get(code.upper()) or RULES_BY_NAME.get(code.lower())
    if found is None:
        raise click.UsageError(f"unknown rule {code!r}; `synclint rules` lists them")
    fix_note = {
        "safe": "[*] Fix is always available (safe: `synclint check --fix`).",
        "unsafe": "[~] Fix is sometimes available (unsafe: `synclint check --fix --unsafe-fixes`).",
    }
    click.echo(f"# {found.name} ({found.code})\n")
    if found.fix_applicability:
        click.echo(fix_note.get(found.fix_applicability, "") + "\n")
    click.echo(found.documentation())


@cli.command()
@click.option("--output-format", type=click.Choice(("text", "json")), default="text")
def rules(output_format: str) -> None:
    """List every rule."""
    from synclint.reporters.style import fix_marker
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
        marker = fix_marker(r.fix_applicability) or "   "
        click.echo(f"{r.code}  {marker} {r.name:<22} {r.summary()}")


def _lint(paths, settings: Configuration) -> list[Finding]:
    from synclint.runner import lint_paths

    from synclint.progress import Progress

    progress = Progress.for_terminal(sys.stderr)
    options = run_options()
    if progress is not None:
        options = dataclasses.replace(options, progress=progress)
    try:
        return lint_paths(paths, settings, options)
    except (MissingPathError, ConfigError) as error:
        raise click.UsageError(str(error)) from error
    finally:
        if progress is not None:
            progress.close()


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


class _Report:
    """Where and how findings are written: format, file or stdout, colours, fix state."""

    def __init__(self, output_format: str, output_file: Path | None, statistics: bool, unsafe_fixes: bool,
                 show_fixes: bool) -> None:
        self.output_format = output_format
        self.output_file = output_file
        self.statistics = statistics
        self.unsafe_fixes = unsafe_fixes
        self.show_fixes = show_fixes

    def emit(self, findings: list[Finding], fixed=None) -> None:
        from synclint.reporters.style import wants_color

        if self.output_file is None:
            self._write(findings, fixed, sys.stdout, wants_color(sys.stdout))
            return
        try:
            self.output_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.output_file, "w", encoding="utf-8", newline="") as out:
                self._write(findings, fixed, out, False)
        except OSError as error:
            raise click.FileError(str(self.output_file), error.strerror or str(error)) from error

    def _write(self, findings, fixed, out, color: bool) -> None:
        from synclint.reporters import REPORTERS, ReportOptions, render_statistics

        options = ReportOptions(
            color=color and self.output_format in TEXT_FORMATS,
            unsafe_fixes=self.unsafe_fixes,
            fixed=fixed,
            show_fixes=self.show_fixes,
        )
        if self.statistics:
            render_statistics(findings, out, options)
        else:
            REPORTERS[self.output_format](findings, out, options)


def _show_settings(configuration: Configuration, paths) -> int:
    from synclint.config import find_config

    first = Path(paths[0])
    settings = configuration.settings_for(first if first.exists() else Path.cwd())
    source = find_config(first if first.exists() else Path.cwd())
    click.echo(f"Resolved settings for: {first.resolve() if first.exists() else first}")
    click.echo(f"Settings path: {source if source is not None else '(none: defaults)'}")
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, dict):
            value = {key: list(codes) for key, codes in value.items()}
        elif isinstance(value, Path):
            value = str(value)
        click.echo(f"{field.name.replace('_', '-')} = {json.dumps(value)}")
    return EXIT_CLEAN


def _show_files(paths, settings: Configuration) -> int:
    try:
        files = discover(paths, settings)
    except MissingPathError as error:
        raise click.UsageError(str(error)) from error
    for file in sorted(files, key=str):
        click.echo(str(file))
    return EXIT_CLEAN


def _check_stdin(name, configuration: Configuration, report: _Report, apply_fix: bool, diff: bool, unsafe: bool,
                 exit_zero: bool) -> int:
    """``check -``: stdin is checked as ``name``; with --fix the fixed source goes to stdout
    and the findings that remain to stderr (ruff's behaviour), with --diff the diff."""
    from synclint.engine import SourceError, check_source, decode_source

    path = name or "-"
    # The closest configuration to the name stdin stands for (or to the working directory).
    settings = configuration.settings_for(name if name else Path.cwd())
    data = sys.stdin.buffer.read()
    include_cold = run_options().include_cold
    if not (apply_fix or diff):
        findings = check_source(data, path, settings, include_cold=include_cold)
        report.emit(findings)
        return EXIT_CLEAN if exit_zero or not findings else EXIT_FINDINGS
    from synclint.fixers.apply import fix_text

    try:
        source = decode_source(data)
        fixed, _ = fix_text(source, path, settings, unsafe, include_cold=include_cold)
    except SourceError as error:
        click.echo(f"{path}: SL000 {error}", err=True)
        if apply_fix:  # nothing may be lost: the input goes through unchanged
            sys.stdout.buffer.write(data)
        return EXIT_ERROR
    if diff:
        sys.stdout.writelines(_unified_diff(source, fixed, path))
        return EXIT_FINDINGS if fixed != source else EXIT_CLEAN
    sys.stdout.flush()
    sys.stdout.buffer.write(_encode_like(data, fixed))
    sys.stdout.buffer.flush()
    remaining = check_source(fixed, path, settings, include_cold=include_cold)
    if remaining:
        from synclint.reporters import render_concise

        render_concise(remaining, sys.stderr)
    return EXIT_CLEAN if exit_zero or not remaining else EXIT_FINDINGS


def _encode_like(original: bytes, text: str) -> bytes:
    """``text`` in the encoding (and BOM) of ``original``, as fix --apply writes files."""
    import codecs
    import io
    import tokenize

    bom = original.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    except SyntaxError:
        encoding = "utf-8"
    encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    return (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)


def _check_once(paths, settings: Configuration, report: _Report, baseline: Path | None) -> None:
    findings = _lint(paths, settings)
    if baseline is not None:
        findings = _without_baseline(findings, baseline)
    report.emit(findings)


def _watch(paths, run_once, changes=None) -> None:
    """Run, then run again after each batch of changes to Python files or configs (Ctrl-C ends)."""
    from synclint.filewatch import python_changes

    def attempt() -> None:
        try:
            run_once()
        except click.ClickException as error:  # e.g. a config broken mid-edit: say so, keep watching
            error.show()
        sys.stdout.flush()

    click.echo("Watching for file changes.", err=True)
    attempt()
    from synclint.runner import load_checker

    load_checker()  # (once, while it waits: later runs check here, not in an early worker each)
    try:
        for batch in changes if changes is not None else python_changes(paths):
            if sys.stdout.isatty():
                click.clear()
            click.echo(f"File change detected ({', '.join(sorted(batch))}): checking again.", err=True)
            attempt()
    except KeyboardInterrupt:
        pass


def _add_noqa(paths, settings: Configuration) -> int:
    from synclint.fixers.apply import write_atomically
    from synclint.suppression import add_directives

    from synclint.suppression import UNUSED_SUPPRESSION_CODE

    # Not SL000 (nothing to silence: the file does not parse), not SL002 (the remedy for an
    # unused comment is removing it, not another comment), not notebook cells (JSON source).
    findings = [
        f for f in _lint(paths, settings)
        if f.code not in (PARSE_ERROR_CODE, UNUSED_SUPPRESSION_CODE) and f.cell is None
    ]
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    added = errors = 0
    for path, group in sorted(by_path.items()):
        try:
            from synclint.engine import decode_source

            source = decode_source(Path(path).read_bytes())
        except Exception as error:  # unreadable or undecodable: report, go on
            click.echo(f"{path}: cannot add directives: {error}", err=True)
            errors += 1
            continue
        new_source, count, skipped = add_directives(source, [(f.line, f.end_line, f.code) for f in group])
        for line in skipped:
            click.echo(f"{path}:{line}: no place for a comment (string or line continuation); not silenced",
                       err=True)
        if count:
            try:
                write_atomically(path, new_source)
            except OSError as error:
                click.echo(f"{path}: cannot write: {error.strerror or error}", err=True)
                errors += 1
                continue
            added += count
    click.echo(f"Added {added} synclint: ignore directive{'s' if added != 1 else ''}.", err=True)
    return EXIT_ERROR if errors else EXIT_CLEAN


def _check_and_fix(paths, settings: Configuration, report: _Report, baseline: Path | None, exit_zero: bool,
                   exit_non_zero_on_fix: bool, unsafe: bool) -> int:
    """``check --fix``: apply the fixes, then report what remains (ruff's contract):
    exit 1 if anything remains, or (with --exit-non-zero-on-fix) if anything was fixed."""
    from collections import Counter

    before = _lint(paths, settings)
    status = _run_fix(paths, settings, apply=True, unsafe=unsafe, quiet=True)
    after = _lint(paths, settings)
    fixed = Counter((f.path, f.code) for f in before) - Counter((f.path, f.code) for f in after)
    if baseline is not None:
        after = _without_baseline(after, baseline)
    report.emit(after, fixed)
    if status == EXIT_ERROR:
        return EXIT_ERROR
    if exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if after else EXIT_CLEAN


def _run_fix(paths, settings: Configuration, *, apply: bool, unsafe: bool, quiet: bool = False) -> int:
    from synclint.engine import SourceError
    from synclint.fixers.apply import fix_file, write_atomically
    from synclint.notebook import fix_notebook, is_notebook
    from synclint.project import resolved_key
    from synclint.runner import project_facts

    try:
        files = discover(paths, settings)
        for file in files:
            settings.settings_for(file)
    except (MissingPathError, ConfigError) as error:
        raise click.UsageError(str(error)) from error
    changed = errors = applied = 0
    # The fixer analyses a file's text on its own, but fixes what `check` shows in its project
    # (with --include-cold, what it shows then).
    options = run_options()
    project = project_facts(files, options)
    for file in files:
        try:
            result = (fix_notebook if is_notebook(file) else fix_file)(
                file, settings, unsafe=unsafe, project=project.get(resolved_key(file)), include_cold=options.include_cold)
        except SourceError as error:
            if not quiet:  # check --fix lists the file's SL000 with the other findings
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
            diff = _unified_diff(result.original, result.fixed, file)
            sys.stdout.writelines(diff)
    if apply and not quiet:
        click.echo(f"Applied {applied} fix{'es' if applied != 1 else ''} in {changed} file{'s' if changed != 1 else ''}.", err=True)
        return EXIT_ERROR if errors else EXIT_CLEAN
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed else EXIT_CLEAN


@cli.command()
@click.option("--stdio", is_flag=True, help="Accepted for clients that pass it; stdio is the only transport.")
def server(stdio: bool) -> None:
    """Run the Language Server (LSP over stdio) for editors: see docs/editors.md."""
    from synclint.server import serve

    serve()


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
    cli.add_command(_needing_torch(run_command))


def _needing_torch(command: click.Command) -> click.Command:
    """Without torch, ``synclint run`` says in one line which extra to install (no traceback)."""
    import functools

    original = command.callback

    @functools.wraps(original)
    def callback(*args, **kwargs):
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            error = click.ClickException(
                "`synclint run` needs PyTorch: install it with `pip install 'synclint[runtime]'` "
                "(or any torch build that suits your machine)."
            )
            error.exit_code = EXIT_ERROR
            raise error
        return original(*args, **kwargs)

    command.callback = callback
    return command


_register_optional_commands()


def _unified_diff(original: str, fixed: str, path) -> Iterator[str]:
    """A patch of ``path`` over Python's lines (a form feed inside a line must not split it).
    A last line without an end gets ``diff``'s marker, which ``difflib`` leaves out: without
    it the next line of the patch runs onto that one and no tool applies the patch."""
    for line in difflib.unified_diff(
        source_lines(original, keepends=True), source_lines(fixed, keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    ):
        yield line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"


def main() -> None:
    cli(prog_name="synclint")
