"""Problems shipped to workers once, by content hash: the key of a ground truth and the worker-side LRU cache.

A ground truth (often hundreds of tests, sometimes hundreds of MB) is ``ray.put`` once per reward-loop process
and passed by reference; a worker fetches and parses it only when its key is not in its cache, so the G rollouts
of a group do not carry G copies, and the dispatcher never holds the text.
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections.abc import Callable
from typing import Any

from reward_fns.types import GroundTruthError, Problem


def ground_truth_text(ground_truth: str | dict[str, Any]) -> str:
    """The ground truth as text (a dict is serialised with sorted keys, so equal contents give equal text).

    Raises:
        GroundTruthError: a parsed ground truth that is not JSON data (nested too deeply, non-string keys of
            mixed types, objects JSON cannot hold), or text that is not UTF-8 (a lone surrogate).
    """
    try:
        text = ground_truth if isinstance(ground_truth, str) else json.dumps(ground_truth, sort_keys=True)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise GroundTruthError(f"ground truth cannot be written as JSON text ({type(exc).__name__}: {exc})") from exc
    return text


def content_key(text: str) -> str:
    """sha256 of the ground-truth text (UTF-8, ``ground_truth_text``): equal tests share one key on every node."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ProblemCache:
    """Parsed problems by content key, least recently used evicted past ``max_chars`` of ground-truth text."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.hits = 0
        self.misses = 0
        self._entries: collections.OrderedDict[str, tuple[Problem, int]] = collections.OrderedDict()
        self._chars = 0

    def get(self, key: str, load_text: Callable[[], str]) -> Problem:
        """The problem of ``key``; on a miss ``load_text()`` fetches the ground truth, which is parsed and kept.

        Raises:
            GroundTruthError: the fetched ground truth is malformed (nothing is cached).
        """
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return entry[0]
        self.misses += 1
        text = load_text()
        problem = Problem.from_ground_truth(text)
        self._entries[key] = (problem, len(text))
        self._chars += len(text)
        while self._chars > self.max_chars and len(self._entries) > 1:
            _, (_, size) = self._entries.popitem(last=False)
            self._chars -= size
        return problem

    def __len__(self) -> int:
        return len(self._entries)
