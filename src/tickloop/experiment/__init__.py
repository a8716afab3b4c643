"""Experiments: many real harness sessions x policies x models -> a dataset, plots, a redacted export.

``spec`` validates a TOML spec once into frozen records; ``runner`` only schedules real sessions;
``dataset``, ``export`` and ``report`` are pure functions of the run directory; ``k8s`` writes the
run as a Kubernetes Indexed Job. Everything heavy (pyarrow, matplotlib, rich) is imported lazily.
"""
