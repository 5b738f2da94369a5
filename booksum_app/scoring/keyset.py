"""A set of 64-bit integer keys held as one sorted numpy array: 8 bytes a key.

The n-gram indexes of a book (its 3-grams for % novel, its 8-grams for the copying detector)
have one key per distinct n-gram, half a million for War and Peace. As Python sets they took
54 MB (ints) and 46 MB (strings) per book, held by every book ``compare`` has in progress; as
sorted arrays, 4.7 and 3.5 MB. Lookups are by bisection (``numpy.searchsorted``), a few
thousand per summary. numpy is imported on first use, not when the CLI starts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any


class KeySet:
    """Distinct 64-bit integer keys, sorted in a numpy int64 array (:attr:`keys`)."""

    __slots__ = ("keys",)

    def __init__(self, keys: Iterable[int] | Any = ()) -> None:
        import numpy as np

        array = keys if isinstance(keys, np.ndarray) else np.fromiter(keys, dtype=np.int64)
        array = np.sort(array.astype(np.int64, copy=False))
        keep = np.ones(len(array), dtype=bool)  # np.unique took 30x this sort on 583K keys
        np.not_equal(array[1:], array[:-1], out=keep[1:])
        self.keys = array[keep]

    def __len__(self) -> int:
        return len(self.keys)

    def __eq__(self, other: object) -> bool:
        import numpy as np

        return isinstance(other, KeySet) and bool(np.array_equal(self.keys, other.keys))

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as its array: a worker process builds it
        return (KeySet, (self.keys,))

    def found(self, keys: Sequence[int]) -> list[bool]:
        """For each of ``keys``, whether the set holds it."""
        import numpy as np

        wanted = np.fromiter(keys, dtype=np.int64, count=len(keys))
        if not len(self.keys):
            return [False] * len(wanted)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        return (self.keys[at] == wanted).tolist()  # type: ignore[no-any-return]

    def union(self, other: KeySet) -> KeySet:
        """The keys of both."""
        import numpy as np

        return KeySet(np.concatenate([self.keys, other.keys]))


def text_key(text: str) -> int:
    """A 64-bit key of ``text`` that is the same in every process (Python's ``hash`` of a string
    is not): the first 8 bytes of its BLAKE2b digest. Two texts share one with odds of 2**-64."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)
