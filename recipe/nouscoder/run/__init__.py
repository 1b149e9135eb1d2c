"""Tools around a run, none of which trains: checks before it starts (required values, the Ray cluster's size,
validation coverage), the console while it runs (``console``, ``progress``), and readers of what it wrote
(``run_dir``: checkpoints and metrics files; ``plot_metrics``, ``run_summary``, ``learning_curve``).

Rule: imports only ``configs`` of the recipe; reads a run through its files (``run_dir``), never through the
trainer's objects.
"""
