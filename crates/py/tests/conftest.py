"""Shared fixtures: the command-line binary (to compare with) and tiny scenarios (a few simulated
seconds each, so that the tests stay fast)."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]

# Three TCP flows and a UDP source on a lossy, jittery 10 Mbit/s bottleneck for 4 s: every table
# (flows, links, time series, queues, trace) has rows.
SCENARIO = """
name = "py-test"
seed = 5
duration = "4s"
warmup = "1s"
trace_interval = "200ms"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "10ms", queue = "30pkt", jitter = "1ms", loss = { kind = "bernoulli", p = 0.002 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 3
start = "uniform(0s, 500ms)"
[[flows]]
kind = "udp-poisson"
rate = "500kbit/s"
"""

# Two flows for 1 s: a sweep point costs milliseconds.
TINY = """
name = "py-tiny"
seed = 1
duration = "1s"
warmup = "200ms"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbit/s", delay = "5ms", queue = "20pkt", loss = { kind = "bernoulli", p = 0.005 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 2
start = "uniform(0s, 100ms)"
"""


@pytest.fixture(scope="session")
def cli():
    """The ackshape binary of this tree (ACKSHAPE_BIN, or target/release/ackshape)."""
    p = pathlib.Path(os.environ.get("ACKSHAPE_BIN", REPO / "target" / "release" / "ackshape"))
    if not p.is_file():
        pytest.fail(f"{p} is missing: build it with `cargo build --release` (scripts/test.sh does) or set ACKSHAPE_BIN")
    return p


@pytest.fixture
def scenario_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    return f


@pytest.fixture
def tiny_file(tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    return f


def run_cli(cli, *args, env=None, check=True):
    r = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, env=env)
    if check:
        assert r.returncode == 0, f"ackshape {' '.join(map(str, args))}: {r.stderr}"
    return r


def without_wall_time(text):
    return "\n".join(l for l in text.splitlines() if not l.strip().startswith('"wall_time_s"'))
