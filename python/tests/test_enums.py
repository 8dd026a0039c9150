"""trellis/_enums.py is generated from the Rust library's tables: it must
match them (python/tools/gen_enums.py rewrites it)."""

from __future__ import annotations

import importlib.util
import pathlib

import trellis
from trellis import _native

TOOL = pathlib.Path(__file__).resolve().parents[1] / "tools" / "gen_enums.py"


def test_the_generated_enumerations_match_the_rust_tables() -> None:
    spec = importlib.util.spec_from_file_location("gen_enums", TOOL)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    expected = gen.render(_native.enum_tables())
    written = (pathlib.Path(trellis.__file__).parent / "_enums.py").read_text()
    assert written == expected, "run python python/tools/gen_enums.py and commit trellis/_enums.py"


def test_enumerations_name_the_standards_values() -> None:
    assert int(trellis.ObjectType.ANALOG_VALUE) == 2 and str(trellis.ObjectType.ANALOG_VALUE) == "analog-value"
    assert int(trellis.PropertyIdentifier.PRESENT_VALUE) == 85
    assert int(trellis.EngineeringUnits.DEGREES_CELSIUS) == 62
    assert int(trellis.ErrorCode.UNKNOWN_OBJECT) == 31
