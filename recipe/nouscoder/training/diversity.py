"""Within-group output diversity: mean pairwise distinct-n-gram Jaccard distance.

MicroCoder (sections 2.4 and 3) tracks "output diversity" to choose the training temperature but does not
define the measure. We use, for the responses of one prompt (a GRPO group):

    D(group) = mean over pairs i < j of  1 - |G_n(y_i) ∩ G_n(y_j)| / |G_n(y_i) ∪ G_n(y_j)|

where G_n(y) is the set of distinct token n-grams of response y (a response shorter than n contributes its
whole token sequence as a single gram). D is 0 when all responses are identical and 1 when no two share an
n-gram. It is computed on token ids, so it needs no tokenizer and is cheap on CPU.
"""

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import torch
from verl import DataProto

_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant; n-gram code = sum_j t_j * M^j mod 2^64


def ngram_codes(tokens: Sequence[int], n: int) -> np.ndarray:
    """Sorted unique uint64 codes of the distinct n-grams of ``tokens`` (a short, non-empty sequence is one gram).

    Each n-gram (t_0..t_{n-1}) is coded as sum_j t_j * M^j mod 2^64, so set operations run on integer arrays;
    two different n-grams share a code with probability ~2^-64.
    """
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    values = np.asarray(tokens, dtype=np.uint64)
    if values.size == 0:
        return values
    width = min(n, values.size)
    windows = values.size - width + 1
    codes = np.zeros(windows, dtype=np.uint64)
    for offset in range(width):
        codes = codes * _HASH_MULTIPLIER + values[offset : offset + windows]
    codes.sort()
    return codes[np.concatenate(([True], codes[1:] != codes[:-1]))]


def jaccard_distance(first: np.ndarray, second: np.ndarray) -> float:
    """1 - |A ∩ B| / |A ∪ B| of two sorted unique code arrays; two empty sets are identical (distance 0)."""
    positions = np.searchsorted(second, first).clip(max=max(second.size - 1, 0))
    common = int(np.count_nonzero(second[positions] == first)) if second.size else 0
    union = first.size + second.size - common
    return 0.0 if union == 0 else 1.0 - common / union


def group_diversity(responses: Sequence[Sequence[int]], n: int = 4) -> float:
    """Mean pairwise distinct-n-gram Jaccard distance of one group's responses; NaN for fewer than 2."""
    code_sets = [ngram_codes(response, n) for response in responses]
    distances = [jaccard_distance(first, second) for first, second in combinations(code_sets, 2)]
    return float(np.mean(distances)) if distances else float("nan")


def response_token_lists(batch: DataProto) -> list[list[int]]:
    """Generated token ids of each row: ``responses`` (bs, L) where ``response_mask`` (bs, L) is 1."""
    responses = batch.batch["responses"]
    response_mask = batch.batch["response_mask"].bool()
    return [responses[row][response_mask[row]].tolist() for row in range(responses.shape[0])]


def batch_group_diversity(batch: DataProto, n: int = 4, max_groups: int | None = None) -> float:
    """Mean of ``group_diversity`` over the groups (``non_tensor_batch["uid"]``) of a batch.

    With ``max_groups`` set, that many groups spread evenly over the batch's group order are measured
    (the cost is quadratic in group size). Groups of a single response are skipped; NaN if none is left.
    """
    uids = batch.non_tensor_batch["uid"]
    token_lists = response_token_lists(batch)
    rows_by_uid: dict[str, list[int]] = {}
    for row, uid in enumerate(uids):
        rows_by_uid.setdefault(uid, []).append(row)
    groups = [rows for rows in rows_by_uid.values() if len(rows) > 1]
    if max_groups is not None and len(groups) > max_groups:
        picked = torch.linspace(0, len(groups) - 1, max_groups).round().long().tolist()
        groups = [groups[index] for index in picked]
    values = [group_diversity([token_lists[row] for row in rows], n) for rows in groups]
    return float(np.mean(values)) if values else float("nan")
