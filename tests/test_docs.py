"""The docs cannot drift: rule pages are generated, every key and option is documented, links resolve."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import click
import pytest

from synclint.cli import cli
from synclint.config import KNOWN_KEYS

ROOT = Path(__file__).parents[1]
DOCS = (ROOT / "docs").resolve()
#: Pages colleagues write in their own branches; links to them resolve once merged.
WRITTEN_ELSEWHERE = {"fixes.md", "runtime.md", "giou.md"}
LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_rule_docs", ROOT / "scripts" / "gen_rule_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rule_pages_are_current():
    stale = _load_generator().stale_pages()
    assert not stale, f"stale rule docs {[str(p.relative_to(ROOT)) for p in stale]}: run python scripts/gen_rule_docs.py"


def test_configuration_reference_documents_exactly_the_known_keys():
    documented = set(re.findall(r"^### `([\w-]+)`$", (DOCS / "configuration.md").read_text(), re.MULTILINE))
    assert documented == set(KNOWN_KEYS)


def test_index_links_every_page():
    linked = {(DOCS / m.group(1)).resolve() for m in LINK.finditer((DOCS / "index.md").read_text())}
    pages = {p.resolve() for p in DOCS.rglob("*.md") if p.name != "index.md" or p.parent != DOCS}
    assert pages - linked == set()
    assert {DOCS / name for name in WRITTEN_ELSEWHERE} <= linked


LINKS = sorted(
    {(page.relative_to(DOCS).as_posix(), m.group(1)) for page in DOCS.rglob("*.md") for m in LINK.finditer(page.read_text())}
)


@pytest.mark.parametrize(("page", "target"), LINKS, ids=[f"{p}->{t}" for p, t in LINKS])
def test_relative_links_resolve(page, target):
    resolved = ((DOCS / page).parent / target).resolve()
    assert resolved.exists(), f"docs/{page} links to missing {target}"


@pytest.mark.parametrize("command", ["check", "fix"])
def test_every_cli_option_is_documented(command):
    text = "\n".join(p.read_text() for p in DOCS.glob("*.md"))
    options = [
        name
        for param in cli.commands[command].params
        if isinstance(param, click.Option)
        for name in param.opts
        if name.startswith("--") and name != "--help"
    ]
    assert [o for o in options if f"`{o}" not in text and f"{o} " not in text] == []


def test_the_tensor_method_names_match_the_installed_torch():
    # synclint/analysis/tensor_methods.py is generated from torch.Tensor (the checker never
    # imports torch); the dev extras pin the torch it was generated from.
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("gen_tensor_methods", ROOT / "scripts" / "gen_tensor_methods.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from synclint.analysis.tensor_methods import TENSOR_ATTRIBUTE_NAMES

    assert set(module.tensor_attribute_names()) == TENSOR_ATTRIBUTE_NAMES, (
        f"run python scripts/gen_tensor_methods.py (torch {torch.__version__})")
