"""``synclint run``: the command-line face of the runtime (torch loads only when it runs)."""

from __future__ import annotations

import os
from typing import NoReturn

import click


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write the JSON report here.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), help="Export a Chrome trace here.")
@click.option(
    "--device",
    type=click.Choice(["auto", "cuda", "cpu"]),
    default="auto",
    show_default=True,
    help="cuda: PyTorch's sync debug mode; cpu: simulate 'as if on CUDA'.",
)
@click.option("-m", "module", is_flag=True, help="TARGET is a module, run like `python -m`.")
@click.option("--no-static", is_flag=True, help="Skip the join with the static findings.")
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="FILE:LINE",
    help="Accept the syncs of this line (repeatable): listed apart, never counted by budgets.",
)
@click.option(
    "--budget",
    "budget_path",
    type=click.Path(dir_okay=False),
    help="Fail (exit 1) when a site syncs more than this budget file allows, or is new.",
)
@click.option(
    "--write-budget",
    "write_budget_path",
    type=click.Path(dir_okay=False),
    help="Write this run's per-site sync counts as the budget (the ratchet's new floor).",
)
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(
    report_path: str | None,
    trace_path: str | None,
    device: str,
    module: bool,
    no_static: bool,
    allow: tuple[str, ...],
    budget_path: str | None,
    write_budget_path: str | None,
    target: str,
    args: tuple[str, ...],
) -> None:
    """Run a script (or `-m module`) and report the host-device syncs it performs.

    \b
    synclint run [--report FILE.json] [--trace FILE.json] [--device auto|cuda|cpu]
                 [--allow FILE:LINE] [--budget FILE | --write-budget FILE] SCRIPT [-- ARGS...]

    Prints each sync site (the user line, function, op, count and, on CUDA,
    the host time blocked), then joins them with the static findings of the
    files involved. The program's exit code passes through.
    """
    if not module and not os.path.isfile(target):
        _fail(f"synclint run: no such script: {target}")
    if budget_path and not os.path.isfile(budget_path):
        _fail(f"synclint run: no such budget file: {budget_path} (create it with --write-budget)")
    try:
        import torch  # noqa: F401
    except ImportError:
        _fail("synclint run needs PyTorch: pip install 'synclint[runtime]'")
    from synclint.runtime.runner import run_program

    if args and args[0] == "--":
        args = args[1:]
    try:
        result = run_program(
            target,
            args,
            module=module,
            device=device,
            report_path=report_path,
            trace_path=trace_path,
            static=not no_static,
            allow=allow,
            budget_path=budget_path,
            write_budget_path=write_budget_path,
        )
    except ValueError as exc:  # a malformed --allow or budget file
        _fail(f"synclint run: {exc}")
    raise SystemExit(result.exit_code)


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    raise SystemExit(2)
