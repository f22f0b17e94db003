"""A long hypothesis run of the robustness property in tests/fuzz_properties.py.

    python benchmarks/fuzz.py [--examples N] [--seed S]

Checks that ``check`` never raises and that ``fix_text(src, unsafe=True)``
always parses and is idempotent, on generated modules (hypothesmith),
some spliced with the rules' examples. Prints the failing source, if any.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from fuzz_properties import check_never_raises_and_fix_is_sound, modules  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(modules())
    def run(source: str) -> None:
        check_never_raises_and_fix_is_sound(source)

    started = time.perf_counter()
    run()
    print(f"{args.examples} generated modules: no crash, fixes parse and are idempotent "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
