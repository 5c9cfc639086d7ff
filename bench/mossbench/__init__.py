"""Parts of bench/run_bench.py: running moss-infer-hip, the PyTorch baselines, FLOP counts, the report."""
