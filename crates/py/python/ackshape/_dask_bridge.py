"""``python -m ackshape._dask_bridge --scheduler ADDRESS``: runs ``ackshape sweep --dask``'s
simulations on a Dask cluster.

The command line plans the sweep and keeps the result store; this process only hands its runs to
the cluster. One JSON object per line: it first writes ``{"ackshape": provenance, "workers": N}``
(or ``{"error": ...}``); then, per batch read from stdin (run lines ``{"i", "scenario", "file",
"set", "seed", "record"}`` ended by ``{"end": true}``), it writes ``{"i": K, "summary": TEXT}`` (with
``record``, ``reproduce --dask``'s runs: the run record's text, which keeps every number exact) or
``{"i": K, "error": MESSAGE}`` for each run as it finishes. It ends at the end of stdin.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import sys


def _say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ackshape._dask_bridge")
    ap.add_argument("--scheduler", required=True, help="the Dask scheduler's address")
    ap.add_argument("--timeout", default="30s", help="how long to wait for the scheduler")
    a = ap.parse_args(argv)
    try:
        from distributed import Client
    except ImportError:
        _say({"error": "the Python package `distributed` is missing: pip install 'ackshape[dask]' "
                       "(or './crates/py[dask]' from the source tree; scripts/setup.sh does it)"})
        return 3
    from . import _native, _worker

    try:
        client = Client(a.scheduler, timeout=a.timeout)
    except Exception as e:  # noqa: BLE001 - any failure to connect is reported as such
        _say({"error": f"cannot connect to the Dask scheduler at {a.scheduler}: {e}"})
        return 3
    with client:
        ex = client.get_executor()
        _say({"ackshape": json.loads(_native.provenance()[0]), "workers": len(client.scheduler_info()["workers"])})
        batch = []
        for line in sys.stdin:
            msg = json.loads(line)
            if not msg.get("end"):
                batch.append(msg)
                continue
            futures = {
                ex.submit(
                    _worker.run_record if m.get("record") else _worker.run_point,
                    m["scenario"], m["file"], m["set"], m["seed"],
                ): m["i"]
                for m in batch
            }
            for f in cf.as_completed(futures):
                try:
                    _say({"i": futures[f], "summary": f.result()})
                except Exception as e:  # noqa: BLE001 - a run's failure is that run's result
                    _say({"i": futures[f], "error": f"{type(e).__name__}: {e}"})
            batch = []
    return 0


if __name__ == "__main__":
    sys.exit(main())
