#!/usr/bin/env python3
"""Summarizes region_timer_shim.c's output for `octet bench --iters RUNS --warmup W`:

    python3 region_report.py /tmp/r.txt --runs 200 --warmup 10

The last RUNS x R regions are the timed runs (R regions per run; the regions before the
warmup are session creation). Per region index, the best run (minimum over runs) stands
for a quiet machine: its serial gap before the fork, the worker's late start, and the
difference between the two threads' ends (a worker that waits longer than its spin at the
join or between regions goes to sleep, and the next fork has to wake it: ~30 us here).
"""
import argparse

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--runs", type=int, default=200)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--spin-us", type=float, default=23.0, help="the worker's spin time (GOMP_SPINCOUNT=1000: 23 us here)")
a = p.parse_args()
d = np.loadtxt(a.file)
total = a.runs + a.warmup
per_run = None
for r in range(1, len(d) // total + 1):  # the setup regions are fewer than one run's
    if 0 <= len(d) - total * r < r:
        per_run = r
if per_run is None:
    raise SystemExit(f"{len(d)} regions do not split into {total} runs plus setup")
t = d[len(d) - a.runs * per_run:].reshape(a.runs, per_run, 6)
fork, ret, e0, e1, team, ws = (t[..., k] for k in range(6))
gap = fork[:, 1:] - ret[:, :-1]
late = np.where(team >= 2, ws - fork, 0)
end_diff = np.abs(e1 - e0)
best = lambda x: x.min(axis=0)
print(f"{per_run} regions per run ({len(d) - total * per_run} at setup)")
print(f"best-run serial gap before a fork: median {np.median(best(gap)):.1f} us, max {best(gap).max():.1f} us, "
      f"{(best(gap) > a.spin_us).sum()} above the spin")
print(f"best-run worker start delay: median {np.median(best(late)):.1f} us, max {best(late).max():.1f} us")
print(f"best-run |end difference|: median {np.median(best(end_diff)):.1f} us, p90 {np.percentile(best(end_diff), 90):.1f} us, "
      f"{(best(end_diff) > a.spin_us).sum()} above the spin")
print(f"sum over regions of best-run (start delay + end difference): {(best(late) + best(end_diff)).sum() / 1000:.3f} ms; "
      f"sum of region minima {best(ret - fork).sum() / 1000:.2f} ms")
print(f"typical run (medians): worker start delay > 20 us in {(late > 20).mean():.0%} of regions, "
      f"|end difference| > spin in {(end_diff > a.spin_us).mean():.0%}")
