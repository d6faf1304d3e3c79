"""ackshape.run: the same summary as the command line byte for byte, the same tables as its CSV
files, typed inputs, the command line's error messages, and the GIL released while simulating."""

import json
import threading
import time

import pandas as pd
import pytest

import ackshape
from conftest import SCENARIO, run_cli, without_wall_time


def test_summary_is_the_command_lines_byte_for_byte(cli, scenario_file, tmp_path):
    out = tmp_path / "cli"
    run_cli(cli, "run", scenario_file, "--seed", 7, "--out", out, "-q")
    r = ackshape.run(str(scenario_file), seed=7)
    expected = (out / "summary.json").read_text()
    assert '"wall_time_s"' in expected
    assert without_wall_time(r.summary_json) == without_wall_time(expected)
    assert r.summary_json.endswith("}\n")
    d = json.loads(expected)
    del d["sim"]["wall_time_s"]
    got = dict(r.summary)
    got["sim"] = {k: v for k, v in got["sim"].items() if k != "wall_time_s"}
    assert got == d
    # The build is named in the summary and is this package's.
    assert r.summary["ackshape"] == ackshape.provenance
    assert r.summary["seed"] == 7


def test_settings_and_output_files_match_the_command_line(cli, scenario_file, tmp_path):
    run_cli(
        cli, "run", scenario_file, "--set", "topology.bottleneck.rate=5Mbit/s", "--set", "flows[0].count=2",
        "--out", tmp_path / "cli", "-q",
    )
    r = ackshape.run(
        scenario_file, set={"topology.bottleneck.rate": "5Mbit/s", "flows[0].count": 2}, out=tmp_path / "py"
    )
    assert r.summary["scenario"]["set"] == ["topology.bottleneck.rate=5Mbit/s", "flows[0].count=2"]
    assert len(r.summary["flows"]) == 3
    for f in ["flows.csv", "links.csv", "timeseries.csv", "queues.csv", "trace.csv", "scenario.toml"]:
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    a = (tmp_path / "py" / "summary.json").read_text()
    assert without_wall_time(a) == without_wall_time((tmp_path / "cli" / "summary.json").read_text())
    assert without_wall_time(a) == without_wall_time(r.summary_json)
    assert sorted(p.split("/")[-1] for p in r.files) == sorted(p.name for p in (tmp_path / "py").iterdir())
    # Command-line strings give the same scenario.
    s = ackshape.run(scenario_file, set=["topology.bottleneck.rate=5Mbit/s", "flows[0].count=2"])
    assert without_wall_time(s.summary_json) == without_wall_time(r.summary_json)


def test_tables_are_the_csv_files_with_numeric_columns(scenario_file, tmp_path):
    r = ackshape.run(scenario_file, out=tmp_path)
    read = lambda f: pd.read_csv(tmp_path / f, keep_default_na=False, na_values=[""])
    for name, table in [("flows", r.flows), ("links", r.links), ("timeseries", r.timeseries), ("queues", r.queues),
                        ("trace", r.trace)]:
        csv = read(f"{name}.csv")
        assert list(table.columns) == list(csv.columns), name
        assert len(table) > 0, name
        pd.testing.assert_frame_equal(table, csv, check_dtype=False, obj=name)
    assert list(r.flows.columns) == ackshape.FLOW_COLUMNS
    for col in ["goodput_bps", "rtt_mean_ms", "retransmitted_packets"]:
        assert pd.api.types.is_numeric_dtype(r.flows[col]), col
    for col in ["t_end_s", "goodput_bps"]:
        assert r.timeseries[col].dtype == "float64"
    assert r.timeseries.flow.dtype == "uint64" and r.queues.queue_max_pkts.dtype == "uint64"
    # 4 s in 1 s bins for each of the 4 flows.
    assert len(r.timeseries) == 4 * 4
    assert set(r.queues.link) <= set(r.links.name)


def test_a_dict_and_toml_text_run_the_same_scenario_as_the_file(scenario_file):
    import tomllib

    by_file = ackshape.run(scenario_file).summary
    by_text = ackshape.run(SCENARIO).summary
    by_dict = ackshape.run(tomllib.loads(SCENARIO)).summary
    assert by_text["scenario"]["file"] == "<string>" and by_dict["scenario"]["file"] == "<dict>"
    for s in (by_text, by_dict):
        for k in ("flows", "links", "aggregate", "seed"):
            assert s[k] == by_file[k], k


def test_errors_carry_the_command_lines_message(cli, scenario_file):
    for args, kw in [
        (["--set", "topology.bottleneck.rate=fast"], {"set": {"topology.bottleneck.rate": "fast"}}),
        (["--set", "topology.botleneck.rate=1Mbit/s"], {"set": ["topology.botleneck.rate=1Mbit/s"]}),
        (["--set", "flows[3].count=1"], {"set": {"flows[3].count": 1}}),
    ]:
        r = run_cli(cli, "run", scenario_file, *args, check=False)
        assert r.returncode == 2
        with pytest.raises(ackshape.ScenarioError) as e:
            ackshape.run(str(scenario_file), **kw)
        assert f"error: {e.value}\n" == r.stderr
        assert str(scenario_file) in str(e.value)
    assert issubclass(ackshape.ScenarioError, ValueError)
    with pytest.raises(ackshape.ScenarioError, match="nope.toml: cannot read"):
        ackshape.run("nope.toml")
    with pytest.raises(ackshape.ScenarioError, match=r"<dict>: key `duration`"):
        ackshape.run({"duration": "soon", "topology": {"kind": "dumbbell"}})
    with pytest.raises(ackshape.ScenarioError, match="None has no TOML value"):
        ackshape.run(SCENARIO, set={"seed": None})
    with pytest.raises(TypeError, match="not a TOML value"):
        ackshape.run(SCENARIO, set={"seed": object()})


def test_the_gil_is_released_while_a_simulation_runs(scenario_file):
    # A long run in a thread while this thread notes the time in a loop. Were the GIL held during
    # the simulation, this loop would stop for its whole length: the largest gap between the
    # times noted within the call would be about the call's length.
    span = []

    def one():
        t0 = time.perf_counter()
        r = ackshape.run(scenario_file, set={"duration": "120s"})
        span.extend([t0, time.perf_counter(), r.summary["scenario"]["duration_s"]])

    t = threading.Thread(target=one)
    noted = []
    t.start()
    while t.is_alive():
        noted.append(time.perf_counter())
    t.join()
    a0, a1, dur = span
    assert dur == pytest.approx(120.0)
    inside = [a0] + [x for x in noted if a0 < x < a1] + [a1]
    gap = max(b - a for a, b in zip(inside, inside[1:]))
    print(f"call {a1 - a0:.3f} s; {len(inside) - 2} times noted during it, largest gap {gap * 1e3:.1f} ms")
    assert gap < 0.5 * (a1 - a0)
