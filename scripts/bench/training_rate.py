"""Samples per second of training from a run's `step` records, for the bench reports.

Each step record's samples_per_second covers the window since the record before it, so the
windows are weighted by their length: a plain mean of the rates let short windows (where the
workers' reports arrive bunched) count as much as long ones, up to 8 % high on the cluster bench.
"""


def training_samples_per_second(steps):
    """Samples trained over the training wall time; None without rated step records."""
    trained, previous = 0.0, 0.0
    for record in steps:
        if record.get("samples_per_second") and record.get("wall_seconds") is not None:
            trained += record["samples_per_second"] * (record["wall_seconds"] - previous)
            previous = record["wall_seconds"]
    return trained / previous if previous > 0 else None
