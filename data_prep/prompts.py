"""The LiveCodeBench prompt, in the two variants the recipes use.

Both use LiveCodeBench's texts (``lcb_runner/prompts/code_generation.py``, ``PromptConstants``): the generic
system message and the two format instructions, one for problems with starter code (functional, e.g.
LeetCode) and one for stdin/stdout problems.

- ``nouscoder`` (default): LiveCodeBench's own chat layout (``LMStyle.OpenAIChat``): a ``system`` turn with the
  system message and a ``user`` turn ``### Question:\\n<statement>\\n\\n### Format: ...### Answer: ...``. The
  NousCoder-14B blog says it prompts "using the standard LiveCodeBench prompt" and evaluates on LCB v6, so
  training and evaluation see the same layout.
- ``deepcoder``: DeepCoder's training prompt (rLLM ``rllm/data/utils.py``, ``fetch_live_code_bench_system_prompt``):
  one ``user`` turn holding the system message, a blank line, the statement *without* the ``### Question:``
  header and directly followed by the same ``### Format:`` / ``### Answer:`` block; no ``system`` turn.

What differs: where the system text goes (its own turn vs. the top of the user turn) and the
``### Question:`` header with its blank line. The format instructions and the code fence are identical.

Function-call problems that ship no starter code (DeepCoder's ``taco`` and ``primeintellect`` configs keep none;
PrimeIntellect's ``function_call`` rows have none) are graded by calling ``fn_name``; their prompt gets a stub
``def <fn_name>(arg1, ..., argN):`` in the starter-code format, the way LiveCodeBench presents LeetCode problems
(a signature to complete), so the model is told the name it is graded by instead of "read the inputs from stdin".
"""

from __future__ import annotations

from typing import Literal

PromptVariant = Literal["nouscoder", "deepcoder"]
PROMPT_VARIANTS: tuple[str, ...] = ("nouscoder", "deepcoder")

SYSTEM_MESSAGE = (
    "You are an expert Python programmer. You will be given a question (problem specification) and will "
    "generate a correct Python program that matches the specification and passes all tests."
)
FORMAT_WITH_STARTER_CODE = (
    "You will use the following starter code to write the solution to the problem and enclose your code "
    "within delimiters."
)
FORMAT_WITHOUT_STARTER_CODE = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the "
    "sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, "
    "it reads the inputs, runs the algorithm and writes output to STDOUT."
)
ANSWER_LINE = "### Answer: (use the provided format with backticks)\n\n"


def function_stub(fn_name: str, argument_count: int) -> str:
    """Starter code for a function-call problem without one: ``def fn_name(arg1, ..., argN):`` and an indented line."""
    arguments = ", ".join(f"arg{position}" for position in range(1, argument_count + 1))
    return f"def {fn_name}({arguments}):\n    "


def format_block(starter_code: str) -> str:
    """The ``### Format:`` instruction, the code fence (starter code or a placeholder) and the answer line."""
    if starter_code:
        return f"### Format: {FORMAT_WITH_STARTER_CODE}\n```python\n{starter_code}\n```\n\n{ANSWER_LINE}"
    return f"### Format: {FORMAT_WITHOUT_STARTER_CODE}\n```python\n# YOUR CODE HERE\n```\n\n{ANSWER_LINE}"


def build_prompt(statement: str, starter_code: str, variant: PromptVariant = "nouscoder") -> list[dict[str, str]]:
    """Chat messages for one problem (verl's ``prompt`` column)."""
    if variant == "nouscoder":
        user = f"### Question:\n{statement}\n\n{format_block(starter_code)}"
        return [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": user}]
    if variant == "deepcoder":
        return [{"role": "user", "content": f"{SYSTEM_MESSAGE}\n\n{statement}{format_block(starter_code)}"}]
    raise ValueError(f"unknown prompt variant {variant!r}; choose one of {', '.join(PROMPT_VARIANTS)}")
