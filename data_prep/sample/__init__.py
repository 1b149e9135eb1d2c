"""The bundled sample of original competitive-programming problems (see README.md in this folder).

from data_prep.sample import load_problems, load_solutions
problems = load_problems()                      # 44 problems, ground truth in the layout of docs/DESIGN.md
wrong = load_solutions(kinds=["wrong_answer"])  # model-style completions with their expected verdicts
"""

from data_prep.sample.bundle import DATA_SOURCE, SAMPLE_DIR, SampleProblem, load_problems
from data_prep.sample.solutions import SampleSolution, load_solutions

__all__ = ["DATA_SOURCE", "SAMPLE_DIR", "SampleProblem", "SampleSolution", "load_problems", "load_solutions"]
