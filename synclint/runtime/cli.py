"""``synclint run``: the command-line face of the runtime (torch loads only when it runs)."""

from __future__ import annotations

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
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(
    report_path: str | None,
    trace_path: str | None,
    device: str,
    module: bool,
    no_static: bool,
    target: str,
    args: tuple[str, ...],
) -> None:
    """Run a script (or `-m module`) and report the host-device syncs it performs.

    \b
    synclint run [--report FILE.json] [--trace FILE.json] [--device auto|cuda|cpu] SCRIPT [-- ARGS...]

    Prints each sync site (the user line, function, op, count and, on CUDA,
    the host time blocked), then joins them with the static findings of the
    files involved. The program's exit code passes through.
    """
    from synclint.runtime.runner import run_program

    if args and args[0] == "--":
        args = args[1:]
    result = run_program(
        target,
        args,
        module=module,
        device=device,
        report_path=report_path,
        trace_path=trace_path,
        static=not no_static,
    )
    raise SystemExit(result.exit_code)
