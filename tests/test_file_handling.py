"""Which files are read, and how `fix --apply` writes them back (links, owner, endings, errors)."""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.cli import cli
from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

HAZARD = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
LOADER = "import torch\nfor x, y in loader:\n    x: torch.Tensor  # a proven tensor: the safe fix needs one\n    x = x.to(device)\n"
LOADER_FIXED = "import torch\nfor x, y in loader:\n    x: torch.Tensor  # a proven tensor: the safe fix needs one\n    x = x.to(device, non_blocking=True)\n"


def run(*args: str, cwd: Path | None = None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)


def synclint(*args: str, cwd: Path, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "synclint", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs
    )


# -- .gitignore and --force-exclude ----------------------------------------------------


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local_only.py\n")
    (tmp_path / ".gitignore").write_text("generated/\n*_gen.py\n!keep_gen.py\n")
    for name in ("a.py", "b_gen.py", "keep_gen.py", "local_only.py", "generated/c.py", "pkg/d.py", "pkg/e.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(HAZARD)
    (tmp_path / "pkg" / ".gitignore").write_text("e.py\n")
    return tmp_path


def _files(result) -> set[str]:
    assert result.exit_code in (0, 1), result.output
    return {line.split(":", 1)[0] for line in result.output.splitlines() if ": SL" in line}


def test_gitignore_is_respected_when_searching(repository):
    assert _files(run("check", "--no-cache", ".", cwd=repository)) == {"a.py", "keep_gen.py", "pkg/d.py"}


def test_no_respect_gitignore_searches_everything(repository):
    found = _files(run("check", "--no-cache", "--no-respect-gitignore", ".", cwd=repository))
    assert found == {"a.py", "b_gen.py", "keep_gen.py", "local_only.py", "generated/c.py", "pkg/d.py", "pkg/e.py"}


def test_respect_gitignore_can_be_turned_off_in_the_config(repository):
    (repository / "pyproject.toml").write_text("[tool.synclint]\nrespect-gitignore = false\n")
    assert "b_gen.py" in _files(run("check", "--no-cache", ".", cwd=repository))


def test_explicit_files_are_checked_unless_force_exclude(repository):
    named = ("b_gen.py", "generated/c.py", "pkg/e.py", "a.py")
    assert _files(run("check", "--no-cache", *named, cwd=repository)) == set(named)
    assert _files(run("check", "--no-cache", "--force-exclude", *named, cwd=repository)) == {"a.py"}
    (repository / "pyproject.toml").write_text('[tool.synclint]\nforce-exclude = true\nextend-exclude = ["a.py"]\n')
    assert _files(run("check", "--no-cache", *named, cwd=repository)) == set()


def test_an_editors_history_folder_is_not_searched_but_checked_when_named(tmp_path):
    # VS Code's Local History: DeepRobust commits `.history/deeprobust/image/attack/Universal_20240318212542.py`.
    for name in ("a.py", ".history/a_20240318212542.py", ".vscode/tasks.py", ".idea/b.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(HAZARD)
    assert _files(run("check", "--no-cache", ".", cwd=tmp_path)) == {"a.py"}
    assert _files(run("check", "--no-cache", ".history/a_20240318212542.py", cwd=tmp_path)) == {
        ".history/a_20240318212542.py"}


def test_gitignore_outside_a_repository_does_not_apply(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "a.py").write_text(HAZARD)
    assert _files(run("check", "--no-cache", ".", cwd=tmp_path)) == {"a.py"}


# -- only regular files ------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("command", [["check", "--no-cache"], ["fix"], ["fix", "--apply"]])
def test_a_fifo_named_like_python_does_not_hang_a_search(tmp_path, command):
    (tmp_path / "a.py").write_text(LOADER)
    os.mkfifo(tmp_path / "pipe.py")
    result = synclint(*command, ".", cwd=tmp_path, timeout=60)  # hung forever before
    assert result.returncode in (0, 1), result.stderr
    assert "pipe.py" not in result.stdout + result.stderr
    assert "a.py" in result.stdout + result.stderr or (tmp_path / "a.py").read_text() == LOADER_FIXED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("command", [["check", "--no-cache"], ["fix", "--apply"]])
def test_a_fifo_named_explicitly_is_reported(tmp_path, command):
    os.mkfifo(tmp_path / "pipe.py")
    result = synclint(*command, "pipe.py", cwd=tmp_path, timeout=60)
    assert result.returncode in (1, 2)
    assert "pipe.py" in result.stdout + result.stderr and "not a regular file" in result.stdout + result.stderr


def test_check_dev_stdin_does_not_silently_check_nothing(tmp_path):
    if not os.path.exists("/dev/stdin"):
        pytest.skip("no /dev/stdin")
    result = synclint("check", "--no-cache", "/dev/stdin", cwd=tmp_path, input=HAZARD, timeout=60)
    assert result.returncode != 0
    assert "/dev/stdin" in result.stdout and "SL000" in result.stdout and "not a regular file" in result.stdout


# -- the size limit ----------------------------------------------------------------------


def test_a_file_over_the_size_limit_gets_exactly_one_sl000(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(HAZARD + "x = 1\n" * 400)  # about 2.5 KB
    findings = lint_paths([big], Settings(root=tmp_path, max_file_size=1000), RunOptions(jobs=1, use_cache=False))
    assert [(f.code, f.line) for f in findings] == [("SL000", 1)]
    assert "too large" in findings[0].message and "1,000" in findings[0].message
    unlimited = lint_paths([big], Settings(root=tmp_path, max_file_size=0), RunOptions(jobs=1, use_cache=False))
    assert [f.code for f in unlimited] == ["SL101"]


def test_a_too_large_file_no_rule_could_report_on_gets_no_notice(tmp_path):
    # Detic's 1.4 MB `lvis_22k_categories.py` is a list of dicts: valid Python where no
    # rule's token appears, as the prefilter lets a small file skip the parse. "Too large to
    # check" told users nothing; a file with a syntax error, or one a rule could report on,
    # keeps its notice. (Only one rule selected: its token `.nonzero` decides.)
    data = tmp_path / "categories.py"
    data.write_text("CATEGORIES = [\n" + '    {"id": 1, "name": "aerosol_can"},\n' * 60 + "]\n")
    broken = tmp_path / "broken.py"
    broken.write_text("CATEGORIES = [\n" + '    {"id": 1, "name": "aerosol_can"},\n' * 60)
    mentions = tmp_path / "mentions.py"
    mentions.write_text("NAMES = [\n" + '    "a",\n' * 300 + "]\n# torch.nonzero is slow\n")
    settings = Settings(root=tmp_path, max_file_size=1000, select=("SL101",))
    found = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).name, f.code) for f in found] == [("broken.py", "SL000"), ("mentions.py", "SL000")]


def test_fix_passes_over_a_too_large_file_no_rule_could_report_on(tmp_path):
    # `check` says nothing of such a file, so `fix` (and `check --fix`) has nothing to fix
    # in it either: no "SL000 too large" on stderr, no exit 2 under "All checks passed!".
    data = tmp_path / "categories.py"
    data.write_text("CATEGORIES = [\n" + '    {"id": 1, "name": "aerosol_can"},\n' * 60 + "]\n")
    result = run("fix", "--max-file-size", "1000", "categories.py", cwd=tmp_path)
    assert result.exit_code == 0 and "too large" not in result.output
    result = run("check", "--no-cache", "--fix", "--max-file-size", "1000", "categories.py", cwd=tmp_path)
    assert result.exit_code == 0 and "too large" not in result.output
    (tmp_path / "big.py").write_text(HAZARD + "x = 1\n" * 400)  # one a rule could report on keeps it
    result = run("fix", "--max-file-size", "1000", "big.py", cwd=tmp_path)
    assert result.exit_code == 2 and "too large" in result.output


def test_a_too_large_test_file_s_notice_is_cold_like_its_findings(tmp_path):
    # Everything in test code is cold (hidden by default), so the notice that a test file's
    # findings were not computed is too; a too-large source file keeps its SL000.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (tmp_path / "pkg" / "tests").mkdir(parents=True)
    for name in ("pkg/model.py", "pkg/tests/helpers.py"):
        (tmp_path / name).write_text(HAZARD + "x = 1\n" * 400)
    settings = Settings(root=tmp_path, max_file_size=1000)
    shown = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.code, f.context) for f in shown] == [
        ("pkg/model.py", "SL000", None)
    ]
    everything = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).relative_to(tmp_path).as_posix(), f.code, f.context, f.why) for f in everything] == [
        ("pkg/model.py", "SL000", None, ""),
        ("pkg/tests/helpers.py", "SL000", "cold", "test or benchmark code: its findings would be cold"),
    ]


def test_a_type_stub_never_runs_so_its_notice_and_findings_are_cold(tmp_path):
    # torch ships 1 MB stubs (``torch/_VF.pyi``): a notice that their findings were not
    # computed told users about code that never runs. Its twin ``.py`` keeps its SL000.
    for name in ("big.py", "big.pyi"):
        (tmp_path / name).write_text(HAZARD + "x = 1\n" * 400)
    stub = tmp_path / "small.pyi"
    stub.write_text("import torch\ndef f(x: torch.Tensor) -> int:\n    return x.nonzero()\n")
    settings = Settings(root=tmp_path, max_file_size=1000)
    shown = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False))
    assert [(Path(f.path).name, f.code) for f in shown] == [("big.py", "SL000")]
    everything = lint_paths([tmp_path], settings, RunOptions(jobs=1, use_cache=False, include_cold=True))
    assert [(Path(f.path).name, f.code, f.line, f.context, f.why) for f in everything] == [
        ("big.py", "SL000", 1, None, ""),
        ("big.pyi", "SL000", 1, "cold", "type stub (never runs): its findings would be cold"),
        ("small.pyi", "SL101", 3, "cold", "type stub (never runs)"),
    ]


def test_the_size_limit_is_set_in_config_or_on_the_command_line(tmp_path):
    (tmp_path / "big.py").write_text(HAZARD + "x = 1\n" * 400)
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nmax-file-size = "1KB"\n')
    result = run("check", "--no-cache", "big.py", cwd=tmp_path)
    assert result.exit_code == 1 and result.output.count(": SL000 ") == 1 and "SL101" not in result.output
    result = run("check", "--no-cache", "--max-file-size", "1MB", "big.py", cwd=tmp_path)
    assert "SL101" in result.output and "SL000" not in result.output
    result = run("fix", "--apply", "--max-file-size", "100", "big.py", cwd=tmp_path)
    assert result.exit_code == 2 and "too large" in result.output


def test_the_default_size_limit_refuses_a_5_mb_file(tmp_path):
    big = tmp_path / "generated.py"
    with open(big, "w") as out:
        out.write("import torch\n")
        while out.tell() < 5_000_000:
            out.write("def f(x: torch.Tensor):\n    return x.nonzero()\n")
    findings = lint_paths([big], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    assert [f.code for f in findings] == ["SL000"]


# -- fix --apply writes ------------------------------------------------------------------


def test_fix_writes_through_a_symlink_to_its_target(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(LOADER)
    (tmp_path / "link.py").symlink_to("real.py")
    result = run("fix", "--apply", str(tmp_path / "link.py"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.py").is_symlink() and os.readlink(tmp_path / "link.py") == "real.py"
    assert target.read_text() == LOADER_FIXED


def test_fix_keeps_hard_links(tmp_path):
    first = tmp_path / "a.py"
    first.write_text(LOADER)
    os.link(first, tmp_path / "b.py")
    inode = first.stat().st_ino
    assert run("fix", "--apply", str(first)).exit_code == 0
    assert first.stat().st_ino == inode and first.stat().st_nlink == 2
    assert (tmp_path / "b.py").read_text() == LOADER_FIXED


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing owners needs root")
def test_fix_keeps_the_owner_and_mode(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOADER)
    os.chown(path, 12345, 23456)
    os.chmod(path, 0o640)
    assert run("fix", "--apply", str(path)).exit_code == 0
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (12345, 23456, 0o640)
    assert path.read_text() == LOADER_FIXED


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("final", [True, False], ids=["final-newline", "no-final-newline"])
@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
def test_fix_keeps_every_line_ending_style_and_the_bom(tmp_path, ending, final, bom):
    def encoded(text: str) -> bytes:
        text = text if final else text.rstrip("\n")
        return (codecs.BOM_UTF8 if bom else b"") + text.replace("\n", ending).encode()

    path = tmp_path / "m.py"
    path.write_bytes(encoded(LOADER))
    assert run("fix", "--apply", str(path)).exit_code == 0
    assert path.read_bytes() == encoded(LOADER_FIXED)


def test_fix_diff_of_a_cr_only_file_keeps_its_last_line_ending(tmp_path):
    from synclint.fixers.apply import fix_file

    path = tmp_path / "m.py"
    path.write_bytes(LOADER.replace("\n", "\r").encode())
    assert fix_file(path).fixed == LOADER_FIXED.replace("\n", "\r")


def test_fixing_cr_only_text_keeps_its_last_line_ending():
    # ``fix --apply -`` (stdin) and the editor's fix-all fix text, not a file: libcst
    # printed the module without the last ``\r`` there too.
    from synclint.fixers.apply import fix_text

    assert fix_text(LOADER.replace("\n", "\r"), "m.py") == (LOADER_FIXED.replace("\n", "\r"), 1)


def test_fix_diff_marks_a_last_line_without_an_end_so_that_the_patch_applies(tmp_path):
    # Without the marker the next file's ``---`` header ran onto that line, and
    # ``git apply`` / ``patch`` rejected the whole patch as malformed.
    (tmp_path / "a.py").write_text(LOADER.rstrip("\n"))
    (tmp_path / "b.py").write_text(LOADER)
    result = run("fix", "a.py", "b.py", cwd=tmp_path)
    hunk = "@@ -1,4 +1,4 @@\n import torch\n for x, y in loader:\n     x: torch.Tensor  # a proven tensor: the safe fix needs one\n"
    assert result.output == (
        f"--- a/a.py\n+++ b/a.py\n{hunk}-    x = x.to(device)\n\\ No newline at end of file\n"
        "+    x = x.to(device, non_blocking=True)\n\\ No newline at end of file\n"
        f"--- a/b.py\n+++ b/b.py\n{hunk}-    x = x.to(device)\n+    x = x.to(device, non_blocking=True)\n"
    )


def test_fix_diff_counts_lines_as_python_does(tmp_path):
    # A form feed is no line end to Python or to patch tools: the hunk holds the
    # form-feed line whole, from line 2 (``str.splitlines`` cut it in two and started
    # the hunk at its second half, "line 3").
    source = LOADER.replace("import torch\n", "import torch\n# page \x0c two\n")
    (tmp_path / "m.py").write_text(source)
    assert run("fix", "m.py", cwd=tmp_path).output == (
        "--- a/m.py\n+++ b/m.py\n@@ -2,4 +2,4 @@\n # page \x0c two\n for x, y in loader:\n"
        "     x: torch.Tensor  # a proven tensor: the safe fix needs one\n"
        "-    x = x.to(device)\n+    x = x.to(device, non_blocking=True)\n"
    )


def test_fix_keeps_a_declared_single_byte_encoding(tmp_path):
    source = "# -*- coding: cp1252 -*-\n# \u20ac\n" + LOADER
    path = tmp_path / "m.py"
    path.write_bytes(source.encode("cp1252"))
    assert run("fix", "--apply", str(path)).exit_code == 0
    assert path.read_bytes() == ("# -*- coding: cp1252 -*-\n# \u20ac\n" + LOADER_FIXED).encode("cp1252")


def test_an_unwritable_file_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    import synclint.file_writing as writing

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(LOADER)
    real = writing.write_bytes_keeping_metadata

    def refuse_b(path, data):
        if Path(path).name == "b.py":
            raise PermissionError(13, "Permission denied")
        real(path, data)

    monkeypatch.setattr(writing, "write_bytes_keeping_metadata", refuse_b)
    result = run("fix", "--apply", str(tmp_path))
    assert result.exit_code == 2
    assert "b.py: cannot write the fixes: Permission denied" in result.output
    assert "Traceback" not in result.output
    assert (tmp_path / "a.py").read_text() == LOADER_FIXED and (tmp_path / "c.py").read_text() == LOADER_FIXED
    assert (tmp_path / "b.py").read_text() == LOADER


@pytest.fixture
def as_nobody():
    """Run the body with the permissions of an unprivileged user (the test process is root)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        yield None
        return
    run("fix", "--apply", os.devnull)  # import what the command needs while still privileged
    root = Path(tempfile.mkdtemp(prefix="synclint-perm-"))
    os.chmod(root, 0o777)
    yield root
    os.seteuid(0)
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def test_real_permission_errors_are_reported_and_the_run_goes_on(as_nobody, tmp_path):
    if as_nobody is None:  # not root: plain chmod makes the files unwritable for us
        root = tmp_path
    else:
        root = as_nobody
    locked = root / "locked"  # a directory we cannot write to, holding a file we cannot write
    locked.mkdir()
    (locked / "x.py").write_text(LOADER)
    os.chmod(locked / "x.py", 0o444)
    os.chmod(locked, 0o555)
    in_place = root / "shared"  # a directory we cannot write to, holding a file we can write
    in_place.mkdir()
    (in_place / "y.py").write_text(LOADER)
    os.chmod(in_place / "y.py", 0o666)
    os.chmod(in_place, 0o555)
    open_dir = root / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    (open_dir / "z.py").write_text(LOADER)
    os.chmod(open_dir / "z.py", 0o666)
    if as_nobody is not None:
        os.seteuid(65534)
    try:
        result = run("fix", "--apply", str(root))
    finally:
        if as_nobody is not None:
            os.seteuid(0)
        os.chmod(locked, 0o755)
        os.chmod(in_place, 0o755)
    assert result.exit_code == 2, result.output
    assert "x.py: cannot write the fixes" in result.output and "Traceback" not in result.output
    assert (locked / "x.py").read_text() == LOADER
    assert (in_place / "y.py").read_text() == LOADER_FIXED  # written in place
    assert (open_dir / "z.py").read_text() == LOADER_FIXED
    if as_nobody is not None:  # the file kept its owner (root), though nobody rewrote it
        assert (open_dir / "z.py").stat().st_uid == 0


def test_text_the_file_s_encoding_cannot_hold_is_reported_not_written(tmp_path):
    from synclint.file_writing import write_text_like

    path = tmp_path / "m.py"
    original = "# -*- coding: latin-1 -*-\nx = 1\n".encode("latin-1")
    path.write_bytes(original)
    with pytest.raises(OSError, match="latin-1"):
        write_text_like(path, "# -*- coding: latin-1 -*-\nx = '\u20ac'\n")
    assert path.read_bytes() == original
