"""ackshape.sweep: the same DataFrame on a process pool and on a Dask cluster, a store that makes
reruns free and interrupted sweeps resume, a killed Dask worker that loses no finished run, and
one store shared with the command line's `sweep --store`."""

import concurrent.futures as cf
import os
import shutil
import signal
import sys

import numpy as np
import pandas as pd
import pytest

import ackshape
from conftest import run_cli

# The dask extra is part of the test set-up (scripts/setup.sh): without it these tests fail, loudly.
import distributed  # noqa: F401

# 200 points: 10 bottleneck rates x 20 queue sizes, one seed each.
GRID_200 = {
    "topology.bottleneck.rate": [f"{r}Mbit/s" for r in range(2, 12)],
    "topology.bottleneck.queue": [f"{q}pkt" for q in range(5, 105, 5)],
}


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc:
        with Client(lc) as client:
            yield lc, client


def test_a_200_point_sweep_is_the_same_on_a_process_pool_and_on_dask(tiny_file, cluster):
    _, client = cluster
    with cf.ProcessPoolExecutor(2) as pool:
        local = ackshape.sweep(tiny_file, GRID_200, seeds=1, executor=pool)
    on_dask = ackshape.sweep(tiny_file, GRID_200, seeds=1, executor=client)
    assert len(local) == 200 and local.attrs["computed"] == 200
    pd.testing.assert_frame_equal(local, on_dask)
    # Numeric parameter columns in base units beside the labels; metrics vary with them.
    assert local["topology.bottleneck.rate"].iloc[0] == "2Mbit/s"
    assert local["topology.bottleneck.rate_bps"].iloc[0] == 2e6
    assert local["topology.bottleneck.queue_pkts"].iloc[:20].tolist() == [float(q) for q in range(5, 105, 5)]
    by_rate = local.groupby("topology.bottleneck.rate_bps").goodput_mbps.mean()
    # (Goodput over the 0.8-s window can exceed the rate a little: in-order delivery after a recovery.)
    assert by_rate[2e6] < 2.1 and by_rate[11e6] > 2 * by_rate[2e6], by_rate
    for m, _ in ackshape.METRICS:
        if not m.startswith("gateway_"):
            assert local[m].dtype == "float64", m
    assert not any(c.startswith("gateway_") for c in local.columns)


def test_each_row_is_the_single_run_of_its_point_and_seed(tiny_file):
    df = ackshape.sweep(tiny_file, {"tcp.cc": ["reno", "cubic"], "flows[0].count": [1, 3]}, seeds=[4, 9],
                        executor=cf.ThreadPoolExecutor(2), metrics={"fr0": "flows[0].fast_retransmits"})
    assert df[["tcp.cc", "flows[0].count", "seed"]].values.tolist() == [
        [cc, n, s] for cc in ["reno", "cubic"] for n in [1, 3] for s in [4, 9]
    ]
    for row in df.itertuples(index=False):
        r = ackshape.run(tiny_file, seed=row.seed, set={"tcp.cc": row[1], "flows[0].count": row[2]})
        assert row.goodput_mbps == r.summary["aggregate"]["goodput_bps"] / 1e6
        assert row.fr0 == r.summary["flows"][0]["fast_retransmits"]
        assert row.link_queue_max_pkts == next(l for l in r.summary["links"] if l["name"] == "bottleneck")["queue_max_pkts"]
    assert df.attrs["link"] == "bottleneck" and df.attrs["seeds"] == [4, 9]


def test_a_rerun_computes_nothing_new_and_an_interrupted_sweep_resumes(tiny_file, tmp_path):
    grid = {"topology.bottleneck.rate": ["2Mbit/s", "4Mbit/s", "8Mbit/s"], "tcp.cc": ["reno", "cubic"]}
    full = ackshape.sweep(tiny_file, grid, seeds=3, executor=cf.ThreadPoolExecutor(2))

    store = tmp_path / "store"

    def stop_after(k):
        def progress(done, total):
            if done >= k:
                raise KeyboardInterrupt
        return progress

    with pytest.raises(KeyboardInterrupt):
        ackshape.sweep(tiny_file, grid, seeds=3, executor=cf.ThreadPoolExecutor(1), store=store, progress=stop_after(7))
    kept = len(ackshape.Store(store))
    assert 7 <= kept < 18, kept
    resumed = ackshape.sweep(tiny_file, grid, seeds=3, executor=cf.ThreadPoolExecutor(2), store=store)
    assert (resumed.attrs["stored"], resumed.attrs["computed"]) == (kept, 18 - kept)
    pd.testing.assert_frame_equal(resumed, full, check_like=False, check_flags=False, obj="resumed")
    again = ackshape.sweep(tiny_file, grid, seeds=3, store=store)
    assert (again.attrs["stored"], again.attrs["computed"]) == (18, 0)
    pd.testing.assert_frame_equal(again, full)


def test_results_of_another_build_are_never_used(tiny_file, tmp_path):
    store = tmp_path / "store"
    grid = {"tcp.cc": ["reno"]}
    first = ackshape.sweep(tiny_file, grid, seeds=2, executor=cf.ThreadPoolExecutor(1), store=store)
    # Another build's results: this build's files under another build's name.
    mine = store / "results" / ackshape.build_id
    other = store / "results" / "0.0.1+000000000000"
    shutil.copytree(mine, other)
    shutil.rmtree(mine)
    df = ackshape.sweep(tiny_file, grid, seeds=2, executor=cf.ThreadPoolExecutor(1), store=store)
    assert (df.attrs["stored"], df.attrs["computed"], df.attrs["other_builds"]) == (0, 2, 2)
    pd.testing.assert_frame_equal(df, first)
    # A summary that says it is another build's is refused.
    st = ackshape.Store(store)
    text = next(other.rglob("*.json")).read_text().replace(ackshape.provenance["commit"], "0" * 40)
    with pytest.raises(ackshape.StoreError, match="never mixed"):
        st.put("0" * 32, 1, "x = 1\n", text)


def test_a_bad_grid_fails_before_anything_runs(tiny_file, tmp_path):
    store = tmp_path / "store"
    with pytest.raises(ackshape.ScenarioError) as e:
        ackshape.sweep(tiny_file, {"topology.bottleneck.rate": ["2Mbit/s", "fast"]}, store=store)
    assert str(tiny_file) in str(e.value) and "topology.bottleneck.rate" in str(e.value) and "fast" in str(e.value)
    assert len(ackshape.Store(store)) == 0
    with pytest.raises(ackshape.ScenarioError, match="--link nosuch"):
        ackshape.sweep(tiny_file, {"tcp.cc": ["reno"]}, link="nosuch")


def test_the_command_line_and_python_share_one_store(cli, tiny_file, tmp_path):
    store = tmp_path / "store"
    run_cli(cli, "sweep", tiny_file, "--set", "topology.bottleneck.rate=2Mbit/s,4Mbit/s", "--set", "tcp.cc=reno,cubic",
            "--seeds", "2", "--store", store, "--out", tmp_path / "out", "-q")
    df = ackshape.sweep(tiny_file, {"topology.bottleneck.rate": ["2Mbit/s", "4Mbit/s"], "tcp.cc": ["reno", "cubic"]},
                        seeds=2, store=store)
    assert (df.attrs["stored"], df.attrs["computed"]) == (8, 0)
    csv = pd.read_csv(tmp_path / "out" / "sweep.csv")
    for c in ["goodput_mbps", "jain", "link_queue_avg_pkts", "seed"]:
        np.testing.assert_array_equal(df[c].to_numpy(), csv[c].to_numpy(), err_msg=c)
    # And the command line finds what Python computed.
    ackshape.sweep(tiny_file, {"tcp.cc": ["new-reno"]}, seeds=2, store=store, executor=cf.ThreadPoolExecutor(1))
    r = run_cli(cli, "sweep", tiny_file, "--set", "tcp.cc=new-reno", "--seeds", "2", "--store", store, "-q")
    assert "2 runs found, 0 computed" in r.stderr, r.stderr


def test_killing_a_dask_worker_mid_sweep_loses_no_finished_run(tiny_file, tmp_path, cluster):
    lc, client = cluster
    client.wait_for_workers(2, timeout=60)
    # 60 runs of 5 s simulated each: long enough to kill a worker in the middle.
    grid = {"topology.bottleneck.rate": [f"{r}Mbit/s" for r in range(2, 32)], "duration": ["5s"]}
    reference = ackshape.sweep(tiny_file, grid, seeds=2, executor=cf.ThreadPoolExecutor(2))
    store = tmp_path / "store"
    pids = client.run(os.getpid)
    snapshot = {}

    def progress(done, total):
        if not snapshot and done >= total // 3:
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            snapshot.update({p: p.read_bytes() for p in store.rglob("*.json") if p.parent.parent.name != "scenarios"})
            snapshot["done"] = done

    df = ackshape.sweep(tiny_file, grid, seeds=2, executor=client, store=store, progress=progress)
    n = len(reference)
    print(f"killed a worker after {snapshot['done']} of {n} runs; {df.attrs['computed']} computed")
    assert n == 60 and snapshot["done"] < n
    pd.testing.assert_frame_equal(df, reference)
    # Every run finished before the kill is still in the store, unchanged.
    for p, data in snapshot.items():
        if p != "done":
            assert p.read_bytes() == data, p
    assert len(ackshape.Store(store)) == n
    client.wait_for_workers(2, timeout=60)


def test_the_command_lines_sweep_runs_on_dask(cli, tiny_file, tmp_path, cluster):
    lc, _ = cluster
    args = ["sweep", tiny_file, "--set", "topology.bottleneck.rate=2Mbit/s,4Mbit/s,8Mbit/s", "--seeds", "2", "-q"]
    run_cli(cli, *args, "--out", tmp_path / "local")
    env = dict(os.environ, ACKSHAPE_PYTHON=sys.executable)
    r = run_cli(cli, *args, "--out", tmp_path / "dask", "--dask", lc.scheduler_address, "--store", tmp_path / "st",
                env=env)
    assert "2 workers" in r.stderr and "6 computed" in r.stderr, r.stderr
    for f in ["sweep.csv", "sweep-points.csv", "sweep.json"]:
        assert (tmp_path / "dask" / f).read_bytes() == (tmp_path / "local" / f).read_bytes(), f
    # Without the Python package: a clear error, exit status 3.
    env = dict(os.environ, ACKSHAPE_PYTHON=str(tmp_path / "no-python"))
    r = run_cli(cli, *args, "--dask", lc.scheduler_address, env=env, check=False)
    assert r.returncode == 3 and "install the Python package" in r.stderr, r.stderr
