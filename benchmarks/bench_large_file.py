"""Wall time and peak memory of `synclint check` on one generated file, by file size.

    python benchmarks/bench_large_file.py [--sizes 0.25,0.5,1,5] [--max-file-size SIZE]

Each size gets a generated module of that many MB (a PyTorch module class
repeated, each with a few sync hazards) and one run of
``synclint check --no-cache --jobs 1`` in a fresh process, which reports its
own peak resident memory (``ru_maxrss``). Runs go side by side in one session:
first with the size limit off (``--max-file-size 0``, what the analysis itself
costs), then with the default limit (what a user gets: files above it are
refused with one SL000). The bar: a 5 MB generated file is checked in <= 20 s
with <= 1.5 GB peak, or rejected by the size limit with one SL000. Sizes whose
unlimited run would need more memory than the machine has can be left out
with ``--sizes``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BLOCK = '''

class Block{i}(torch.nn.Module):
    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        mask = target > 0
        idx = torch.nonzero(mask)
        y = x[mask] * 2.0 + x.mean(dim=0, keepdim=True)
        if y.sum() > 0:
            y = y / (y.norm() + 1e-6)
        values = [float(v) for v in range(8)]
        return y.sum() + len(values) + idx.shape[0] + x.item()
'''

# Runs in the child: the check, then its own peak memory and the findings' codes.
CHILD = """
import json, resource, sys
from click.testing import CliRunner
from synclint.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:])
codes = [line.split(" ")[1] for line in result.output.splitlines() if ": SL" in line]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
print(json.dumps({"exit": result.exit_code, "peak": peak, "findings": len(codes), "sl000": codes.count("SL000")}))
"""


def generate(path: Path, megabytes: float) -> int:
    target = int(megabytes * 1_000_000)
    with open(path, "w") as out:
        out.write("import torch\n")
        i = 0
        while out.tell() < target:
            out.write(BLOCK.format(i=i))
            i += 1
    return path.stat().st_size


def measure(path: Path, *limit: str) -> dict:
    command = [sys.executable, "-c", CHILD, "check", "--no-cache", "--jobs", "1", *limit, str(path)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        return {"wall": wall, "error": (result.stderr or result.stdout)[-300:]}
    return {"wall": wall, **json.loads(result.stdout.splitlines()[-1])}


def row(label: str, size: int, run: dict) -> str:
    if "error" in run:
        return f"{label:<10} {size / 1e6:>7.2f} MB  failed after {run['wall']:.1f} s: {run['error']!r}"
    return (
        f"{label:<10} {size / 1e6:>7.2f} MB  {run['wall']:>7.1f} s  {run['peak'] / 2**20:>8.0f} MiB peak"
        f"  {run['findings']:>6} findings ({run['sl000']} SL000)"
        f"  {run['wall'] / (size / 1e6):>6.1f} s/MB  {run['peak'] / 2**20 / (size / 1e6):>6.0f} MiB/MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.25,0.5,1,5", help="comma-separated sizes in MB")
    parser.add_argument("--max-file-size", default=None, help="the limit for the second run (default: synclint's)")
    parser.add_argument("--skip-unlimited-above", type=float, default=2.0,
                        help="MB above which the unlimited run is skipped (it needs ~1 GB per MB)")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    limit = ["--max-file-size", args.max_file_size] if args.max_file_size else []
    with tempfile.TemporaryDirectory() as directory:
        print(f"{'run':<10} {'size':>10}  {'wall':>9}  {'peak':>13}")
        for megabytes in sizes:
            path = Path(directory) / f"generated_{megabytes}mb.py"
            size = generate(path, megabytes)
            if megabytes <= args.skip_unlimited_above:
                print(row("no limit", size, measure(path, "--max-file-size", "0")), flush=True)
            print(row("default" if not limit else "limit", size, measure(path, *limit)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
