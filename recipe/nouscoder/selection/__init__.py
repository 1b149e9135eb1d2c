"""Choices made between stages from what a run produced: the best checkpoint by LiveCodeBench score
(``select_checkpoint``) and MicroCoder's diversity-determined temperature (``pick_temperature``).

Rule: may import ``configs``, ``run`` (a run's files) and the pure metrics of ``training`` (``diversity``).
"""
