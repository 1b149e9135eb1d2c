"""Which responses were truncated, which end in a repetition, and the seeded U(0,1) draws of MicroCoder eq. 2."""

import hashlib
from collections import defaultdict

import numpy as np
import torch

from verl_ext.advantage_inputs import AdvantageInputs


def response_lengths(response_mask: torch.Tensor, inputs: AdvantageInputs | None) -> torch.Tensor:
    """(bs,) |o_i|: the trainer-provided lengths if any, else the number of valid tokens of `response_mask`."""
    if inputs is not None and inputs.response_lengths is not None:
        return inputs.response_lengths.to(device=response_mask.device, dtype=torch.long)
    return response_mask.sum(dim=-1).to(torch.long)


def truncated_mask(lengths: torch.Tensor, max_response_length: int) -> torch.Tensor:
    """(bs,) bool: |o_i| >= L_max, the response hit the length limit without finishing."""
    return lengths >= int(max_response_length)


def ends_in_repetition(
    responses: torch.Tensor, lengths: torch.Tensor, window: int, rows: torch.Tensor, any_period: bool = True
) -> torch.Tensor:
    """(bs,) bool repeat(o_i, m): the response ends in a loop (MicroCoder section 2.2).

    ``any_period=False`` is the paper's rule as written: the last m tokens equal the m tokens before them (a loop whose
    period divides m). ``any_period=True`` (default) sees any loop of period p <= m: o_t = o_{t-p} for each of the
    last m positions t (needs |o_i| >= m + p); p = m is the paper's rule, so every response it calls a repetition is
    one here too. Only `rows` (bool, bs) are tested, on the CPU in one transfer.
    """
    repeated = torch.zeros(rows.shape[0], dtype=torch.bool)
    tested = torch.nonzero(rows.cpu()).flatten()
    if window <= 0 or tested.numel() == 0:
        return repeated.to(rows.device)
    tested_responses = responses[tested.to(responses.device)].cpu()
    tested_lengths = lengths.cpu()[tested].tolist()
    periods = torch.arange(1, window + 1) if any_period else torch.tensor([window])
    for position, (row, length) in enumerate(zip(tested.tolist(), tested_lengths, strict=True)):
        usable = periods[periods <= length - window]
        if usable.numel() == 0:
            continue
        tokens = tested_responses[position, :length]
        tail_positions = torch.arange(length - window, length)
        tail = tokens[tail_positions]
        shifted = tokens[tail_positions.unsqueeze(0) - usable.unsqueeze(1)]  # (periods, m): o_{t-p}
        repeated[row] = bool((shifted == tail).all(dim=1).any())
    return repeated.to(rows.device)


def uniform_draws(index: np.ndarray, seed: int) -> torch.Tensor:
    """(bs,) float64 U_i in [0, 1): the top 53 bits of blake2b-64("{seed}:{uid}:{k}") / 2^53, k = rank in its group.

    Stateless: the same batch always gets the same draws, whichever process computes them.
    """
    seen: dict[str, int] = defaultdict(int)
    draws = []
    for uid in np.asarray(index, dtype=object).astype(str).tolist():
        rank = seen[uid]
        seen[uid] += 1
        digest = hashlib.blake2b(f"{seed}:{uid}:{rank}".encode(), digest_size=8).digest()
        draws.append((int.from_bytes(digest, "big") >> 11) / 2.0**53)
    return torch.tensor(draws, dtype=torch.float64)
