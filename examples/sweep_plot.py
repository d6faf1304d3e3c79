"""A sweep from Python, plotted: goodput and queue of the example dumbbell over the bottleneck
rate, for a drop-tail FIFO and for RED, 5 seeds per point, on all cores (or a Dask cluster).

    python examples/sweep_plot.py                      # local process pool
    python examples/sweep_plot.py tcp://HOST:8786      # a Dask scheduler (pip install 'ackshape[dask]')

Needs the package (scripts/setup.sh builds it into target/venv) and matplotlib. Runs are kept in
results/store: run it again and nothing is computed twice. Writes results/sweep_plot.png.
"""

import pathlib
import sys

import ackshape

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    executor = None
    if len(sys.argv) > 1:
        from distributed import Client

        executor = Client(sys.argv[1])
    df = ackshape.sweep(
        ROOT / "experiments/examples/dumbbell.toml",
        {
            "topology.bottleneck.qdisc": [{"kind": "fifo"}, {"kind": "red"}],
            "topology.bottleneck.rate": ["5Mbit/s", "10Mbit/s", "20Mbit/s", "40Mbit/s"],
        },
        seeds=5,
        set={"duration": "20s"},
        executor=executor,
        store=ROOT / "results/store",
    )
    print(f"{len(df)} runs: {df.attrs['computed']} computed, {df.attrs['stored']} from the store")
    points = (
        df.groupby(["topology.bottleneck.qdisc", "topology.bottleneck.rate_bps"])
        .agg(goodput=("goodput_mbps", "mean"), goodput_se=("goodput_mbps", "sem"), queue=("link_queue_avg_pkts", "mean"))
        .reset_index()
    )
    print(points.to_string(index=False))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for qdisc, p in points.groupby("topology.bottleneck.qdisc"):
        rate = p["topology.bottleneck.rate_bps"] / 1e6
        name = qdisc.split('"')[1]  # the label is the table as TOML: { kind = "red" }
        a.errorbar(rate, p.goodput, yerr=p.goodput_se, marker="o", capsize=3, label=name)
        b.plot(rate, p.queue, marker="o", label=name)
    a.set(xlabel="bottleneck rate (Mbit/s)", ylabel="aggregate goodput (Mbit/s)")
    b.set(xlabel="bottleneck rate (Mbit/s)", ylabel="bottleneck queue, time average (packets)")
    a.legend(title="qdisc")
    fig.suptitle("example dumbbell, 10 flows: mean ± s.e. over 5 seeds")
    fig.tight_layout()
    out = ROOT / "results/sweep_plot.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
