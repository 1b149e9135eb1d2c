"""Problem statements: the prompt wrapper some sources put around them, the words duplicates are found by, the tags
some statements carry, and whether a statement describes an interactive problem.

PrimeIntellect's SYNTHETIC-1 prompts, and so DeepCoder's ``primeintellect`` config, wrap the statement as
``Solve the following coding problem using the programming language python:\\n\\n<statement>\\n\\nThe input will be
stdin and you should print your solution to stdout\\n\\n\\nNow solve the problem and return the code.`` (a row in
modelscope/ms-swift ``docs/source/BestPractices/GRPO代码训练.md``; LLM360/Reasoning360
``data_preprocess/codegen/primeintellect.py`` splits the preamble off the DeepCoder rows). The wrapper is removed
before the statement reaches the prompt (whose own format block says how to answer) and before hashing, so that
the same problem from TACO or LiveCodeBench is recognised as a duplicate.
"""

from __future__ import annotations

import ast
import html
import re
import unicodedata

_PREAMBLE = re.compile(r"\A\s*Solve the following coding problem using the programming language [\w+#.-]+\s*:\s*", re.I)
_TRAILER = re.compile(r"\s*Now solve the problem and return the code\.?\s*\Z", re.I)
_IO_NOTE = re.compile(
    r"\s*The input will be (?:stdin and you should print your solution to stdout|given via stdin and the output "
    r"should be printed to stdout by your code)\.?\s*\Z",
    re.I,
)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]{0,200}>")
_INTERACTIVE_SENTENCE = re.compile(r"\bthis is an? interactive (?:problem|task)\b", re.I)
_INTERACTION_HEADING = re.compile(r"^[ \t]*-*[ \t]*Interaction[ \t]*-*[ \t]*$", re.M)
_WORD = re.compile(r"[a-z0-9]+")
_TAGS_LINE = re.compile(r"^[ \t]*Tags:[ \t]*\n?[ \t]*(\[[^\n]*\])[ \t]*$", re.M)


def strip_prompt_wrapper(statement: str) -> str:
    """The statement without PrimeIntellect's preamble, I/O note and trailer; unchanged when it has none."""
    stripped = _PREAMBLE.sub("", statement, count=1)
    stripped = _TRAILER.sub("", stripped, count=1)
    return _IO_NOTE.sub("", stripped, count=1)


def statement_words(statement: str) -> list[str]:
    """Normalised words for hashing: wrapper removed, HTML entities decoded and tags dropped (LeetCode statements
    are HTML), NFKC, lower case, runs of letters and digits (punctuation, markdown and spacing ignored)."""
    text = _HTML_TAG.sub(" ", html.unescape(strip_prompt_wrapper(statement)))
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def is_interactive_statement(statement: str) -> bool:
    """True for the statement of an interactive problem: Codeforces opens one with "This is an interactive
    problem." and describes the protocol under an "Interaction" heading where other problems have "Output" (TACO's
    Codeforces 1063C, printed by rllm-org/rllm ``rllm/data/preprocess/code/taco.ipynb``: "This is an interactive
    problem. ... Interaction ..."); "interactive task" is matched too."""
    return bool(_INTERACTIVE_SENTENCE.search(statement) or _INTERACTION_HEADING.search(statement))


def statement_tags(statement: str) -> list[str]:
    """The platform tags written into the statement text, lower case: rLLM's Codeforces template (DeepCoder's
    ``codeforces`` test config; rllm-org/rllm ``rllm/data/preprocess/code/codeforces.ipynb``, ``CODEFORCES_TEMPLATE``)
    has a ``Tags:`` line followed by the tag list as Python prints it (``['constructive algorithms',
    'interactive', 'strings']``, as in that repository's ``rllm/data/test/code/codeforces.json``, problem 2013C).
    [] when the statement has no such line or it does not hold a list of strings."""
    tags: list[str] = []
    for match in _TAGS_LINE.finditer(statement):
        try:
            value = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            continue
        if isinstance(value, list):
            tags += [tag.strip().lower() for tag in value if isinstance(tag, str)]
    return tags
