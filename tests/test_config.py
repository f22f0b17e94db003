from __future__ import annotations

from pathlib import Path

import pytest

from synclint.config import ConfigError, Settings, load_settings
from synclint.engine import check_source

SOURCE = "import torch\ndef f(x: torch.Tensor):\n    y = x.nonzero()\n    return y.item()\n"


def _codes(settings: Settings, path: str = "m.py") -> list[str]:
    return [f.code for f in check_source(SOURCE, path, settings)]


def test_default_selects_everything():
    assert _codes(Settings()) == ["SL101", "SL201"]


def test_select_by_prefix_and_ignore():
    assert _codes(Settings(select=("SL1",))) == ["SL101"]
    assert _codes(Settings(ignore=("SL201",))) == ["SL101"]
    assert _codes(Settings(select=("SL2",), extend_select=("SL101",))) == ["SL101", "SL201"]


def test_more_specific_select_beats_broader_ignore():
    assert _codes(Settings(select=("SL101",), ignore=("SL1",))) == ["SL101"]


def test_per_file_ignores(tmp_path: Path):
    settings = Settings(per_file_ignores={"tests/*.py": ("SL201",)}, root=tmp_path)
    assert _codes(settings, str(tmp_path / "tests" / "t.py")) == ["SL101"]
    assert _codes(settings, str(tmp_path / "src" / "t.py")) == ["SL101", "SL201"]


def test_pyproject_table_is_found_upwards(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.synclint]\nselect = ["SL2"]\nextend-exclude = ["gen"]\n'
        '[tool.synclint.per-file-ignores]\n"scripts/*" = ["SL201"]\n'
    )
    (tmp_path / "pkg").mkdir()
    settings = load_settings(start=tmp_path / "pkg")
    assert settings.select == ("SL2",)
    assert settings.extend_exclude == ("gen",)
    assert settings.per_file_ignores == {"scripts/*": ("SL201",)}
    assert settings.is_excluded(tmp_path / "gen" / "x.py")
    assert settings.is_excluded(tmp_path / ".venv" / "lib.py")


def test_unknown_key_is_an_error(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nselct = ["SL2"]\n')
    with pytest.raises(ConfigError, match="selct"):
        load_settings(start=tmp_path)


def test_wrong_type_is_an_error(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nselect = "SL2"\n')
    with pytest.raises(ConfigError, match="list of strings"):
        load_settings(start=tmp_path)


@pytest.mark.parametrize(
    "body",
    [
        'select = ["SL9"]',
        '[tool.synclint.per-file-ignores]\n"tests/*" = "SL201"',
        '[tool.synclint.per-file-ignores]\n"tests/*" = ["XYZ"]',
    ],
)
def test_bad_selectors_are_errors_not_silently_empty(tmp_path: Path, body: str):
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n" + body + "\n")
    with pytest.raises(ConfigError):
        load_settings(start=tmp_path)


def test_selectors_are_case_insensitive(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nselect = ["sl2"]\n')
    assert load_settings(start=tmp_path).select == ("SL2",)
