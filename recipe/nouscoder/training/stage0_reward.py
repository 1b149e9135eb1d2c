"""Stage 0's reward (the offline filter's validation-only run): the training reward, with the ground truth read from
the row's ``extra_info`` and the problem id returned with every verdict.

verl's validation keeps ``reward_model.ground_truth`` of every rollout in the TaskRunner until the end of the run and
writes it as ``gts`` on each line of its generation dump (verl/trainer/ppo/v1/trainer_base.py ``_validate``,
``_write_generations``): 24k problems x 8 rollouts x tests of up to tens of MB. Stage 0 therefore reads a copy of the
training parquet whose ``reward_model.ground_truth`` is empty and whose ``extra_info.ground_truth`` holds the tests
(launch/offline_filter.py ``prepare``); ``_validate`` does not fetch ``extra_info``. This function hands those tests to
the training reward (``reward_fns.async_score``, the Ray grading pool, with the stage's reward_kwargs) and adds
``problem_id``, which verl's reward loop keeps in each rollout's reward extra info and the dump writes as a column, so
that launch/offline_filter.py keys each generation by its problem without the ground truth.

    reward.custom_reward_function.path=pkg://recipe.nouscoder.training.stage0_reward
"""

from __future__ import annotations

from typing import Any

from reward_fns import async_score

GROUND_TRUTH_KEY = "ground_truth"  # in extra_info, where launch/offline_filter.py prepare moves it
PROBLEM_ID_KEY = "problem_id"  # in extra_info (docs/DESIGN.md "Parquet row") and in the returned dict


async def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None, **kwargs: Any
) -> dict[str, Any]:
    info = dict(extra_info or {})
    if GROUND_TRUTH_KEY not in info or PROBLEM_ID_KEY not in info:
        raise ValueError(
            f"stage 0's reward needs extra_info.{GROUND_TRUTH_KEY} and extra_info.{PROBLEM_ID_KEY} (the parquet of "
            "launch/offline_filter.py prepare); this row has neither or one: run stage 0 on that parquet"
        )
    tests = info.pop(GROUND_TRUTH_KEY)
    result = await async_score.compute_score(data_source, solution_str, tests, info, **kwargs)
    return {**result, PROBLEM_ID_KEY: str(info[PROBLEM_ID_KEY])}
