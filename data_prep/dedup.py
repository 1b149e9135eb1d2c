"""Duplicate detection: exact (normalised statement) and near-duplicate (MinHash over word n-grams, LSH).

MinHash (Broder 1997): for a set S of shingles and random hash functions h_i, P[min h_i(S) = min h_i(T)] is the
Jaccard similarity |S n T| / |S u T|, so the fraction of equal signature slots estimates it. LSH banding
(Leskovec et al., *Mining of Massive Datasets* 3.4) splits the signature into b bands of r rows; two sets
become candidates when any band is identical, which happens with probability 1 - (1 - J^r)^b; candidates are
then confirmed by the estimated Jaccard. Shingles are hashed with CRC-32 so that the decisions, and so the
output, are the same in every run. Both work on ``data_prep.statements.statement_words`` (prompt wrappers, HTML,
markdown, case and spacing removed).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field

import numpy as np

_MERSENNE_PRIME = (1 << 31) - 1


def exact_key(words: list[str]) -> bytes:
    """Key of the normalised statement: equal keys are exact duplicates after normalisation."""
    return hashlib.blake2b(" ".join(words).encode("utf-8"), digest_size=16).digest()


def shingles(words: list[str], size: int) -> set[str]:
    """Word n-grams of the given size (the whole text when it is shorter)."""
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[start : start + size]) for start in range(len(words) - size + 1)}


@dataclass
class MinHasher:
    """Signatures of ``num_perm`` universal hashes ``(a * x + b) mod p`` over CRC-32 shingle hashes."""

    num_perm: int = 64
    shingle_words: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        self._a = rng.integers(1, _MERSENNE_PRIME, size=(self.num_perm, 1), dtype=np.uint64)
        self._b = rng.integers(0, _MERSENNE_PRIME, size=(self.num_perm, 1), dtype=np.uint64)

    def signature(self, words: list[str]) -> np.ndarray:
        """Shape (num_perm,), dtype uint64."""
        hashes = np.fromiter(
            (zlib.crc32(shingle.encode("utf-8")) for shingle in shingles(words, self.shingle_words)), dtype=np.uint64
        )
        return ((self._a * hashes[None, :] + self._b) % _MERSENNE_PRIME).min(axis=1)


@dataclass
class NearDuplicateIndex:
    """LSH index of the signatures of kept problems; ``find`` returns the first kept near-duplicate."""

    bands: int = 16
    threshold: float = 0.8
    _buckets: dict[tuple[int, bytes], list[int]] = field(default_factory=dict)
    _signatures: list[np.ndarray] = field(default_factory=list)
    _ids: list[str] = field(default_factory=list)

    def find(self, signature: np.ndarray) -> tuple[str, float] | None:
        """(id, estimated Jaccard) of a kept problem at or above the threshold, else None."""
        best: tuple[str, float] | None = None
        for key in self._band_keys(signature):
            for position in self._buckets.get(key, ()):
                similarity = float(np.mean(self._signatures[position] == signature))
                if similarity >= self.threshold and (best is None or similarity > best[1]):
                    best = (self._ids[position], similarity)
        return best

    def add(self, problem_id: str, signature: np.ndarray) -> None:
        position = len(self._ids)
        self._ids.append(problem_id)
        self._signatures.append(signature)
        for key in self._band_keys(signature):
            self._buckets.setdefault(key, []).append(position)

    def _band_keys(self, signature: np.ndarray) -> list[tuple[int, bytes]]:
        rows = len(signature) // self.bands
        return [(band, signature[band * rows : (band + 1) * rows].tobytes()) for band in range(self.bands)]
