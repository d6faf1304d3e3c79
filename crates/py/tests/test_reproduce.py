"""ackshape.reproduce: the papers' experiments with their simulations on a 2-worker Dask
LocalCluster give the same claims as the command line's `reproduce` (and `reproduce --dask` the
same as its local run), for the same seed. Quick mode, two small experiments, to stay fast."""

import json
import math
import os
import sys

import pandas as pd
import pytest

import ackshape
from conftest import run_cli

import distributed  # noqa: F401  (the dask extra is part of the test set-up)

# P2-F3: plain summaries; P2-F8: each run's goodput series too; P4-F7: the tap's runs; P4-F8: each
# run's sender TCP counters too (all a few seconds in quick mode).
IDS = ["P2-F3", "P2-F8", "P4-F7", "P4-F8"]


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc:
        with Client(lc) as client:
            yield lc, client


@pytest.fixture(scope="module")
def cli_out(cli, tmp_path_factory):
    """The command line's run: its --out directory and its --json records."""
    out = tmp_path_factory.mktemp("cli")
    r = run_cli(cli, "reproduce", *IDS, "--quick", "--seed", "3", "-q", "--json", "--out", out)
    return out, json.loads(r.stdout)


def test_reproduce_on_dask_equals_the_command_line(cli_out, cluster, tmp_path):
    out, records = cli_out
    _, client = cluster
    df = ackshape.reproduce(IDS, quick=True, seed=3, executor=client, out=tmp_path)
    # Every experiment's claims.json byte for byte (it carries no run times).
    for id in IDS:
        assert (tmp_path / id / "claims.json").read_bytes() == (out / id / "claims.json").read_bytes(), id
    # The DataFrame: one row per --json record, same claim, status and measured value.
    assert len(df) == len(records) > 0
    assert df["paper_value"].dtype == float and df["measured_value"].dtype == float
    for (_, row), rec in zip(df.iterrows(), records):
        what = (rec["id"], rec["claim_id"])
        assert (row["id"], row["claim_id"], row["status"]) == (*what, rec["status"]), what
        m = rec["measured_value"]
        assert math.isnan(row["measured_value"]) if m is None else row["measured_value"] == m, what
    print(df[["id", "claim_id", "status", "measured_value", "paper_value"]].to_string())


def test_reproduce_on_threads_and_a_process_pool_equal_the_command_line(cli_out, tmp_path):
    out, records = cli_out
    for how, ex in [("threads", None), ("processes", "processes")]:
        recs = ackshape.reproduce(IDS, quick=True, seed=3, executor=ex, out=tmp_path / how, frame=False,
                                  max_workers=2)
        assert recs == records, how


def test_the_command_lines_reproduce_runs_on_dask(cli, cli_out, cluster, tmp_path):
    out, _ = cli_out
    lc, _ = cluster
    env = dict(os.environ, ACKSHAPE_PYTHON=sys.executable)
    r = run_cli(cli, "reproduce", *IDS, "--quick", "--seed", "3", "-q", "--out", tmp_path, "--dask",
                lc.scheduler_address, env=env)
    assert "2 workers" in r.stderr, r.stderr
    for id in IDS:
        assert (tmp_path / id / "claims.json").read_bytes() == (out / id / "claims.json").read_bytes(), id


def test_an_unknown_experiment_is_an_error():
    with pytest.raises(ackshape.ScenarioError, match="unknown experiment `P9-X`"):
        ackshape.reproduce(["P9-X"], quick=True)
