"""Compiled per-event work of the Nexmark generator.

Every event draws from its own random stream, seeded by (seed, event id), so any
range of events can be generated alone and the output does not depend on batch
sizes. Strings are written straight into Arrow-style byte buffers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
HOT_RATIO_BATCH = 100  # hot auctions/bidders/sellers are the first of the last 100 ids
ID_LEAD = 10  # yet-to-be-created ids a random choice may pick
MIN_STRING_LENGTH = 3
LN_1E6 = 13.815510557964274  # ln(10 ** 6): prices are log-uniform over [1, 10 ** 6] dollars

Int = int | np.int64  # what the kernels take and give: Numba types both as int64, mypy tells them apart

# configuration array slots (see GeneratorConfig.as_array)
(C_SEED, C_PERSON, C_AUCTION, C_TOTAL, C_HOT_AUCTION, C_HOT_SELLER, C_HOT_BIDDER, C_ACTIVE_PEOPLE,
 C_IN_FLIGHT, C_BASE_TIME, C_DELAY_NS, C_AVG_PERSON, C_AVG_AUCTION, C_AVG_BID) = range(14)


@njit(inline="always", cache=True)
def _mix(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", cache=True)
def _next(state: np.ndarray) -> np.uint64:
    state[0] += GOLDEN
    return _mix(state[0])


@njit(inline="always", cache=True)
def next_int(state: np.ndarray, n: Int) -> Int:
    """Uniform in [0, n) for n < 2**32, by multiply-shift instead of a division."""
    return np.int64(((_next(state) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always", cache=True)
def next_double(state: np.ndarray) -> float:
    return np.float64(_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(inline="always", cache=True)
def event_key(seed: Int, event_id: Int) -> np.uint64:
    return _mix(np.uint64(seed) * GOLDEN ^ np.uint64(event_id))


@njit(inline="always", cache=True)
def draw_int(key: np.uint64, i: int, n: Int) -> Int:
    """Draw ``i`` of an event, uniform in [0, n): counter-based, so no state to carry."""
    r = _mix(key + np.uint64(i + 1) * GOLDEN)
    return np.int64(((r >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always", cache=True)
def draw_double(key: np.uint64, i: int) -> float:
    return np.float64(_mix(key + np.uint64(i + 1) * GOLDEN) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(inline="always", cache=True)
def seed_event(state: np.ndarray, seed: Int, event_id: Int) -> None:
    state[0] = _mix(np.uint64(seed) * GOLDEN ^ np.uint64(event_id))


@njit(inline="always", cache=True)
def timestamp(cfg: np.ndarray, event_id: Int) -> Int:
    return cfg[C_BASE_TIME] + (event_id * cfg[C_DELAY_NS]) // 1_000_000


@njit(inline="always", cache=True)
def last_person(cfg: np.ndarray, event_id: Int) -> Int:
    """The last person id (base 0) created at or before this event."""
    epoch, offset = event_id // cfg[C_TOTAL], event_id % cfg[C_TOTAL]
    if offset >= cfg[C_PERSON]:
        offset = cfg[C_PERSON] - 1
    return epoch * cfg[C_PERSON] + offset


@njit(inline="always", cache=True)
def last_auction(cfg: np.ndarray, event_id: Int) -> Int:
    """The last auction id (base 0) created at or before this event."""
    epoch, offset = event_id // cfg[C_TOTAL], event_id % cfg[C_TOTAL]
    if offset < cfg[C_PERSON]:
        epoch -= 1
        offset = cfg[C_AUCTION] - 1
    elif offset >= cfg[C_PERSON] + cfg[C_AUCTION]:
        offset = cfg[C_AUCTION] - 1
    else:
        offset -= cfg[C_PERSON]
    return epoch * cfg[C_AUCTION] + offset


@njit(inline="always", cache=True)
def random_person(cfg: np.ndarray, state: np.ndarray, event_id: Int) -> Int:
    """An active person, or one of the next few to be created (base 0)."""
    people = last_person(cfg, event_id) + 1
    active = min(people, cfg[C_ACTIVE_PEOPLE])
    return people - active + next_int(state, active + ID_LEAD)


@njit(inline="always", cache=True)
def random_auction(cfg: np.ndarray, state: np.ndarray, event_id: Int) -> Int:
    """An auction likely still in flight, or one of the next few (base 0)."""
    last = last_auction(cfg, event_id)
    low = max(last - cfg[C_IN_FLIGHT], 0)
    return low + next_int(state, last - low + 1 + ID_LEAD)


@njit(inline="always", cache=True)
def price(state: np.ndarray) -> Int:
    return np.int64(np.round(np.exp(next_double(state) * LN_1E6) * 100.0))  # 10 ** (6u) * 100


@njit(inline="always", cache=True)
def put_exact(state: np.ndarray, buf: np.ndarray, pos: Int, length: Int) -> Int:
    """``length`` random letters, 13 from each 64-bit draw (26**13 < 2**63)."""
    left = 0
    rnd = np.uint64(0)
    for _ in range(length):
        if left == 0:
            rnd = _next(state) >> np.uint64(1)
            left = 13
        buf[pos] = 97 + np.int64(rnd % np.uint64(26))
        rnd //= np.uint64(26)
        left -= 1
        pos += 1
    return pos


@njit(inline="always", cache=True)
def put_words(state: np.ndarray, buf: np.ndarray, pos: Int, max_length: Int) -> Int:
    """Letters with about one space in 13, trimmed: the reference's nextString."""
    length = MIN_STRING_LENGTH + next_int(state, max_length - MIN_STRING_LENGTH)
    start = pos
    for _ in range(length):
        c = 32 if next_int(state, 13) == 0 else 97 + next_int(state, 26)
        if c == 32 and pos == start:
            continue  # leading space: trimmed
        buf[pos] = c
        pos += 1
    while pos > start and buf[pos - 1] == 32:
        pos -= 1
    return pos


@njit(inline="always", cache=True)
def put_extra(state: np.ndarray, pool: np.ndarray, buf: np.ndarray, pos: Int, current: Int,
              average: Int) -> Int:
    """Padding so that a record's size is ``average`` bytes on average: random letters copied from
    a random offset of a seeded pool (a copy per record instead of a draw per letter)."""
    if current > average:
        return pos
    want = average - current
    delta = np.int64(np.round(want * 0.2))
    size = want - delta + (next_int(state, 2 * delta) if delta > 0 else 0)
    start = next_int(state, pool.shape[0] - size)
    buf[pos:pos + size] = pool[start:start + size]
    return pos + size


def extra_bound(current: int, average: int) -> int:
    want = max(average - current, 0)
    return want + int(round(want * 0.2)) + 1


# the bid columns ``bids`` can skip (``wanted``); the time is always drawn
BID_AUCTION, BID_BIDDER, BID_PRICE, BID_CHANNEL = 1, 2, 4, 8


@njit(nogil=True, cache=True)
def bids(cfg: np.ndarray, pool: np.ndarray, ids: np.ndarray, auction: np.ndarray, bidder: np.ndarray,
         price_: np.ndarray, channel: np.ndarray, date_time: np.ndarray, extra_buf: np.ndarray,
         extra_off: np.ndarray, hot_channels: Int, cold_channels: Int, with_extra: bool,
         wanted: Int) -> None:
    """Bids of event ``ids``; only the columns whose ``BID_*`` bit is in ``wanted`` (and the time) are
    drawn: draws are counter-based, so skipping a column changes no other value."""
    pos = 0
    want = max(cfg[C_AVG_BID] - 32, 0)  # padding after 4 int64 fields
    delta = np.int64(np.round(want * 0.2))
    span = pool.shape[0] - want - delta
    for j in range(ids.shape[0]):
        eid = ids[j]
        key = event_key(cfg[C_SEED], eid)
        # a bid comes after its epoch's people and auctions: one division gives both last ids
        epoch = eid // cfg[C_TOTAL]
        last_a = epoch * cfg[C_AUCTION] + cfg[C_AUCTION] - 1
        last_p = epoch * cfg[C_PERSON] + cfg[C_PERSON] - 1
        if wanted & BID_AUCTION:
            if draw_int(key, 0, cfg[C_HOT_AUCTION]) > 0:
                a = (last_a // HOT_RATIO_BATCH) * HOT_RATIO_BATCH
            else:
                low = max(last_a - cfg[C_IN_FLIGHT], 0)
                a = low + draw_int(key, 1, last_a - low + 1 + ID_LEAD)
            auction[j] = a + FIRST_AUCTION_ID
        if wanted & BID_BIDDER:
            if draw_int(key, 2, cfg[C_HOT_BIDDER]) > 0:
                b = (last_p // HOT_RATIO_BATCH) * HOT_RATIO_BATCH + 1
            else:
                people = last_p + 1
                active = min(people, cfg[C_ACTIVE_PEOPLE])
                b = people - active + draw_int(key, 3, active + ID_LEAD)
            bidder[j] = b + FIRST_PERSON_ID
        if wanted & BID_PRICE:
            price_[j] = np.int64(np.round(np.exp(draw_double(key, 4) * LN_1E6) * 100.0))
        if wanted & BID_CHANNEL:
            if draw_int(key, 5, 2) > 0:
                channel[j] = draw_int(key, 6, hot_channels)
            else:
                channel[j] = hot_channels + draw_int(key, 6, cold_channels)
        date_time[j] = timestamp(cfg, eid)
        extra_off[j] = pos
        if with_extra:  # draws are counter-based: skipping the padding changes no other value
            size = want - delta + (draw_int(key, 7, 2 * delta) if delta > 0 else 0)
            start = draw_int(key, 8, span)
            for c in range(size):
                extra_buf[pos + c] = pool[start + c]
            pos += size
    extra_off[ids.shape[0]] = pos


@njit(nogil=True, cache=True)
def auctions(cfg: np.ndarray, pool: np.ndarray, ids: np.ndarray, id_: np.ndarray, initial_bid: np.ndarray,
             reserve: np.ndarray,
             date_time: np.ndarray, expires: np.ndarray, seller: np.ndarray, category: np.ndarray,
             name_buf: np.ndarray, name_off: np.ndarray, desc_buf: np.ndarray, desc_off: np.ndarray,
             extra_buf: np.ndarray, extra_off: np.ndarray, with_text: bool) -> None:
    state = np.zeros(1, dtype=np.uint64)
    npos: Int = 0
    dpos: Int = 0
    epos: Int = 0
    in_flight_events = (cfg[C_IN_FLIGHT] * cfg[C_TOTAL]) // cfg[C_AUCTION]
    for j in range(ids.shape[0]):
        eid = ids[j]
        seed_event(state, cfg[C_SEED], eid)
        id_[j] = last_auction(cfg, eid) + FIRST_AUCTION_ID
        if next_int(state, cfg[C_HOT_SELLER]) > 0:
            s = (last_person(cfg, eid) // HOT_RATIO_BATCH) * HOT_RATIO_BATCH
        else:
            s = random_person(cfg, state, eid)
        seller[j] = s + FIRST_PERSON_ID
        category[j] = FIRST_CATEGORY_ID + next_int(state, NUM_CATEGORIES)
        initial_bid[j] = price(state)
        ts = timestamp(cfg, eid)
        date_time[j] = ts
        horizon = timestamp(cfg, eid + in_flight_events) - ts
        expires[j] = ts + 1 + next_int(state, max(horizon * 2, 1))
        reserve[j] = initial_bid[j] + price(state)
        name_off[j], desc_off[j], extra_off[j] = npos, dpos, epos
        if with_text:  # text is drawn last: skipping it changes no other value
            npos = put_words(state, name_buf, npos, 20)
            dpos = put_words(state, desc_buf, dpos, 100)
            current = 8 + (npos - name_off[j]) + (dpos - desc_off[j]) + 40
            epos = put_extra(state, pool, extra_buf, epos, current, cfg[C_AVG_AUCTION])
    n = ids.shape[0]
    name_off[n], desc_off[n], extra_off[n] = npos, dpos, epos


@njit(nogil=True, cache=True)
def people(cfg: np.ndarray, pool: np.ndarray, ids: np.ndarray, id_: np.ndarray, name: np.ndarray, city: np.ndarray,
           state_: np.ndarray, date_time: np.ndarray, email_buf: np.ndarray, email_off: np.ndarray,
           card_buf: np.ndarray, card_off: np.ndarray, extra_buf: np.ndarray, extra_off: np.ndarray,
           n_first: Int, n_last: Int, n_cities: Int, n_states: Int, with_text: bool) -> None:
    state = np.zeros(1, dtype=np.uint64)
    mpos: Int = 0
    cpos: Int = 0
    epos: Int = 0
    for j in range(ids.shape[0]):
        eid = ids[j]
        seed_event(state, cfg[C_SEED], eid)
        id_[j] = last_person(cfg, eid) + FIRST_PERSON_ID
        name[j] = next_int(state, n_first) * n_last + next_int(state, n_last)
        city[j] = next_int(state, n_cities)
        state_[j] = next_int(state, n_states)
        date_time[j] = timestamp(cfg, eid)
        email_off[j], card_off[j], extra_off[j] = mpos, cpos, epos
        if not with_text:  # text is drawn last: skipping it changes no other value
            continue
        mpos = put_words(state, email_buf, mpos, 7)
        email_buf[mpos] = 64  # '@'
        mpos = put_words(state, email_buf, mpos + 1, 5)
        for c in (46, 99, 111, 109):  # ".com"
            email_buf[mpos] = c
            mpos += 1
        for g in range(4):
            if g > 0:
                card_buf[cpos] = 32
                cpos += 1
            v = next_int(state, 10_000)
            for d in (1000, 100, 10, 1):
                card_buf[cpos] = 48 + (v // d) % 10
                cpos += 1
        epos = put_extra(state, pool, extra_buf, epos, 8 + 13 + (mpos - email_off[j]) + 19 + 10 + 2, cfg[C_AVG_PERSON])
    n = ids.shape[0]
    email_off[n], card_off[n], extra_off[n] = mpos, cpos, epos
