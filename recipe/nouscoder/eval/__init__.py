"""LiveCodeBench evaluation behind ``python -m recipe.nouscoder.eval.eval_lcb`` (documentation: README.md here).

``data`` (the problems of a test parquet) -> ``generate`` (vLLM, resumable; ``multi_turn`` for conversations with
public-test feedback) or ``samples`` (completions from a file) -> ``grading`` (the training grader, resumable
``cache``) -> ``metrics`` (pass@k and breakdowns) -> ``report`` (results.json, CSV, Markdown, plots); ``compare``
sets two runs side by side.

Rule: may import ``configs`` and ``multi_turn`` (evaluated conversations); never the trainer.
"""
