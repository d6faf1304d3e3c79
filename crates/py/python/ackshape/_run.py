"""``ackshape.run``: one simulation, its summary and its tables."""

from __future__ import annotations

import json
import os
from functools import cached_property

from . import _native
from ._source import scenario_source, settings


def _frame(columns):
    """A DataFrame from the native side's columns: ``(name, dtype, bytes or list of str)``."""
    import numpy as np
    import pandas as pd

    data = {}
    for name, kind, payload in columns:
        if kind == "str":
            # An empty cell is a missing value, as when the CSV file is read (e.g. `bbr_mode` of a
            # flow that does not run BBR).
            data[name] = np.array([v if v != "" else np.nan for v in payload], dtype=object)
        else:
            data[name] = np.frombuffer(payload, dtype=kind).copy()
    return pd.DataFrame(data, columns=[c[0] for c in columns])


class Result:
    """What one run produced.

    ``summary_json`` is the text of ``summary.json`` byte for byte (as ``ackshape run --out``
    writes it for the same scenario and seed, apart from ``sim.wall_time_s``); ``summary`` is that
    document as a dict. The tables are pandas DataFrames with numeric columns whose names carry
    their units: ``flows`` and ``links`` (the columns of flows.csv and links.csv), ``timeseries``
    (goodput per flow and bin), ``queues`` (queue length per link direction and bin; empty if no
    link queued), ``trace`` (per-flow TCP state, with ``trace_interval``). ``files``: what was
    written with ``out=``.
    """

    def __init__(self, summary_json: str, files, tables):
        self.summary_json = summary_json
        self.files = list(files)
        self._tables = tables

    @cached_property
    def summary(self) -> dict:
        return json.loads(self.summary_json)

    def _rows(self, key, columns):
        import pandas as pd

        rows = self.summary.get(key, [])
        return pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=list(columns))

    @cached_property
    def flows(self):
        return self._rows("flows", _native.FLOW_COLUMNS)

    @cached_property
    def links(self):
        return self._rows("links", _native.LINK_COLUMNS)

    @cached_property
    def timeseries(self):
        return _frame(self._tables["timeseries"])

    @cached_property
    def queues(self):
        return _frame(self._tables["queues"])

    @cached_property
    def trace(self):
        return _frame(self._tables["trace"])

    def __repr__(self):
        s = self.summary
        a = s["aggregate"]
        return (
            f"<ackshape.Result {s['scenario']['name']!r} seed {s['seed']}: {a['flows']} flows, "
            f"goodput {a['goodput_bps'] / 1e6:.3f} Mbit/s, Jain {a['jain']:.4f}>"
        )


def run(scenario, seed=None, set=None, *, out=None, pcap=(), file=None) -> Result:
    """Run a scenario once in the simulator.

    ``scenario``: a path (str or ``os.PathLike``), TOML text (a str with a newline or ``=``), or
    a dict of scenario keys (docs/scenario.md). ``seed`` overrides the scenario's. ``set`` changes
    keys for this run, as ``ackshape run --set``: a dict ``{"topology.bottleneck.rate": "5Mbit/s",
    "flows[0].count": 4}`` (Python values; a str stays a string) or a list of ``"KEY=VALUE"``
    strings parsed as on the command line. With ``out``, the command line's files go there
    (summary.json, flows.csv, …, scenario.toml), and ``pcap`` names links to capture
    (both directions of each, frames cut after 134 bytes, as ``ackshape run --pcap``).
    ``file`` names the scenario in errors and in the summary (default: the path, ``<string>`` or
    ``<dict>``).

    The simulation runs with the GIL released. Errors raise ``ackshape.ScenarioError`` (a
    ``ValueError``) with the command line's message, naming the file, the key and what was
    expected; files that cannot be written raise ``OSError``.
    """
    kind, source, name = scenario_source(scenario, file)
    typed, specs = settings(set)
    summary, files, tables = _native.run(
        kind,
        source,
        name,
        seed,
        typed,
        specs,
        os.fspath(out) if out is not None else None,
        [str(p) for p in pcap],
    )
    return Result(summary, files, tables)
