"""docs/configuration.md is what scripts/config_reference.py writes from spacy_ag/settings.py."""
from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

from spacy_ag import settings as S
from spacy_ag.settings import setting

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("config_reference", REPO / "scripts" / "config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_reference_is_up_to_date():
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf8")
    assert committed == _generator().render(), \
        "docs/configuration.md is out of date: run python scripts/config_reference.py"


def test_check_mode_agrees_with_the_committed_file():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "config_reference.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_every_settings_group_has_a_table():
    generator = _generator()
    missing = set(generator.settings_groups()) - set(generator.documented_groups()) - set(generator.SHARED_BASES)
    names = sorted(cls.__name__ for cls in missing)
    assert not missing, f"add to COMPONENT_SECTIONS of scripts/config_reference.py: {names}"
    for base in generator.SHARED_BASES:
        assert any(issubclass(cls, base) for cls in generator.documented_groups()), base.__name__


def test_every_setting_of_every_section_is_listed_with_its_default():
    generator = _generator()
    text = generator.render()
    for cls in generator.documented_groups():
        for name in S.fields_of(cls):
            assert f"| `{name}` |" in text, (cls.__name__, name)
    # the topic config's [online] shows the topic defaults, not the engine's
    online_topic = text.split("### [online] of a topic config", 1)[1].split("###", 1)[0]
    assert "| `batch_size` | integer | `50` |" in online_topic
    engine_online = text.split("### [online]\n", 1)[1].split("###", 1)[0]
    assert "| `batch_size` | integer | `20` |" in engine_online


@dataclasses.dataclass
class _Example:
    """[example]: a made-up section."""

    count: int = setting(3, "how many", low=1)
    rate: float = setting(0.5, "a | rate", low=0.0, high=1.0, high_open=True)
    mode: str = setting("fast", "which way", choices=("fast", "slow"))
    limit: Optional[int] = setting(None, "null: none", low=0)
    marks: Tuple[int, ...] = setting((), "at these", low=1)
    sizes: Dict[str, int] = setting(help="per name", factory=dict)
    both: Union[float, str] = setting(10.0, "number or auto", low=0.0, low_open=True, choices=("auto",))
    path: str = setting("", "the file", required=True)


def test_rows_show_type_default_range_choices_and_help():
    table = _generator().section_table(_Example).splitlines()
    assert table[2:] == [
        "| `count` | integer | `3` | ≥ 1 | how many |",
        "| `rate` | number | `0.5` | [0, 1) | a \\| rate |",
        '| `mode` | string | `"fast"` | `"fast"`, `"slow"` | which way |',
        "| `limit` | integer or null | `null` | ≥ 0 | null: none |",
        "| `marks` | list of integer | `[]` | ≥ 1 | at these |",
        "| `sizes` | table of integer | `{}` |  | per name |",
        '| `both` | number or string | `10.0` | > 0; `"auto"` | number or auto |',
        "| `path` | string |  | required | the file |",
    ]
    assert _generator().summary(_Example) == "A made-up section.\n\n"
