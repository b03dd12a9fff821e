"""Learner 1's greedy merges compiled with numba: the same merges as the Python loop, over millions of words.

:func:`workers.engine.tokenization.greedy_merges` merges the most frequent adjacent pair of pieces
again and again, ties to the pair whose texts come first, and after each merge re-counts every
pair of every word that held the pair. On the official 9.7 MB that took about 23 CPU seconds for
30,000 entries over 45,000 distinct words; on text whose distinct words grow as real PubMed's do
(Heaps' law, :mod:`bench.heaps_corpus`) the word table holds 430,000 words at 100 MB and millions
at a gigabyte, and the loop took 218 s at 100 MB, most of it Python bookkeeping per word.

This is the same algorithm over flat arrays, the usual way fast BPE trainers do it:

* every word is a doubly linked list of piece ids over one array of positions; each pair keeps a
  list of the positions where it was ever made, checked when read (a merge elsewhere may have
  changed them), so a merge touches only the places it changes, not whole words;
* a merge at one place takes the word's count off the pair before it, the pair itself and the
  pair after it, and adds it to the two new pairs; a pair of two equal pieces (``a a a``) is
  merged word by word, left to right, exactly as the Python loop does (``aa a``, not ``a aa``);
* the pairs live in a binary heap ordered by count, then by the first piece's text, then the
  second's (code point by code point, as Python compares ``str``), with stale entries skipped
  when popped, so each step picks the same pair as the Python loop's heap of ``(-count, pair)``;
* pieces are identified by their text (two different pairs that make the same text make the
  same piece), through a hash table of the texts.

So the sequence of merges, hence the vocabulary and the saved ``tokenizer.json``, is byte-identical
to the Python loop's (``tests/test_engine_vocabulary.py`` compares the two on real and on
adversarial corpora). The arrays cost about 16 bytes per character of the distinct words and the
pair lists 8 bytes per place a pair was ever made (int32: a word table of up to 2^29 characters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numba
import numpy as np
from numba import types
from numba.typed import Dict

_PAIR_SHIFT = np.int64(1) << np.int64(31)


@numba.njit(cache=True, inline="always")
def _compare_text(x: int, y: int, chars: np.ndarray, start: np.ndarray, length: np.ndarray) -> int:
    """-1, 0 or 1 as piece ``x``'s text sorts before, equal to or after piece ``y``'s, by code point."""
    sx, sy, lx, ly = start[x], start[y], length[x], length[y]
    for k in range(min(lx, ly)):
        cx, cy = chars[sx + k], chars[sy + k]
        if cx != cy:
            return -1 if cx < cy else 1
    if lx == ly:
        return 0
    return -1 if lx < ly else 1


@numba.njit(cache=True, inline="always")
def _before(c1, k1, c2, k2, first, second, chars, start, length) -> bool:
    """Whether heap entry (count c1, pair k1) pops before (c2, k2): higher count, then the pair's texts."""
    if c1 != c2:
        return c1 > c2
    if k1 == k2:
        return False
    a1, a2 = first[k1], first[k2]
    if a1 != a2:
        return _compare_text(a1, a2, chars, start, length) < 0
    return _compare_text(second[k1], second[k2], chars, start, length) < 0


@numba.njit(cache=True)
def _sift_down(heap_count, heap_pair, size, i, first, second, chars, start, length) -> None:
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and _before(
            heap_count[right], heap_pair[right], heap_count[left], heap_pair[left], first, second, chars, start, length
        ):
            best = right
        if not _before(
            heap_count[best], heap_pair[best], heap_count[i], heap_pair[i], first, second, chars, start, length
        ):
            return
        heap_count[i], heap_count[best] = heap_count[best], heap_count[i]
        heap_pair[i], heap_pair[best] = heap_pair[best], heap_pair[i]
        i = best


@numba.njit(cache=True)
def _sift_up(heap_count, heap_pair, i, first, second, chars, start, length) -> None:
    while i > 0:
        parent = (i - 1) // 2
        if not _before(
            heap_count[i], heap_pair[i], heap_count[parent], heap_pair[parent], first, second, chars, start, length
        ):
            return
        heap_count[i], heap_count[parent] = heap_count[parent], heap_count[i]
        heap_pair[i], heap_pair[parent] = heap_pair[parent], heap_pair[i]
        i = parent


@numba.njit(cache=True)
def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    if needed <= len(array):
        return array
    out = np.empty(max(needed, 2 * len(array)), dtype=array.dtype)
    out[: len(array)] = array
    return out


@numba.njit(cache=True)
def _text_hash(chars: np.ndarray, start: int, length: int) -> int:
    h = np.int64(1469598103934665603)
    for k in range(length):
        h = (h ^ np.int64(chars[start + k])) * np.int64(1099511628211)
    return h


@numba.njit(cache=True)
def _same_text(chars, piece_start, piece_length, piece, start, length) -> bool:
    if piece_length[piece] != length:
        return False
    s = piece_start[piece]
    for k in range(length):  # noqa: SIM110 (a loop numba compiles, not a generator)
        if chars[s + k] != chars[start + k]:
            return False
    return True


@numba.njit(cache=True)
def _text_table(chars: np.ndarray, piece_start: np.ndarray, piece_length: np.ndarray, pieces: int):
    """Hash of each piece's text to its id (the next free hash on a collision), so equal texts are one piece."""
    text_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    for piece in range(pieces):
        h = _text_hash(chars, piece_start[piece], piece_length[piece])
        while h in text_ids:
            h += 1
        text_ids[h] = piece
    return text_ids


@numba.njit(cache=True)
def _grown_pairs(table, capacity: int):
    """The pair arrays ``(first, second, count, head, stamp)`` at ``capacity``: new pairs have no node, no stamp."""
    first, second, count, head, stamp = table
    first, second, count = _grown(first, capacity), _grown(second, capacity), _grown(count, capacity)
    old = len(head)
    head, stamp = _grown(head, capacity), _grown(stamp, capacity)
    head[old:] = -1
    stamp[old:] = 0
    return first, second, count, head, stamp


@numba.njit(cache=True, inline="always")
def _pair_id(pair_ids, first, second, count, head, pairs: int, left: int, right: int):
    """The id of pair (left, right), a new one with count 0 if it was never made, and the pairs now.

    The caller has made room for one more pair (:func:`_room`): no array is reassigned.
    """
    key = np.int64(left) * _PAIR_SHIFT + np.int64(right)
    if key in pair_ids:
        return pair_ids[key], pairs
    pair_ids[key] = pairs
    first[pairs], second[pairs], count[pairs], head[pairs] = left, right, 0, -1
    return pairs, pairs + 1


@numba.njit(cache=True)
def _initial_pairs(sym: np.ndarray, nxt: np.ndarray, word_of: np.ndarray, word_count: np.ndarray):
    """Every adjacent pair of the words with its count, and each pair's list of the positions where it is.

    Returns ``(pair_ids, pairs, capacity, table, nodes, node_count)``: ``table`` holds the pair
    arrays ``(first, second, count, head, stamp)``, ``nodes`` the node arrays ``(position, next)``.
    """
    pair_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    capacity = 1024
    first = np.empty(capacity, dtype=np.int64)
    second = np.empty(capacity, dtype=np.int64)
    count = np.zeros(capacity, dtype=np.int64)
    head = np.full(capacity, -1, dtype=np.int64)  # the pair's last node (-1: none)
    stamp = np.zeros(capacity, dtype=np.int64)  # the last step that changed the pair
    pairs = 0
    node_pos = np.empty(len(sym) + 16, dtype=np.int32)  # a position where the pair was made
    node_next = np.empty(len(sym) + 16, dtype=np.int32)  # the pair's previous node (-1: none)
    node_count = 0
    for p in range(len(sym)):
        q = nxt[p]
        if q < 0:
            continue
        if pairs == capacity:  # room for one more pair
            capacity *= 2
            first, second, count, head, stamp = _grown_pairs((first, second, count, head, stamp), capacity)
        key = np.int64(sym[p]) * _PAIR_SHIFT + np.int64(sym[q])
        if key in pair_ids:
            k = pair_ids[key]
        else:
            k = pairs
            pair_ids[key] = k
            pairs += 1
            first[k], second[k], count[k], head[k] = sym[p], sym[q], 0, -1
        count[k] += word_count[word_of[p]]
        node_pos[node_count], node_next[node_count] = p, head[k]
        head[k] = node_count
        node_count += 1
    return pair_ids, pairs, capacity, (first, second, count, head, stamp), (node_pos, node_next), node_count


@numba.njit(cache=True)
def _heap_of(count, pairs, capacity, first, second, chars, start, length):
    """A heap of ``capacity`` entries holding every pair with a positive count, and its size."""
    heap_count = np.empty(capacity, dtype=np.int64)
    heap_pair = np.empty(capacity, dtype=np.int64)
    size = 0
    for k in range(pairs):
        if count[k] > 0:
            heap_count[size], heap_pair[size] = count[k], k
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap_count, heap_pair, size, i, first, second, chars, start, length)
    return heap_count, heap_pair, size


@numba.njit(cache=True)
def _merged_piece(a, b, continuation, chars, piece_start, piece_length, pieces, used, text_ids):
    """The piece of a + b's text (a new one, written after the last piece's text, unless it is known).

    Returns ``(merged, chars, piece_start, piece_length, pieces, used)``: the arrays may have grown.
    """
    skip = 0
    if continuation and piece_length[b] >= 2 and chars[piece_start[b]] == 35 and chars[piece_start[b] + 1] == 35:
        skip = 2
    la, lb = piece_length[a], piece_length[b] - skip
    chars = _grown(chars, used + la + lb)
    chars[used : used + la] = chars[piece_start[a] : piece_start[a] + la]
    chars[used + la : used + la + lb] = chars[piece_start[b] + skip : piece_start[b] + skip + lb]
    h = _text_hash(chars, used, la + lb)
    while h in text_ids:
        candidate = text_ids[h]
        if _same_text(chars, piece_start, piece_length, candidate, used, la + lb):
            return candidate, chars, piece_start, piece_length, pieces, used
        h += 1
    m = pieces
    piece_start, piece_length = _grown(piece_start, pieces + 1), _grown(piece_length, pieces + 1)
    piece_start[m], piece_length[m] = used, la + lb
    text_ids[h] = m
    return m, chars, piece_start, piece_length, pieces + 1, used + la + lb


@numba.njit(cache=True, inline="always")
def _mark_changed(j: int, steps: int, stamp: np.ndarray, changed: np.ndarray, changed_count: int) -> int:
    """Note pair ``j`` as changed in this step, once (the caller made room); returns the list's length."""
    if stamp[j] != steps:
        stamp[j] = steps
        changed[changed_count] = j
        changed_count += 1
    return changed_count


@numba.njit(cache=True, inline="always")
def _merge_at(
    p, q, a, b, m, steps, sym, nxt, prv, word_of, word_count, pair_ids, first, second, count, head, stamp, nodes, counts
):
    """One merge at positions p, q: the word's count leaves the pairs around it and joins the new ones.

    ``nodes`` is ``(node_pos, node_next, changed)``: the arrays have room for two more pairs and
    nodes and five more changed pairs. ``counts`` is ``(pairs, nodes, changed)``; returns the
    position after q and the new counts.
    """
    node_pos, node_next, changed = nodes
    pairs, node_count, changed_count = counts
    weight = word_count[word_of[p]]
    x, y = prv[p], nxt[q]
    for side in range(3):
        if side == 0:
            if x < 0:
                continue
            key = np.int64(sym[x]) * _PAIR_SHIFT + np.int64(a)
        elif side == 1:
            key = np.int64(a) * _PAIR_SHIFT + np.int64(b)
        else:
            if y < 0:
                continue
            key = np.int64(b) * _PAIR_SHIFT + np.int64(sym[y])
        j = pair_ids[key]
        count[j] -= weight
        changed_count = _mark_changed(j, steps, stamp, changed, changed_count)
    sym[p], sym[q] = m, -1
    nxt[p] = y
    if y >= 0:
        prv[y] = p
    for side in range(2):
        if side == 0:
            if x < 0:
                continue
            left, right, at = np.int64(sym[x]), np.int64(m), x
        else:
            if y < 0:
                continue
            left, right, at = np.int64(m), np.int64(sym[y]), p
        j, pairs = _pair_id(pair_ids, first, second, count, head, pairs, left, right)
        count[j] += weight
        node_pos[node_count], node_next[node_count] = at, head[j]
        head[j] = node_count
        node_count += 1
        changed_count = _mark_changed(j, steps, stamp, changed, changed_count)
    return y, (pairs, node_count, changed_count)


@numba.njit(cache=True)
def _room(pairs, capacity, table, node_pos, node_next, changed, nodes, changes):
    """Room for ``pairs`` pairs, ``nodes`` nodes and ``changes`` changed pairs: the arrays, grown where short.

    Called only when one is short, so that the hot loop of the merges reassigns no array.
    """
    if pairs > capacity:
        capacity *= 2
        table = _grown_pairs(table, capacity)
    node_pos, node_next = _grown(node_pos, nodes), _grown(node_next, nodes)
    return capacity, table, node_pos, node_next, _grown(changed, changes)


@numba.njit(cache=True)
def _merge_pair(k, a, b, m, steps, links, word_of, word_start, word_count, word_stamp, state):
    """Merge every live place of pair ``k`` (a, b) into ``m``; equal pieces word by word, left to right.

    A pair's nodes are every place it was ever made, so each is checked first (a merge elsewhere may
    have changed it). ``state`` is ``(pair_ids, pairs, capacity, table, (node_pos, node_next),
    nodes, changed, changed_count)``, returned with whatever grew: the arrays grow here, before each
    merge, so that :func:`_merge_at` (the hot loop) never reassigns one.
    """
    sym, nxt, prv = links
    pair_ids, pairs, capacity, table, (node_pos, node_next), node_count, changed, changed_count = state
    first, second, count, head, stamp = table
    node = head[k]
    head[k] = -1
    while node >= 0:
        p = node_pos[node]
        node = node_next[node]
        if sym[p] != a:
            continue
        q = nxt[p]
        if q < 0 or sym[q] != b:
            continue
        if a == b:
            w = word_of[p]
            if word_stamp[w] == steps:
                continue
            word_stamp[w] = steps
            p = word_start[w]  # the word's first occurrence of the pair, left to right
            while not (sym[p] == a and nxt[p] >= 0 and sym[nxt[p]] == b):
                p = nxt[p]
            q = nxt[p]
        while True:
            if pairs + 2 > capacity or node_count + 2 > len(node_pos) or changed_count + 5 > len(changed):
                table = (first, second, count, head, stamp)
                capacity, table, node_pos, node_next, changed = _room(
                    pairs + 2, capacity, table, node_pos, node_next, changed, node_count + 2, changed_count + 5
                )
                first, second, count, head, stamp = table
            y, (pairs, node_count, changed_count) = _merge_at(
                p, q, a, b, m, steps, sym, nxt, prv, word_of, word_count, pair_ids,
                first, second, count, head, stamp, (node_pos, node_next, changed), (pairs, node_count, changed_count),
            )  # fmt: skip
            if a != b:
                break
            # equal pieces: go on along the word, left to right, from the piece after the merge
            p = y
            found = False
            while p >= 0:
                q = nxt[p]
                if q >= 0 and sym[p] == a and sym[q] == b:
                    found = True
                    break
                p = q
            if not found:
                break
    table = (first, second, count, head, stamp)
    return pair_ids, pairs, capacity, table, (node_pos, node_next), node_count, changed, changed_count


@numba.njit(cache=True)
def _push_changed(changed, changed_count, table, pairs, heap, chars, start, length):
    """Push each changed pair still alive with its new count; a full heap is rebuilt from the live pairs.

    ``heap`` is ``(heap_count, heap_pair, size)``, returned as it is after the pushes.
    """
    first, second, count = table[0], table[1], table[2]
    heap_count, heap_pair, size = heap
    for i in range(changed_count):
        j = changed[i]
        if count[j] <= 0:
            continue
        if size == len(heap_count):
            # rebuild from the live pairs (drops the stale entries), larger if still half full
            live = 0
            for t in range(pairs):
                if count[t] > 0:
                    live += 1
            new_capacity = max(len(heap_count), 4 * live)
            heap_count, heap_pair, size = _heap_of(count, pairs, new_capacity, first, second, chars, start, length)
            continue  # every live pair, this one included, is in the heap now
        heap_count[size], heap_pair[size] = count[j], j
        size += 1
        _sift_up(heap_count, heap_pair, size - 1, first, second, chars, start, length)
    return heap_count, heap_pair, size


@numba.njit(cache=True)
def learn_merges(
    sym: np.ndarray,
    nxt: np.ndarray,
    prv: np.ndarray,
    word_of: np.ndarray,
    word_start: np.ndarray,
    word_count: np.ndarray,
    chars: np.ndarray,
    piece_start: np.ndarray,
    piece_length: np.ndarray,
    known: int,
    continuation: int,
    need: int,
):
    """Merge until ``need`` pieces beyond the first ``known`` exist, or no pair is left.

    ``sym``/``nxt``/``prv``/``word_of`` describe every position of every word (``-1``: none),
    ``word_start`` each word's first position, ``word_count`` its count; pieces ``0..known-1``
    are given by their code points (``chars`` from ``piece_start``, ``piece_length``). With
    ``continuation`` 2 a right-hand piece's leading ``##`` is dropped in the merge (WordPiece);
    with 0 the texts are joined as they are (BPE). Returns each step's (first, second, merged)
    piece ids and the piece table, new pieces included.
    """
    pieces = known
    used = piece_start[pieces - 1] + piece_length[pieces - 1] if pieces else 0
    text_ids = _text_table(chars, piece_start, piece_length, pieces)
    pair_ids, pairs, capacity, table, nodes, node_count = _initial_pairs(sym, nxt, word_of, word_count)
    first, second, count = table[0], table[1], table[2]
    heap_capacity = max(1024, 2 * pairs)
    heap = _heap_of(count, pairs, heap_capacity, first, second, chars, piece_start, piece_length)
    out = np.empty((max(need, 16), 3), dtype=np.int64)
    steps = 0
    made = 0
    changed = np.empty(1024, dtype=np.int64)
    word_stamp = np.zeros(len(word_start), dtype=np.int64)
    while made < need and heap[2] > 0:
        heap_count, heap_pair, size = heap
        c, k = heap_count[0], heap_pair[0]
        size -= 1
        heap_count[0], heap_pair[0] = heap_count[size], heap_pair[size]
        _sift_down(heap_count, heap_pair, size, 0, first, second, chars, piece_start, piece_length)
        heap = heap_count, heap_pair, size
        if count[k] != c or c == 0:
            continue  # a stale entry: the pair's count changed after it was pushed
        a, b = first[k], second[k]
        m, chars, piece_start, piece_length, grown, used = _merged_piece(
            a, b, continuation, chars, piece_start, piece_length, pieces, used, text_ids
        )
        made += grown - pieces
        pieces = grown
        if steps >= len(out):
            bigger = np.empty((2 * len(out), 3), dtype=np.int64)
            bigger[:steps] = out[:steps]
            out = bigger
        out[steps, 0], out[steps, 1], out[steps, 2] = a, b, m
        steps += 1
        state = (pair_ids, pairs, capacity, table, nodes, node_count, changed, 0)
        state = _merge_pair(k, a, b, m, steps, (sym, nxt, prv), word_of, word_start, word_count, word_stamp, state)
        _, pairs, capacity, table, nodes, node_count, changed, changed_count = state
        first, second, count = table[0], table[1], table[2]
        heap = _push_changed(changed, changed_count, table, pairs, heap, chars, piece_start, piece_length)
    return out[:steps], chars, piece_start[:pieces], piece_length[:pieces]


def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All texts' code points in one array, and each text's length in code points."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    joined = "".join(texts).encode("utf-32-le")
    return np.frombuffer(joined, dtype=np.uint32).astype(np.int32), lengths


def greedy_merges(
    words: Mapping[str, int], known: Sequence[str], need: int, *, continuation: str = ""
) -> list[tuple[tuple[str, str], str]]:
    """The merges of :func:`workers.engine.tokenization.greedy_merges`, in order, until ``need`` new pieces.

    ``words`` are the word counts; a word is spelled as its first character, then each further
    character with ``continuation`` in front (``"##"`` for WordPiece, ``""`` for BPE).
    ``known`` is the vocabulary before any merge (it must hold every such spelling piece): a merge
    whose text is in it, or was made before, adds nothing, as in the callers' loops. Returns
    ``((first, second), merged)`` for every merge up to the one that makes the ``need``-th new
    piece (fewer if the pairs run out).
    """
    if continuation not in ("", "##"):
        raise ValueError(f"continuation must be '' or '##', not {continuation!r}")
    spelled = [word for word in words if word]
    if need <= 0 or not spelled:
        return []
    known = list(dict.fromkeys(known))
    points, lengths = _code_points(spelled)
    if len(points) >= 2**29:  # positions, and the pair lists' nodes (at most about three per position), in int32
        raise ValueError(f"the words hold {len(points)} characters, more than these arrays index")
    piece_points, piece_length = _code_points(known)
    piece_start = np.concatenate([[0], np.cumsum(piece_length)[:-1]]).astype(np.int64)
    ids = {text: i for i, text in enumerate(known)}
    word_start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    initial = np.zeros(len(points), dtype=bool)
    initial[word_start] = True
    # one key per (character, word-initial or not): its piece id through the known table
    keys = points.astype(np.int64) * 2 + (~initial if continuation else np.zeros_like(initial))
    unique, inverse = np.unique(keys, return_inverse=True)
    lookup = np.empty(len(unique), dtype=np.int32)
    for i, key in enumerate(unique.tolist()):
        text = (continuation if key & 1 else "") + chr(key >> 1)
        if text not in ids:
            raise ValueError(f"the piece {text!r} of the words is not in the known vocabulary")
        lookup[i] = ids[text]
    sym = lookup[inverse.reshape(-1)]
    total = len(points)
    nxt = np.arange(1, total + 1, dtype=np.int32)
    nxt[word_start + lengths - 1] = -1
    prv = np.arange(-1, total - 1, dtype=np.int32)
    prv[word_start] = -1
    word_of = np.repeat(np.arange(len(spelled), dtype=np.int32), lengths)
    word_count = np.fromiter((words[word] for word in spelled), dtype=np.int64, count=len(spelled))
    steps, chars, starts, piece_lengths = learn_merges(
        sym,
        nxt,
        prv,
        word_of,
        word_start,
        word_count,
        piece_points,
        piece_start,
        piece_length,
        len(known),
        len(continuation),
        need,
    )
    texts = list(known)
    for piece in range(len(known), len(starts)):
        start, length = int(starts[piece]), int(piece_lengths[piece])
        texts.append(chars[start : start + length].astype("<u4").tobytes().decode("utf-32-le"))
    return [((texts[a], texts[b]), texts[m]) for a, b, m in steps.tolist()]


def reference_merges(
    words: Mapping[str, int], known: Sequence[str], need: int, *, continuation: str = ""
) -> list[tuple[tuple[str, str], str]]:
    """:func:`greedy_merges` by the Python loop it replaces (:func:`workers.engine.tokenization.greedy_merges`)."""
    from workers.engine.tokenization import greedy_merges as python_greedy_merges

    if need <= 0:
        return []
    spelled = {word: [word[0], *(continuation + ch for ch in word[1:])] for word in words if word}
    seen, out, made = set(known), [], 0
    for pair, merged in python_greedy_merges(words, spelled, lambda a, b: a + b.removeprefix(continuation or "\0")):
        out.append((pair, merged))
        if merged not in seen:
            seen.add(merged)
            made += 1
            if made >= need:
                break
    return out
