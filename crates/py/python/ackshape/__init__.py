"""ackshape from Python: run the simulator, get pandas DataFrames, sweep any scenario key on any
``concurrent.futures`` executor (a local process pool, or a Dask cluster), with a result store
that computes only the runs it lacks.

    >>> import ackshape
    >>> r = ackshape.run("experiments/examples/dumbbell.toml", seed=2, set={"topology.bottleneck.rate": "5Mbit/s"})
    >>> r.summary["aggregate"]["goodput_bps"], r.flows.goodput_bps.mean()
    >>> df = ackshape.sweep("experiments/examples/dumbbell.toml",
    ...                     {"topology.bottleneck.rate": ["5Mbit/s", "10Mbit/s"]}, seeds=3, store="results/store")
    >>> claims = ackshape.reproduce(["P2-F10"], quick=True, executor=client)  # a Dask client

The simulations run in Rust with the GIL released; pandas is imported when a DataFrame is first
asked for, so ``import ackshape`` stays fast.
"""

from __future__ import annotations

import json as _json

from . import _native
from ._native import ScenarioError, Store, StoreError
from ._run import Result, run
from ._reproduce import reproduce
from ._sweep import sweep

_prov, _build = _native.provenance()

#: The build of the simulator in this package: ``{"version", "commit", "dirty", "source"}``
#: (the ``ackshape`` object of every summary.json it writes).
provenance: dict = _json.loads(_prov)
#: The result store's name for this build (``VERSION+COMMIT``).
build_id: str = _build
__version__: str = provenance["version"]

#: The columns of ``Result.flows`` and ``Result.links`` (as in flows.csv and links.csv).
FLOW_COLUMNS = list(_native.FLOW_COLUMNS)
LINK_COLUMNS = list(_native.LINK_COLUMNS)
#: The metrics a sweep reports for each run: ``(column, what it is)``.
METRICS = list(_native.metric_names())

__all__ = [
    "run",
    "sweep",
    "reproduce",
    "Result",
    "Store",
    "ScenarioError",
    "StoreError",
    "provenance",
    "build_id",
    "FLOW_COLUMNS",
    "LINK_COLUMNS",
    "METRICS",
    "__version__",
]
