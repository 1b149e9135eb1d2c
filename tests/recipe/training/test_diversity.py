"""Within-group diversity (distinct-n-gram Jaccard distance) against hand-computed values."""

import math

import numpy as np

from recipe.nouscoder.training.diversity import batch_group_diversity, group_diversity, jaccard_distance, ngram_codes


def test_ngram_codes_count_distinct_ngrams():
    assert ngram_codes([1, 2, 1, 2, 1], 2).size == 2  # {12, 21}
    assert ngram_codes([1, 2, 3, 1, 2, 3], 3).size == 3  # {123, 231, 312}
    assert ngram_codes([7, 8], 4).size == 1  # shorter than n: the whole sequence
    assert ngram_codes([], 3).size == 0
    # the same n-gram gets the same code in any sequence; different ones differ
    shared = np.intersect1d(ngram_codes([4, 5, 6], 2), ngram_codes([9, 4, 5, 7], 2))
    assert shared.size == 1  # only (4, 5)


def test_jaccard_distance_by_hand():
    # {1,2,3} vs {2,3,4}: intersection 2, union 4 -> 1 - 2/4
    assert jaccard_distance(np.array([1, 2, 3]), np.array([2, 3, 4])) == 0.5
    assert jaccard_distance(np.array([]), np.array([])) == 0.0
    assert jaccard_distance(np.array([5]), np.array([])) == 1.0
    assert jaccard_distance(np.array([], dtype=np.uint64), np.array([5], dtype=np.uint64)) == 1.0


def test_group_diversity_three_responses_bigrams():
    a = [1, 2, 3]  # bigrams {12, 23}
    b = [1, 2, 4]  # bigrams {12, 24}
    c = [1, 2, 3]  # same as a
    # pairs: (a,b) 1 - 1/3, (a,c) 0, (b,c) 1 - 1/3  -> mean 4/9
    assert math.isclose(group_diversity([a, b, c], n=2), 4 / 9)
    assert group_diversity([a, a], n=2) == 0.0
    assert group_diversity([[1, 2], [3, 4]], n=2) == 1.0
    assert math.isnan(group_diversity([a], n=2))


def test_batch_group_diversity_averages_groups_and_skips_singletons(kit):
    batch = kit.build(
        [
            kit.Group("g1", [kit.Rollout(1, [1, 2, 3]), kit.Rollout(-1, [1, 2, 4]), kit.Rollout(1, [1, 2, 3])]),
            kit.Group("g2", [kit.Rollout(1, [5, 6]), kit.Rollout(1, [7, 8])]),
            kit.Group("g3", [kit.Rollout(1, [9, 9, 9])]),
        ]
    )
    # g1 = 4/9 (above), g2 = 1.0, g3 skipped -> (4/9 + 1) / 2
    assert math.isclose(batch_group_diversity(batch, n=2), (4 / 9 + 1.0) / 2)
    # capped to one group: the first of the evenly spread picks is g1
    assert math.isclose(batch_group_diversity(batch, n=2, max_groups=1), 4 / 9)
