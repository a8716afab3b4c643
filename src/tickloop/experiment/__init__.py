"""Experiments: many real harness sessions x policies x models -> a dataset, plots, a redacted export.

``spec`` validates a TOML spec once into frozen records; ``runner`` only schedules real sessions
(``preflight`` checks what they need first); ``dataset``, ``export`` and ``report`` are pure
functions of the run directory, with the tables in ``schema``, the scrubber and keyed digests in
``redaction`` and how the run was made in ``provenance`` (every export format uses these two);
``k8s`` writes the run as a Kubernetes Indexed Job. Everything heavy (pyarrow, matplotlib, rich) is
imported lazily.
"""
