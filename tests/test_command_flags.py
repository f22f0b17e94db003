"""A command-line switch no script, document or code of the project passes keeps its
default: the blocks its tests guard never run, and neither do the classes built only
there (synclint.project.command_flags)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.command_flags import command_line, given_a_constant_in, is_passed
from synclint.runner import RunOptions, lint_paths
from tests.notebook_helpers import notebook_of

#: Conditional-DETR's shape: ``main.py`` declares ``--masks`` and hands the parsed
#: arguments to ``build(args)``, which builds the segmentation post-processor only
#: ``if args.masks:``.
MAIN = textwrap.dedent("""\
    import argparse

    import torch

    from models.detr import build


    def get_args_parser():
        parser = argparse.ArgumentParser("DETR", add_help=False)
        parser.add_argument("--lr", default=1e-4, type=float)
        parser.add_argument("--masks", action="store_true", help="train the segmentation head")
        return parser


    def evaluate(model, postprocessors, loader, args):
        for images in loader:
            outputs = model(images)
            results = postprocessors["bbox"](outputs)
            if "segm" in postprocessors:
                results = postprocessors["segm"](results, outputs)
            if args.masks:
                print(outputs.sum().item())


    def main(args):
        model, postprocessors = build(args)
        evaluate(model, postprocessors, torch.utils.data.DataLoader([]), args)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser("DETR", parents=[get_args_parser()])
        args = parser.parse_args()
        main(args)
    """)
DETR = textwrap.dedent("""\
    import torch

    from .segmentation import PostProcessSegm


    class PostProcess(torch.nn.Module):
        def forward(self, outputs):
            return outputs.softmax(-1)


    def build(args):
        model = torch.nn.Linear(4, 4)
        postprocessors = {"bbox": PostProcess()}
        if args.masks:
            postprocessors["segm"] = PostProcessSegm()
        return model, postprocessors
    """)
SEGMENTATION = textwrap.dedent("""\
    import torch


    class PostProcessSegm(torch.nn.Module):
        def forward(self, results, outputs):
            keep = outputs.nonzero()
            return results, keep
    """)
NEVER_PASSED = ("never runs: `--masks` is never passed, so `args.masks` is always False "
                "(its default; nothing in the project passes or sets it)")
HOT = [
    ("main.py", 22, 19, "SL201", "hot", "the loop over `loader` in `evaluate`"),
    ("segmentation.py", 6, 16, "SL101", "hot", "`PostProcessSegm.forward`"),
]


def _findings(root: Path, *edits: tuple[str, str, str], include_cold: bool = True, **more: str) -> list[tuple]:
    """(file, line, column, code, context, why) of the DETR-shaped project, its files
    changed by ``edits`` ((file, old text, new text)) and ``more`` files added (``__``
    for ``/`` in their names)."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    files = {"main.py": MAIN, "models/__init__.py": "", "models/detr.py": DETR, "models/segmentation.py": SEGMENTATION}
    for name, old, new in edits:
        assert old in files[name]
        files[name] = files[name].replace(old, new)
    for name, text in {**files, **{name.replace("__", "/"): text for name, text in more.items()}}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False, include_cold=include_cold))
    return sorted((Path(f.path).name, f.line, f.column, f.code, f.context, f.why) for f in found)


COLD = [
    ("main.py", 22, 19, "SL201", "cold", NEVER_PASSED),
    ("segmentation.py", 6, 16, "SL101", "cold",
     f"never runs: `PostProcessSegm` is built only in blocks that never run: {NEVER_PASSED.removeprefix('never runs: ')}"),
]


def test_a_flag_no_one_passes_closes_its_blocks_and_what_only_they_build_never_runs(tmp_path: Path):
    assert _findings(tmp_path) == COLD
    assert _findings(tmp_path, include_cold=False) == []


#: How the project may pass or set ``--masks``: each keeps both findings hot.
_PASSED = {
    "a README": {"README.md": "Train the segmentation head:\n\n    python main.py --masks --lr 1e-4\n"},
    "an abbreviation argparse accepts": {"README.md": "python main.py --mask\n"},
    "a shell script": {"scripts__train_segm.sh": "#!/bin/sh\npython main.py \\\n    --masks\n"},
    "a configuration file": {"configs__segm.yaml": "command: python main.py --masks\n"},
    "a SLURM script": {"scripts__segm.slurm": "#!/bin/bash\n#SBATCH --gres=gpu:8\nsrun python main.py --masks\n"},
    "a bash script": {"train_segm.bash": "python main.py --masks\n"},
    "a Makefile": {"Makefile": "train-segm:\n\tpython main.py --masks\n"},
    "a Dockerfile": {"Dockerfile": "FROM pytorch/pytorch\nCMD [\"python\", \"main.py\", \"--masks\"]\n"},
    # A namespace built from a configuration file (EasyDict(yaml.safe_load(f))) under the same name.
    "a configuration key": {"configs__segm.yaml": "model:\n  masks: true\n"},
    "a JSON key": {"configs__segm.json": '{"masks": true}\n'},
    "a notebook passing it": {"demo.ipynb": notebook_of("!python main.py --masks\n")},
    "a notebook setting it": {"demo.ipynb": notebook_of("args = get_args_parser().parse_args([])\nargs.masks = True\n")},
    "parse_args in Python": {"tools__segm.py": "from main import get_args_parser\n\n"
                                               "args = get_args_parser().parse_args(['--masks'])\n"},
    "a subprocess": {"tools__launch.py": "import subprocess\n\nsubprocess.run(['python', 'main.py', '--masks'])\n"},
    "an option built from a name": {"tools__launch.py": "import subprocess\n\n"
                                                        "subprocess.run(['python', 'main.py', f'--{flag}'])\n"},
    "an option formatted from a name": {"tools__launch.py": "import os\n\nos.system('python main.py --%s' % flag)\n"},
    "a store anywhere": {"tools__segm.py": "from main import get_args_parser\n\n"
                                           "args = get_args_parser().parse_args()\nargs.masks = True\n"},
    "setattr by name": {"tools__segm.py": "from main import get_args_parser\n\n"
                                          "args = get_args_parser().parse_args()\nsetattr(args, 'masks', True)\n"},
    "a config merged by setattr": {"tools__segm.py": "def merge(args, config):\n    for k, v in config.items():\n"
                                                     "        setattr(args, k, v)\n"},
    "set_defaults by keyword": {"tools__segm.py": "from main import get_args_parser\n\n"
                                                  "get_args_parser().set_defaults(masks=True)\n"},
    "set_defaults from a config": {"tools__segm.py": "from main import get_args_parser\n\n"
                                                     "get_args_parser().set_defaults(**config)\n"},
    "a Namespace": {"tools__segm.py": "from argparse import Namespace\n\nfrom models.detr import build\n\n"
                                      "build(Namespace(masks=True))\n"},
    # A usage line in a comment tells users how to run the program, as a README does.
    "a usage comment": {"tools__segm.py": "# python -m torch.distributed.launch main.py --masks\n"},
    # (A file read without a walk: nothing in it declares, parses or builds options.)
    "argparse's usage text": {"tools__segm.py": '"""usage: main.py [-h] [--masks]"""\n'},
    # A namespace given to parse_args keeps the attributes it already has.
    "a namespace handed to parse_args": {"tools__segm.py": "from main import get_args_parser\n\nargs = "
                                                           "get_args_parser().parse_args(namespace=load(path))\n"},
    "a namespace handed by position": {"tools__segm.py": "from main import get_args_parser\n\n"
                                                         "args = get_args_parser().parse_args(None, load(path))\n"},
    # ``@segm.txt`` reads options from a file: any file may pass any option.
    "options read from a file": {"tools__segm.py": "import argparse\n\n"
                                                   "parser = argparse.ArgumentParser(fromfile_prefix_chars='@')\n"},
    "sys.argv extended at run time": {"tools__segm.py": "import os\nimport shlex\nimport sys\n\n"
                                                        "sys.argv += shlex.split(os.environ['ARGS'])\n"},
    "sys.argv extended by a call": {"tools__segm.py": "import sys\n\nsys.argv.extend(extra)\n"},
    # A config object built in Python with the flag's name and a constant (EasyDict, a
    # Python configuration file loaded as a namespace) may be passed as ``args``.
    "a config object's keyword": {"tools__demo.py": "from easydict import EasyDict\n\nfrom models.detr import build\n\n"
                                                    "build(EasyDict(masks=True))\n"},
    "a dict key": {"tools__demo.py": "from easydict import EasyDict\n\nfrom models.detr import build\n\n"
                                     "build(EasyDict({'masks': True}))\n"},
    "a Python configuration file": {"configs__segm.py": "lr = 1e-4\nmasks = True\n"},
}


@pytest.mark.parametrize("files", list(_PASSED.values()), ids=list(_PASSED))
def test_a_flag_the_project_passes_or_sets_keeps_its_blocks_hot(tmp_path: Path, files: dict[str, str]):
    assert _findings(tmp_path, **files) == HOT


def test_the_flag_s_name_read_or_passed_on_sets_nothing(tmp_path: Path):
    # A key or keyword whose value is no constant (SetCriterion's loss map, a flag passed
    # on), a local variable of its name, and a comment naming the word but no option.
    more = {"models__criterion.py": textwrap.dedent("""\
        def build_criterion(args, loss_masks):
            # masks: the segmentation loss, when --aux-masks is given
            losses = {"labels": None, "masks": loss_masks}
            masks = args.masks
            return make(losses, masks=args.masks, return_masks=True)
        """)}
    assert _findings(tmp_path, **more) == COLD


def test_a_namespace_rebuilt_from_the_parsed_one_may_hold_more(tmp_path: Path):
    # ``args = merge(args, cfg)``: a parameter named ``args`` may get the merged object,
    # which holds what the configuration does (a file the project may not ship).
    merged = ("main.py", "    main(args)", "    args = merge(args, load(args.config))\n    main(args)")
    assert _findings(tmp_path, merged) == HOT
    # Another name bound from something else, or ``args`` bound anew without reading
    # itself in another file, changes nothing.
    assert _findings(tmp_path, ("main.py", "    main(args)", "    opts = merge(args, cfg)\n    main(args)"),
                     **{"tools__convert.py": "args = (1, 2)\n"}) == COLD


def test_a_switch_whose_default_enters_the_block_keeps_it_hot(tmp_path: Path):
    assert _findings(tmp_path, ("main.py", 'action="store_true",', 'action="store_true", default=True,')) == HOT
    # An option that takes a value, whose default enters it.
    assert _findings(tmp_path, ("main.py", 'action="store_true",', 'type=int, default=1,')) == HOT


def test_an_option_taking_a_value_no_one_passes_keeps_its_default(tmp_path: Path):
    valued = [("main.py", '"--masks", action="store_true",', '"--masks", default="none",'),
              ("models/detr.py", "if args.masks:", 'if args.masks == "segm":'),
              ("main.py", "if args.masks:", 'if args.masks != "none":')]
    shown = NEVER_PASSED.replace("always False", "always 'none'")
    assert _findings(tmp_path / "valued", *valued) == [
        ("main.py", 22, 19, "SL201", "cold", shown),
        ("segmentation.py", 6, 16, "SL101", "cold",
         f"never runs: `PostProcessSegm` is built only in blocks that never run: {shown.removeprefix('never runs: ')}"),
    ]
    # A value a test selects that a document names may be passed (vq-vae-2's README:
    # "top/bottom hierarchical prior", its bottom prior trained with ``--hier bottom``,
    # which no text shows): ``== "segm"`` and ``!= "none"`` may both run.
    documented = {"README.md": "Post-processing: bbox boxes, or segm masks for panoptic segmentation.\n"}
    assert _findings(tmp_path / "documented", *valued, **documented) == HOT
    # No default: None. A README passing it, a required option, a list of values, or a
    # string default that ``type=`` converts keep the blocks.
    unset = [("main.py", '"--masks", action="store_true",', '"--masks",'), ("models/detr.py", "if args.masks:", "if args.masks is not None:"),
             ("main.py", "if args.masks:", "if args.masks is not None:")]
    assert [row[4] for row in _findings(tmp_path / "unset", *unset)] == ["cold", "cold"]
    assert _findings(tmp_path / "passed", *unset, **{"README.md": "python main.py --masks segm\n"}) == HOT
    # A computed ``required=`` may hold: every run then passes the option.
    for number, declared in enumerate(('"--masks", required=True,', '"--masks", nargs="+",', '"--masks", type=int, default="0",',
                                       '"--masks", action="append",', '"--masks", required=not DEBUG,')):
        root = tmp_path / str(number)
        assert _findings(root, ("main.py", '"--masks", action="store_true",', declared), *unset[1:]) == HOT, declared


def test_an_option_a_launcher_passes_is_passed(tmp_path: Path):
    # ``python -m torch.distributed.launch main.py`` adds ``--local_rank=N``: no text shows it.
    for option in ("--local_rank", "--local-rank"):
        ranked = [("main.py", '"--masks", action="store_true",', f'"{option}", type=int, default=-1,'),
                  ("models/detr.py", "if args.masks:", "if args.local_rank != -1:"),
                  ("main.py", "if args.masks:", "if args.local_rank != -1:")]
        assert _findings(tmp_path, *ranked) == HOT, option


def test_a_store_false_switch_no_one_passes_keeps_true(tmp_path: Path):
    negated = [("main.py", '"--masks", action="store_true"', '"--no-masks", dest="masks", action="store_false"'),
               ("models/detr.py", "if args.masks:", "if not args.masks:")]
    why = ("never runs: `--no-masks` is never passed, so `args.masks` is always True "
           "(its default; nothing in the project passes or sets it)")
    assert _findings(tmp_path, *negated) == [
        HOT[0],  # ``if args.masks:``: always taken
        ("segmentation.py", 6, 16, "SL101", "cold",
         f"never runs: `PostProcessSegm` is built only in blocks that never run: {why.removeprefix('never runs: ')}"),
    ]
    assert _findings(tmp_path, *negated, **{"README.md": "python main.py --no-masks\n"}) == HOT


#: CenterNet's shape: a module keeps the parsed options it is handed (``self.opt = opt``)
#: and reads a flag on them in ``forward``, through ``opt = self.opt`` or directly.
_KEPT_OPTIONS = [
    ("models/detr.py", "    if args.masks:\n        postprocessors[\"segm\"] = PostProcessSegm()",
     "    if True:\n        postprocessors[\"segm\"] = PostProcessSegm(args)"),
    ("models/segmentation.py", "    def forward(self, results, outputs):\n        keep = outputs.nonzero()\n",
     "    def __init__(self, args):\n        super().__init__()\n        self.args = args\n\n"
     "    def forward(self, results, outputs):\n        args = self.args\n        keep = None\n"
     "        if args.masks:\n            keep = outputs.nonzero()\n"),
]
_KEPT_NEVER_PASSED = NEVER_PASSED.replace("`args.masks`", "`self.args.masks`")


def test_a_flag_read_on_the_options_a_module_keeps_closes_its_blocks(tmp_path: Path):
    assert _findings(tmp_path, *_KEPT_OPTIONS) == [
        ("main.py", 22, 19, "SL201", "cold", NEVER_PASSED),
        ("segmentation.py", 13, 20, "SL101", "cold", _KEPT_NEVER_PASSED),
    ]
    direct = ("models/segmentation.py", "        if args.masks:", "        if self.args.masks:")
    assert _findings(tmp_path, *_KEPT_OPTIONS, direct)[1] == ("segmentation.py", 13, 20, "SL101", "cold", _KEPT_NEVER_PASSED)
    assert _findings(tmp_path, *_KEPT_OPTIONS, **{"README.md": "python main.py --masks\n"})[1][4] == "hot"


def test_an_attribute_of_self_or_a_local_of_another_name_is_no_receiver(tmp_path: Path):
    # ``self.cfg``: no ``parse_args`` result is named ``cfg``; ``args = self.args`` rebound
    # from something else in the method may be any object.
    renamed = ("models/segmentation.py", "        args = self.args\n", "        args = self.cfg\n")
    assert _findings(tmp_path, *_KEPT_OPTIONS, renamed)[1][4] == "hot"
    assert _findings(tmp_path, *_KEPT_OPTIONS, ("models/segmentation.py", "        if args.masks:", "        if self.cfg.masks:"))[1][4] == "hot"
    rebound = ("models/segmentation.py", "        keep = None\n", "        keep = None\n        if outputs is None:\n            args = load()\n")
    assert _findings(tmp_path, *_KEPT_OPTIONS, rebound)[1][4] == "hot"


def test_a_flag_read_on_a_name_bound_from_parse_args_in_the_same_scope(tmp_path: Path):
    # ``args`` read as the module's global in ``evaluate``, bound by ``parse_args`` in the
    # ``__main__`` block: not a parameter, and still the parsed namespace.
    global_args = [("main.py", "def evaluate(model, postprocessors, loader, args):", "def evaluate(model, postprocessors, loader):"),
                   ("main.py", "torch.utils.data.DataLoader([]), args)", "torch.utils.data.DataLoader([]))")]
    assert _findings(tmp_path, *global_args)[0] == ("main.py", 22, 19, "SL201", "cold", NEVER_PASSED)
    # Bound in the function itself.
    local = ("main.py", "    for images in loader:", "    args = get_args_parser().parse_args()\n    for images in loader:")
    assert _findings(tmp_path, *global_args, local)[0] == ("main.py", 23, 19, "SL201", "cold", NEVER_PASSED)


def test_a_namespace_returned_by_a_parsing_function_of_the_file_is_the_parsed_one(tmp_path: Path):
    # yolov5's ``opt = parse_opt()``, whose ``return parser.parse_known_args()[0] if known
    # else parser.parse_args()`` binds no name of its own.
    wrapped = [("main.py", '    parser = argparse.ArgumentParser("DETR", parents=[get_args_parser()])\n    args = parser.parse_args()\n',
                "    args = parse_opt()\n"),
               ("main.py", "\n\nif __name__", "\n\ndef parse_opt(known=False):\n    parser = get_args_parser()\n"
                "    return parser.parse_known_args()[0] if known else parser.parse_args()\n\n\nif __name__")]
    assert _findings(tmp_path, *wrapped) == COLD
    # A function that may return something else is no such wrapper.
    other = (wrapped[1][0], wrapped[1][1], wrapped[1][2].replace("    return parser", "    if known:\n        return load()\n    return parser"))
    assert _findings(tmp_path, wrapped[0], other) == HOT


def test_a_module_s_parsed_name_a_function_rebinds_as_global_is_no_receiver(tmp_path: Path):
    # ``global args; args = Config(path)`` replaces the module's namespace with an object
    # that may hold any attribute: ``evaluate``'s global ``args`` is not the parsed one.
    global_args = [("main.py", "def evaluate(model, postprocessors, loader, args):", "def evaluate(model, postprocessors, loader):"),
                   ("main.py", "torch.utils.data.DataLoader([]), args)", "torch.utils.data.DataLoader([]))")]
    loader = "\n\ndef load_config(path):\n    global args\n    args = Config(path)\n\n\nif __name__"
    assert _findings(tmp_path, *global_args, ("main.py", "\n\nif __name__", loader))[0][4] == "hot"
    # A function that only reads the global, or binds it from ``parse_args`` too, changes nothing.
    reader = "\n\ndef show():\n    global args\n    print(args.lr)\n\n\ndef reparse():\n    global args\n    args = get_args_parser().parse_args()\n\n\nif __name__"
    assert _findings(tmp_path, *global_args, ("main.py", "\n\nif __name__", reader))[0] == ("main.py", 22, 19, "SL201", "cold", NEVER_PASSED)


def test_a_namespace_handed_back_by_a_function_that_stores_on_it_is_the_parsed_one(tmp_path: Path):
    # CenterNet's ``opt = self.update_dataset_info_and_set_heads(opt, dataset)`` stores
    # attributes on ``opt`` and returns it: the same object (its stores are counted).
    helper = "\n\ndef with_heads(args, heads):\n    args.heads = heads\n    return args\n"
    updated = [("main.py", "\n\nif __name__", helper + "\n\nif __name__"),
               ("main.py", "    main(args)", "    args = with_heads(args, 2)\n    main(args)")]
    assert _findings(tmp_path, *updated) == COLD
    # A method of that name is another function (``tools.with_heads(args, 2)``).
    assert _findings(tmp_path, updated[0], ("main.py", "    main(args)", "    args = tools.with_heads(args, 2)\n    main(args)")) == HOT
    # One that may return another object is a rebuild.
    other = helper.replace("    return args\n", "    if heads:\n        return load(heads)\n    return args\n")
    assert _findings(tmp_path, ("main.py", "\n\nif __name__", other + "\n\nif __name__"), updated[1]) == HOT


def test_a_module_setting_its_own_layers_by_name_stores_no_flag(tmp_path: Path):
    # ``setattr(self, name, layer)`` stores on the module, never on the parsed namespace.
    layers = {"models__heads.py": "import torch\n\n\nclass Heads(torch.nn.Module):\n    def __init__(self, names):\n"
                                  "        super().__init__()\n        for name in names:\n"
                                  "            setattr(self, name, torch.nn.Linear(2, 2))\n"}
    assert _findings(tmp_path, **layers) == COLD
    merged = {"tools__merge.py": "def merge(cfg, args):\n    for k, v in cfg.items():\n        setattr(args, k, v)\n"}
    assert _findings(tmp_path, **merged) == HOT


def test_a_flag_read_on_another_receiver_is_another_object_s_attribute(tmp_path: Path):
    # ``cfg``: a parameter of a name no ``parse_args`` result has; ``outputs``: a local.
    renamed = [("main.py", "loader, args):", "loader, cfg):"), ("main.py", "if args.masks:", "if cfg.masks:"),
               ("models/detr.py", "if args.masks:", "outputs = model(torch.zeros(4))\n    if outputs.masks:")]
    assert _findings(tmp_path, *renamed) == HOT
    # ``self.masks`` of a module: its own attribute, whatever the command line says.
    own = ("models/segmentation.py", "        keep = outputs.nonzero()\n",
           "        keep = None\n        if self.masks:\n            keep = outputs.nonzero()\n")
    assert _findings(tmp_path, own, ("models/detr.py", "    if args.masks:\n", "    if True:\n"))[1] == (
        "segmentation.py", 8, 20, "SL101", "hot", "`PostProcessSegm.forward`")


def test_what_a_file_says_about_flags():
    tree_source = textwrap.dedent("""\
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("-m", "--masks", action="store_true")
        parser.add_argument("--no-aux", dest="aux", action="store_false")
        parser.add_argument("--eval", action="store_true", default=True)
        parser.add_argument("--lr", type=float, default=0.1)
        parser.add_argument("data")
        args, unknown = parser.parse_known_args()
        opt = parser.parse_known_args()[0]
        os.system("python train.py --amp -vq")
        checkpoint = f"{stem}-{epoch}.pth"
        """)
    import ast

    found = command_line(tree_source, ast.parse(tree_source))
    assert [(d.dest, d.options, d.default) for d in found.declared] == [
        ("masks", ("-m", "--masks"), (False,)), ("aux", ("--no-aux",), (True,)), ("eval", ("--eval",), (True,)),
        ("lr", ("--lr",), (0.1,)),
    ]
    assert found.parsed_names == {"args", "opt"}
    assert found.options_spelled == {"--amp", "-vq"}
    assert not found.by_computed_name  # (``f"{stem}-{epoch}"`` builds no option)
    for builds_an_option in ('f"--{name}"', '"--" + name', '"--{}".format(name)', '"python main.py --%s" % name',
                             'parser.set_defaults(**config)', 'Namespace(**config)', 'parser.add_argument(name)',
                             'parser.parse_args(namespace=cfg)', 'parser.parse_known_args(argv, cfg)',
                             'argparse.ArgumentParser(fromfile_prefix_chars="@")', 'sys.argv += extra',
                             'sys.argv[1:] = words', 'sys.argv.insert(1, word)',
                             'jsonargparse.ArgumentParser(default_env=True)',
                             'ArgumentParser(default_config_files=["~/.segm.yaml"])',
                             'parser.add_argument("--config", action=jsonargparse.ActionConfigFile)'):
        assert command_line(builds_an_option, ast.parse(builds_an_option)).by_computed_name, builds_an_option
    for passes_only_what_it_spells in ('sys.argv += ["--amp"]', 'sys.argv = sys.argv[:1] + ["--amp"]',
                                       'sys.argv.insert(1, "--amp")', 'parser.parse_args(["--amp"])',
                                       'argparse.ArgumentParser(fromfile_prefix_chars=None)',
                                       'ArgumentParser(default_env=False)'):
        tree = ast.parse(passes_only_what_it_spells)
        assert not command_line(passes_only_what_it_spells, tree).by_computed_name, passes_only_what_it_spells
    usage = "# Usage: python main.py --masks -vq\nparser.add_argument('--aux', action='store_true')  # see --aux_loss\n"
    assert command_line(usage, ast.parse(usage)).options_spelled == {"--masks", "-vq", "--aux_loss"}
    assert is_passed("--masks", {"--mask"}) and not is_passed("--masks", {"--masks_loss"})
    assert is_passed("-q", {"-vq"}) and not is_passed("-m", {"-vq", "--m"})


@pytest.mark.parametrize(("text", "gives"), [
    ("cfg = EasyDict(masks=True)\n", True),
    ("cfg = {'lr': 1e-4, \"masks\": False}\n", True),
    ("masks = 1\n", True),
    ("    masks: bool = True\n", True),
    ("def forward(self, src, masks: Optional[Tensor] = None):\n", False),
    ("losses = {'masks': self.loss_masks, 'boxes': 0}\n", False),
    ("dataset = CocoDetection(root, return_masks=True)\n", False),
    ("args.masks = True\n", False),  # (an attribute's store: attribute_stores knows it)
    ("if args.masks == True:\n", False),
    # A function's local (RAFT's ``add_noise = True`` in ``train()``) or a parameter's
    # default sets no namespace; a class's field may be one.
    ("def train(args):\n    masks = True\n    return masks\n", False),
    ("def build(masks=True):\n    return masks\n", False),
    # ... unless it is then given by name: a config built from its locals.
    ("def get_cfg():\n    masks = True\n    return EasyDict(masks=masks, lr=1e-4)\n", True),
    ("def get_cfg():\n    masks = True\n    return {'masks': masks}\n", True),
    ("def train(args):\n    masks = True\n    return build(masks=args.masks)\n", False),
    ("class Config:\n    masks = True\n", True),
    ("if True:\n    masks = 'data/' + 'x'\nmasks2 = 1\n", False),
    ("cfg = dict(masks=-1)\n", True),
    ("cfg = dict(masks=True\n", True),  # (a file Python cannot parse: it may give any)
])
def test_a_constant_given_to_the_flag_s_name(tmp_path: Path, text: str, gives: bool):
    (tmp_path / "config.py").write_text(text)
    assert given_a_constant_in([str(tmp_path / "config.py")], {"masks", "aux"}) == ({"masks"} if gives else set())
    assert given_a_constant_in([str(tmp_path / "missing.py")], {"masks"}) == {"masks"}


def test_a_class_also_named_outside_the_closed_blocks_runs(tmp_path: Path):
    why = f"never runs: `PostProcessSegm` is built only in blocks that never run: {NEVER_PASSED.removeprefix('never runs: ')}"
    # An import that builds nothing (``hubconf.py`` importing it for no entry point) names no one's instance.
    imported = {"hubconf.py": "from models.segmentation import PostProcessSegm  # noqa: F401\n"}
    assert _findings(tmp_path, **imported)[1] == ("segmentation.py", 6, 16, "SL101", "cold", why)
    built = {"hubconf.py": "from models.segmentation import PostProcessSegm\n\n\n"
                           "def segm_postprocessor():\n    return PostProcessSegm()\n"}
    assert _findings(tmp_path / "built", **built)[1] == HOT[1]
    # (A project of its own: ``hubconf.py`` above builds it.)
    exported = {"models__segmentation.py": SEGMENTATION + '\n\n__all__ = ["PostProcessSegm"]\n'}
    assert _findings(tmp_path / "exported", **exported)[1] == HOT[1]


def test_a_source_on_its_own_does_not_show_what_passes_its_flags():
    from synclint.project.store import facts_for_source

    script = MAIN.replace("from models.detr import build\n", "def build(args):\n    return None, {}\n")
    facts = facts_for_source(script, "main.py")
    # (Its README, scripts and other files are not seen: its blocks stay open.)
    assert [context.why for _first, _last, context in facts.regions if "never passed" in context.why] == []
