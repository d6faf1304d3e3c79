"""How a scenario and its settings are given: a path, TOML text or a dict; settings as a dict of
typed values or as command-line ``KEY=VALUE`` strings."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping


def to_json(value, what: str) -> str:
    """A Python value as JSON for the simulator (numpy scalars as Python numbers)."""

    def default(o):
        item = getattr(o, "item", None)  # numpy scalars
        if callable(item):
            return item()
        raise TypeError(f"{what}: {type(o).__name__} {o!r} is not a TOML value (use str, int, float, bool, dict, list)")

    try:
        return json.dumps(value, default=default, allow_nan=False)
    except ValueError as e:
        raise TypeError(f"{what}: {e}") from None


def scenario_source(scenario, file=None):
    """``(kind, source, file)`` for the native side: ``kind`` is ``path``, ``text`` or ``json``;
    ``file`` names the scenario in errors and in the summary."""
    if isinstance(scenario, os.PathLike):
        path = os.fspath(scenario)
        return "path", path, file or path
    if isinstance(scenario, Mapping):
        return "json", to_json(dict(scenario), file or "<dict>"), file or "<dict>"
    if isinstance(scenario, str):
        # TOML text has a newline or a `key = value`; anything else is a file name.
        if "\n" in scenario or "=" in scenario:
            return "text", scenario, file or "<string>"
        return "path", scenario, file or scenario
    raise TypeError(
        f"scenario: expected a path, TOML text or a dict of scenario keys, got {type(scenario).__name__}"
    )


def settings(set_):
    """``(typed, specs)``: ``set_`` as ``[(key, json)]`` (a dict) or ``["KEY=VALUE"]`` (strings)."""
    if set_ is None:
        return [], []
    if isinstance(set_, Mapping):
        return [(str(k), to_json(v, f"set {k!r}")) for k, v in set_.items()], []
    if isinstance(set_, str):
        return [], [set_]
    if all(isinstance(s, str) for s in set_):
        return [], list(set_)
    raise TypeError('set: expected a dict {"key": value} or a list of "KEY=VALUE" strings')
