"""The contamination scan's two inner loops, compiled with numba: word ids and window keys.

The numpy formulation of both (columns of a word hash, then shifted arrays for every window
length) reads each byte and each word id a dozen times over: it reached about 10 MB per
CPU-second, and a second process gave nothing more on a 2-core machine, where the passes are
bound by memory, not arithmetic (issue 31 asks for 20 MB/s). These loops read each byte once
and keep a word's or a window's running hash in a register, and they release the GIL, so the
scan's threads run them side by side without copying the corpus into other processes.

They compute exactly what the numpy formulation did, in the same modular arithmetic; the
tests compare the two on real text (``tests/test_pretrain_contamination.py``). Every integer is
kept ``uint64``: numba, like numpy, turns a mix of signed and unsigned 64-bit operands into a
float, which would silently drop the hash's low bits.
"""

from __future__ import annotations

import numba
import numpy as np

_MIX_SHIFT = np.uint64(33)
_MIX_FIRST = np.uint64(0xFF51AFD7ED558CCD)
_MIX_SECOND = np.uint64(0xC4CEB9FE1A85EC53)


@numba.njit(cache=True, nogil=True, inline="always")
def _mix(key: np.uint64) -> np.uint64:
    """MurmurHash3's 64-bit finaliser: the same bijection as :func:`contamination._mix`, on one key."""
    key ^= key >> _MIX_SHIFT
    key *= _MIX_FIRST
    key ^= key >> _MIX_SHIFT
    key *= _MIX_SECOND
    key ^= key >> _MIX_SHIFT
    return key


@numba.njit(cache=True, nogil=True)
def ascii_word_ids(
    codes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    lower: np.ndarray,
    base: np.uint64,
    longest: int,
    bucket_shift: np.uint64,
    buckets: np.ndarray,
    keys: np.ndarray,
    lengths: np.ndarray,
    word_ids: np.ndarray,
) -> np.ndarray:
    """The test-word id of each ASCII word ``codes[starts[i]:ends[i]]`` (0 for any other word).

    A word's key is the polynomial of its lower-cased bytes in ``base``, mixed; it is a test
    word's when the sorted ``keys`` (indexed by their top bits in ``buckets``) hold the same key
    for a word of the same length.
    """
    ids = np.zeros(len(starts), dtype=np.int32)
    for index in range(len(starts)):
        start, end = starts[index], ends[index]
        if end - start > longest:
            continue
        key = np.uint64(0)
        for at in range(start, end):
            key = key * base + np.uint64(lower[codes[at]])
        key = _mix(key)
        bucket = key >> bucket_shift
        for probe in range(buckets[bucket], buckets[bucket + np.uint64(1)]):
            if keys[probe] == key and lengths[probe] == end - start:
                ids[index] = word_ids[probe]
                break
    return ids


@numba.njit(cache=True, nogil=True)
def window_candidates(
    ids: np.ndarray,
    hashes: np.ndarray,
    wanted_lengths: np.ndarray,
    base: np.uint64,
    check_base: np.uint64,
    bit_filter: np.ndarray,
    filter_shift: np.uint64,
    firsts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The two keys of every window of ``ids`` whose length is wanted and whose first key is in ``firsts``.

    A window is a run of nonzero ids (0 is a word no test text holds, or the break between
    documents); its keys are the polynomials of its words' hashes in ``base`` and in
    ``check_base``, grown one word at a time from each start, so every length costs one
    multiply-add. The bit filter on the first key's top bits spares most binary searches.
    """
    longest = len(wanted_lengths) - 1
    size = len(ids)
    found_first = np.empty(64, dtype=np.uint64)
    found_second = np.empty(64, dtype=np.uint64)
    found = 0
    for start in range(size):
        first = np.uint64(0)
        second = np.uint64(0)
        for length in range(1, min(longest, size - start) + 1):
            word = ids[start + length - 1]
            if word == 0:
                break
            value = hashes[word]
            first = first * base + value
            second = second * check_base + value
            if not wanted_lengths[length] or not bit_filter[first >> filter_shift]:
                continue
            at = np.searchsorted(firsts, first)
            if at < len(firsts) and firsts[at] == first:
                if found == len(found_first):
                    found_first = np.concatenate((found_first, np.empty(found, dtype=np.uint64)))
                    found_second = np.concatenate((found_second, np.empty(found, dtype=np.uint64)))
                found_first[found] = first
                found_second[found] = second
                found += 1
    return found_first[:found], found_second[:found]
