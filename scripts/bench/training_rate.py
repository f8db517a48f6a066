"""Samples per second of training from a run's `step` records, for the bench reports.

Each step record's samples_per_second covers the window since the record before it, so the
windows are weighted by their length: a plain mean of the rates let short windows (where the
workers' reports arrive bunched) count as much as long ones, up to 8 % high on the cluster bench.
A record's time is its wall_seconds (the master's training clock) or, where a strategy does not
write that, its `t`; the first window, which holds the start-up, is left out.
"""


def training_samples_per_second(steps):
    """Samples trained per second over the step records' windows; None without two records."""
    timed = [(r.get("wall_seconds", r.get("t")), r["samples_per_second"])
             for r in steps if r.get("samples_per_second")]
    timed = [(time, rate) for time, rate in timed if time is not None]
    if len(timed) < 2:
        return timed[0][1] if timed else None
    trained = sum(rate * (time - before) for (before, _), (time, rate) in zip(timed, timed[1:]))
    span = timed[-1][0] - timed[0][0]
    return trained / span if span > 0 else None
