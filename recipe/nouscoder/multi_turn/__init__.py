"""Multi-turn RL with public-test feedback: the model runs its program on the statement's examples and revises.

NousCoder's "Future Work" names it: competitive programmers run the public examples, read the failure and fix the
code before submitting. Each turn the model writes a solution; the program is graded on the problem's **public**
tests with the training grader; unless they all pass (or a limit is reached) the verdict, the first failing public
input, the expected and actual output (or the stderr tail of a crash) go back to the model as a user message and it
writes a revision. The reward is the final turn's program on the **hidden** tests (+1 / -1, as single-turn).

Modules:

- ``options``: ``MultiTurnOptions`` (config ``nouscoder.multi_turn``);
- ``public_tests``: where a row keeps its public tests, and grading a program on them (local grader or Ray pool);
- ``feedback``: the feedback message and the "done" reply;
- ``conversation``: the turn-by-turn state of one trajectory and its record (``extra_fields["multi_turn"]``);
- ``agent_loop``: the verl agent loop ``nouscoder_public_test_feedback`` (verl 0.9.1 ``AgentLoopBase``);
- ``metrics``: the per-step ``multi_turn/*`` metrics.

Select it with ``actor_rollout_ref.rollout.agent.default_agent_loop=nouscoder_public_test_feedback`` (the configs
``*_multi_turn`` do). ``recipe.nouscoder.main`` then loads ``agent_loop`` in every Ray process
(``VERL_USE_EXTERNAL_MODULES``), which registers it in verl's agent-loop registry.
"""

from omegaconf import DictConfig, OmegaConf

AGENT_NAME = "nouscoder_public_test_feedback"
"""Name of the agent loop in verl's registry (``actor_rollout_ref.rollout.agent.default_agent_loop``)."""
AGENT_LOOP_MODULE = "recipe.nouscoder.multi_turn.agent_loop"
"""The module whose import registers the agent loop."""


def uses_multi_turn(config: DictConfig) -> bool:
    """True when the run's default agent loop is the public-test feedback loop."""
    return OmegaConf.select(config, "actor_rollout_ref.rollout.agent.default_agent_loop") == AGENT_NAME
