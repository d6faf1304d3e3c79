"""``ackshape.sweep``: a scenario over a grid of settings and seeds, on any executor, with a
result store."""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import os
import sys
import time
from collections.abc import Mapping

from . import _native, _worker
from ._source import scenario_source, to_json


def _points(grid, fixed):
    """The grid as a list of points, each a list of ``(key, value)``: a dict of lists is every
    combination (the first key varying slowest), a list of dicts is those points."""
    if grid is None:
        grid = {}
    if isinstance(grid, Mapping):
        keys = list(grid)
        values = [v if isinstance(v, (list, tuple, range)) else [v] for v in grid.values()]
        for k, v in zip(keys, values):
            if len(v) == 0:
                raise _native.ScenarioError(f"grid {k!r}: expected at least one value")
        points = [list(zip(keys, combo)) for combo in itertools.product(*values)]
    else:
        points = []
        for i, p in enumerate(grid):
            if not isinstance(p, Mapping):
                raise TypeError(f"grid[{i}]: expected a dict of settings, got {type(p).__name__}")
            points.append(list(p.items()))
        if not points:
            raise _native.ScenarioError("grid: expected at least one point")
    fixed = list((fixed or {}).items())
    for p in points:
        for k, _ in fixed:
            if any(k == q for q, _ in p):
                raise _native.ScenarioError(f"set {k!r}: the key is also in the grid")
    return [fixed + p for p in points], [k for k, _ in fixed]


def _executor(executor, max_workers):
    """``(executor, ours)``: a Dask client becomes its ``get_executor()``; none, a process pool."""
    if executor is None:
        return cf.ProcessPoolExecutor(max_workers=max_workers or os.cpu_count() or 1), True
    if not isinstance(executor, cf.Executor) and hasattr(executor, "get_executor"):
        return executor.get_executor(), False
    if not hasattr(executor, "submit"):
        raise TypeError("executor: expected a concurrent.futures.Executor or a dask.distributed.Client")
    return executor, False


class _Bar:
    """A one-line progress bar on stderr (when it is a terminal, or ``show`` says so)."""

    def __init__(self, total, show):
        self.total, self.t0, self.shown = total, time.monotonic(), False
        self.on = sys.stderr.isatty() if show is None else bool(show)

    def __call__(self, done):
        if not self.on:
            return
        el = time.monotonic() - self.t0
        if not self.shown and el < 1.0 and done < self.total:
            return
        self.shown = True
        n = 40
        fill = n * done // max(self.total, 1)
        eta = f", ~{el / done * (self.total - done):.0f} s left" if 0 < done < self.total else ""
        sys.stderr.write(f"\rsweeping [{'=' * fill}{'>' if fill < n else ''}{' ' * (n - fill - 1)}] "
                         f"{done}/{self.total} runs ({el:.0f} s{eta})   ")
        sys.stderr.flush()

    def close(self):
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def sweep(
    base,
    grid=None,
    seeds=5,
    executor=None,
    *,
    set=None,
    metrics=None,
    link=None,
    store=None,
    progress=None,
    max_workers=None,
    file=None,
):
    """Run ``base`` at every point of ``grid``, each over ``seeds``; one DataFrame row per run.

    ``base``: a scenario as ``ackshape.run`` takes it. ``grid``: ``{key: [values]}`` runs every
    combination (the first key varying slowest, as ``ackshape sweep --set``), a list of dicts
    runs exactly those points; keys are any scenario keys (``topology.bottleneck.rate``,
    ``flows[0].count``, ``middlebox[0].policy.class[0].mechanism``), values Python values (a str
    stays a string: ``"5Mbit/s"``, ``"afvq"``; a dict is a table: ``{"kind": "red"}``). ``set``:
    settings for every point. ``seeds``: a count (the scenario's seed and the ones after it) or a
    list of seeds.

    ``executor``: any ``concurrent.futures.Executor`` (a ``dask.distributed.Client`` is used
    through its ``get_executor()``); default a process pool of ``max_workers`` (all cores). Every
    point is built and checked before anything runs: a bad key or value raises
    ``ackshape.ScenarioError`` naming the file, the key and the setting.

    ``store``: a directory (or an ``ackshape.Store``): runs it has from this build are taken
    from it, every finished run is kept in it at once, so a rerun computes only what is missing and
    an interrupted sweep resumes; results of other builds (version, commit) are never used.

    Columns: ``point``; per grid key its values (numbers as they are; a string or table as its
    label) and, for rates, durations and queue sizes, a numeric column in base units named
    ``KEY_bps``, ``KEY_s``, ``KEY_pkts`` or ``KEY_bytes``; ``seed``; the metrics of
    ``ackshape.METRICS`` for the link direction ``link`` (default ``bottleneck``, else the
    busiest); and ``metrics``: more numbers of each run's summary.json, ``{name: path}`` or a list
    of paths (``{"fr": "flows[1].fast_retransmits"}``). ``df.attrs`` holds the link, the seeds, how
    many runs were computed and found in the store, and this build's provenance.

    ``progress``: a bar on stderr (default: when stderr is a terminal), or a callable
    ``progress(done, total)``.
    """
    kind, source, name = scenario_source(base, file)
    points, fixed_keys = _points(grid, set)
    extra = metrics or {}
    if not isinstance(extra, Mapping):
        extra = {p: p for p in extra}
    for n, p in extra.items():
        _native.check_path(f"{n}={p}" if n != p else p)
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seed_list, count = None, seeds
    else:
        seed_list, count = [int(s) for s in seeds], None
    planned = json.loads(
        _native.plan(
            kind,
            source,
            name,
            [[(k, to_json(v, f"grid {k!r}")) for k, v in p] for p in points],
            seed_list,
            count,
            link,
        )
    )
    seeds = planned["seeds"]
    plan = planned["points"]
    jobs = [(p, s) for p in range(len(plan)) for s in seeds]
    texts = [None] * len(jobs)
    st = None
    if store is not None:
        st = store if isinstance(store, _native.Store) else _native.Store(os.fspath(store))
    stored = others = 0
    if st is not None:
        for i, (p, s) in enumerate(jobs):
            texts[i] = st.get(plan[p]["hash"], s)
            if texts[i] is not None:
                stored += 1
            elif st.other_builds(plan[p]["hash"], s):
                others += 1
    prov = json.loads(_native.provenance()[0])
    missing = [i for i, t in enumerate(texts) if t is None]
    total = len(jobs)
    bar = progress if callable(progress) else None
    shown = _Bar(total, None if progress is None or callable(progress) else progress)
    done = stored
    if bar:
        bar(done, total)
    shown(done)
    if missing:
        ex, ours = _executor(executor, max_workers)
        futures = {}
        try:
            for i in missing:
                p, s = jobs[i]
                pt = plan[p]
                futures[ex.submit(_worker.run_point, pt["scenario"], name, pt["set"], s)] = i
            for f in cf.as_completed(futures):
                i = futures[f]
                text = f.result()
                got = json.loads(text).get("ackshape")
                if got != prov:
                    raise _native.StoreError(
                        f"a run was computed by ackshape {got}, but this process is {prov}: results of different "
                        "builds are never mixed (install the same build of ackshape on every worker)"
                    )
                p, s = jobs[i]
                if st is not None:
                    st.put(plan[p]["hash"], s, plan[p]["scenario"], text)
                texts[i] = text
                done += 1
                if bar:
                    bar(done, total)
                shown(done)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        finally:
            shown.close()
            if ours:
                ex.shutdown(wait=True, cancel_futures=True)
    else:
        shown.close()
    return _frame(points, fixed_keys, plan, seeds, jobs, texts, extra, link, name, prov, len(missing), stored, others)


def _frame(points, fixed_keys, plan, seeds, jobs, texts, extra, link, name, prov, computed, stored, others):
    import numpy as np
    import pandas as pd

    if link is None:
        link = _native.default_link(texts[0])
    paths = list(extra.values())
    rows = np.array([_native.metrics(t, link, paths) for t in texts], dtype=float).reshape(len(texts), -1)
    metric_names = [m for m, _ in _native.metric_names()] + list(extra)
    # As the command line: the gateway columns only if some run had a gateway box.
    keep = [j for j, m in enumerate(metric_names) if not (m.startswith("gateway_") and np.isnan(rows[:, j]).all())]
    keys = []
    for p in points:
        for k, _ in p:
            if k not in keys and k not in fixed_keys:
                keys.append(k)
    cols = {"point": np.array([p for p, _ in jobs], dtype=np.int64)}
    for k in keys:
        vals = [dict(points[p]).get(k) for p, _ in jobs]
        scalar = all(v is None or isinstance(v, (str, int, float, bool)) for v in vals)
        labels = vals if scalar else [None if v is None else _native.label(to_json(v, k)) for v in vals]
        cols[k] = labels
        present = [v for v in vals if v is not None]
        num = _native.numeric_values(to_json(present, k)) if present else None
        if num is not None:
            unit, numbers = num
            it = iter(numbers)
            cols[f"{k}_{unit}"] = np.array([np.nan if v is None else next(it) for v in vals], dtype=float)
    cols["seed"] = np.array([s for _, s in jobs], dtype=np.int64)
    for j in keep:
        cols[metric_names[j]] = rows[:, j]
    df = pd.DataFrame(cols)
    df.attrs.update(
        {
            "scenario": name,
            "link": link,
            "seeds": list(seeds),
            "points": len(plan),
            "computed": computed,
            "stored": stored,
            "other_builds": others,
            "ackshape": prov,
        }
    )
    return df
