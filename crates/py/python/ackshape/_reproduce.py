"""``ackshape.reproduce``: the papers' experiments, as ``ackshape reproduce`` runs them, with the
simulations on any ``concurrent.futures`` executor."""

from __future__ import annotations

import json
import os

from . import _native, _worker
from ._sweep import _executor

#: The numeric columns of the claims DataFrame.
_NUMERIC = ("paper_value", "measured_value")


def _submit_to(ex):
    """``submit(jobs)`` for the native side: every run of a batch goes to ``ex`` at once; one
    ``(ok, text)`` per job, in order (a run's exception is that run's result)."""

    def submit(jobs):
        futures = [ex.submit(_worker.run_record, s, f, list(st), int(seed)) for s, f, st, seed in jobs]
        out = []
        for fut in futures:
            try:
                out.append((True, fut.result()))
            except Exception as e:  # noqa: BLE001 - a run's failure is that run's result
                out.append((False, f"{type(e).__name__}: {e}"))
        return out

    return submit


def reproduce(papers=None, quick=False, executor=None, out=None, *, seed=1, max_workers=None, frame=True):
    """Run the experiments ``papers`` (experiment IDs such as ``"P2-F10"`` or paper prefixes such
    as ``"P2"``; default all) and check their claims, exactly as ``ackshape reproduce [--quick]
    --seed SEED --out OUT`` does: the same files in ``out`` (default ``results/reproduce`` or
    ``results/reproduce-quick``) and the same claims.

    ``executor``: where the simulations run. ``None``: threads of this process (as the command
    line); ``"processes"``: a local process pool of ``max_workers``; or any
    ``concurrent.futures.Executor``, or a ``dask.distributed.Client`` (through its
    ``get_executor()``). Each experiment hands over its runs a batch at a time (a sweep's points ×
    seeds); every run comes back with its summary exact, so the claims do not depend on where the
    runs ran. A bad ID raises ``ackshape.ScenarioError``.

    Returns the claim records (the array of ``reproduce --json``) as a pandas DataFrame, one row
    per claim record, with ``paper_value`` and ``measured_value`` numeric (NaN where the claim has
    no number), or as a list of dicts with ``frame=False``.
    """
    if isinstance(papers, str):
        papers = [papers]
    ids = [str(p) for p in (papers or [])]
    if out is None:
        out = "results/reproduce-quick" if quick else "results/reproduce"
    submit, own = None, None
    if isinstance(executor, str):
        if executor != "processes":
            raise ValueError(f"executor={executor!r}: expected None, 'processes', an Executor or a Dask client")
        executor = None
        ex, own = _executor(None, max_workers or os.cpu_count())
        submit = _submit_to(ex)
    elif executor is not None:
        ex, _ = _executor(executor, max_workers)
        submit = _submit_to(ex)
    try:
        text = _native.reproduce(ids, bool(quick), int(seed), os.fspath(out), submit)
    finally:
        if own:
            ex.shutdown()
    records = json.loads(text)
    if not frame:
        return records
    import pandas as pd

    df = pd.DataFrame.from_records(records)
    for c in _NUMERIC:
        if c in df:
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df.attrs["quick"] = bool(quick)
    df.attrs["seed"] = int(seed)
    df.attrs["out"] = os.fspath(out)
    df.attrs["ackshape"] = json.loads(_native.provenance()[0])
    return df
