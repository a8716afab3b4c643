"""Benchmarks. Each ``bench_*.py`` module has ``run(quick: bool) -> None`` and prints ratios against a
baseline it measures in the same run (these machines are shared and noisy, so absolute numbers lie)."""
