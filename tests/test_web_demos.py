"""A Gradio or Streamlit app is a demo: its code, and what only it calls, is cold
(:mod:`synclint.project.web_demos`)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.web_demos import web_demo_library
from synclint.runner import RunOptions, lint_paths

TRAIN = """\
import torch
from torch.utils.data import DataLoader

from helpers import to_image


def train(model, ds):
    for x in DataLoader(ds):
        loss = model(x.cuda()).sum()
        print(loss.item(), to_image(loss))
"""

HELPERS = """\
def to_image(t):
    return t.cpu().numpy()
"""

APP = """\
import torch
{imports}
from torch.utils.data import DataLoader

from helpers import to_image


def infer(model, people):
    for batch in DataLoader(people):
        out = model(batch.cuda())
        images = to_image(out)
        print(out.sum().item())
    return images
"""


def _findings(tmp_path: Path, app: str) -> dict[tuple[str, int], tuple[str, str]]:
    files = {"pyproject.toml": "[project]\nname = 'demo'\n", "train.py": TRAIN, "helpers.py": HELPERS, "app.py": app}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False, include_cold=True))
    return {(Path(f.path).name, f.line): (f.context, f.why) for f in found if f.code == "SL201"}


@pytest.mark.parametrize(
    ("imports", "library"),
    [("import gradio as gr", "Gradio"), ("from gradio import Blocks", "Gradio"),
     ("try:\n    import streamlit as st\nexcept ImportError:\n    st = None", "Streamlit")],
)
def test_a_web_demo_app_and_what_only_it_calls_are_cold(tmp_path, imports, library):
    found = _findings(tmp_path, APP.format(imports=imports))
    line = 12 + imports.count("\n")
    assert found[("app.py", line)] == ("cold", f"demo code (a {library} app)")  # in its loop over a DataLoader
    assert found[("train.py", 10)][0] == "hot"  # the program's own step is untouched
    # `to_image` is called from the training loop too: hot, whatever the app does.
    assert found[("helpers.py", 2)][0] == "hot"


def test_a_helper_only_the_app_calls_is_demo_code_too(tmp_path):
    app = APP.format(imports="import gradio as gr")
    (tmp_path / "extra.py").write_text("def show(t):\n    return t.cpu()\n")
    found = _findings(tmp_path, app.replace("from helpers import to_image", "from helpers import to_image\nfrom extra import show")
                      .replace("        images = to_image(out)\n", "        images = show(to_image(out))\n"))
    assert found[("extra.py", 2)] == ("cold", "called only from demo code")


def test_an_import_inside_a_function_is_no_demo_app(tmp_path):
    # A training script that shows a page when asked is still the program.
    app = APP.format(imports="").replace("def infer(", "def launch():\n    import gradio as gr\n    return gr\n\n\ndef infer(")
    found = _findings(tmp_path, app)
    assert found[("app.py", 17)][0] == "hot"


def test_an_app_that_defines_the_model_is_not_cold_as_a_whole(tmp_path):
    # Its module's `forward` is a step root the program may import (as for plotting code).
    app = APP.format(imports="import gradio as gr") + (
        "\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.sum().item()\n")
    found = _findings(tmp_path, app)
    assert found[("app.py", 12)][0] == "hot"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import gradio as gr\n", "gradio"),
        ("import streamlit.components.v1 as components\n", "streamlit"),
        ("if True:\n    from gradio import Interface\n", "gradio"),
        ("from .gradio import ui\n", None),  # a project module of that name
        ("def main():\n    import gradio\n", None),
        ("import gradio_client\n", None),
        ("if __name__ == '__main__':\n    import gradio\n", "gradio"),  # how an app runs, too
    ],
)
def test_which_imports_make_a_web_demo(source, expected):
    assert web_demo_library(ast.parse(textwrap.dedent(source))) == expected


def test_a_training_script_that_imports_gradio_for_an_optional_page_is_the_program(tmp_path):
    # Its loop over a DataLoader backpropagates on every pass: it trains, whatever page
    # `--ui` shows instead; its steps and the helpers they call stay hot.
    app = APP.format(imports="import gradio as gr").replace(
        "        out = model(batch.cuda())\n", "        out = model(batch.cuda())\n        out.sum().backward()\n")
    found = _findings(tmp_path, app)
    assert found[("app.py", 13)][0] == "hot"


def test_a_demo_callback_that_backpropagates_outside_a_loop_over_batches_stays_a_demo(tmp_path):
    # (DragGAN-like apps optimise a latent per request: no loop over batches.)
    app = APP.format(imports="import gradio as gr") + (
        "\n\ndef drag(latent, steps):\n    for _ in range(steps):\n        latent.sum().backward()\n")
    found = _findings(tmp_path, app)
    assert found[("app.py", 12)] == ("cold", "demo code (a Gradio app)")
