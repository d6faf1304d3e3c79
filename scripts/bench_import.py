#!/usr/bin/env python3
"""How long `import ackshape` takes, against the interpreter's own start and `import pandas`, in
fresh processes of the same Python (the median of N runs each, alternating).

    target/venv/bin/python scripts/bench_import.py [N]

`import ackshape` loads the extension and a few small modules; numpy and pandas are imported
when a DataFrame is first asked for, so it should cost a small fraction of `import pandas`.
"""

import statistics
import subprocess
import sys
import time


def once(code):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    cases = {"python -c pass": "pass", "import ackshape": "import ackshape", "import pandas": "import pandas"}
    times = {k: [] for k in cases}
    for code in cases.values():  # warm the file cache
        once(code)
    for _ in range(n):
        for k, code in cases.items():
            times[k].append(once(code))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["python -c pass"]
    for k, m in med.items():
        print(f"{k:<18} {m * 1e3:7.1f} ms   (over interpreter start: {(m - base) * 1e3:6.1f} ms)")
    a, p = med["import ackshape"] - base, med["import pandas"] - base
    print(f"import ackshape / import pandas (over interpreter start): {a / p:.3f}")
    print(f"import ackshape total {med['import ackshape']:.3f} s (target < 0.5 s): {'ok' if med['import ackshape'] < 0.5 else 'TOO SLOW'}")


if __name__ == "__main__":
    main()
