"""What verl's trainer calls during ``fit()``: the recipe's trainers (``trainer``: one mixin over verl's V1
trainers) and the training-loop extensions their hooks call (dynamic sampling, online filter, temperature stages,
diversity, negative control, step metrics, rollout shutdown). Runs in verl's TaskRunner process.

Rule: may import ``configs``, ``extra_fields``, ``cpu`` (the CPU mode's rollout client) and ``multi_turn`` (its
metrics); never the tools around a run (``run``, ``selection``, ``eval``).
"""
