"""A worker routing a batch to itself (``owned_rows``) takes exactly the rows the coordinator's routing
(``key_groups`` + ``split_rows``) would give it, and the event-time progress one thread sees at them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.runtime.routing import key_groups, owned_rows, owners, rows_by_owner, split_rows

int64s = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), key_count=st.integers(1, 3), workers=st.integers(1, 8), rows=st.integers(0, 300))
def test_each_worker_takes_the_rows_of_its_key_groups_with_their_progress(data, key_count, workers, rows):
    keys = [np.array(data.draw(st.lists(int64s, min_size=rows, max_size=rows)), dtype=np.int64)
            for _ in range(key_count)]
    keys[0].flags.writeable = False  # columns from Arrow are read-only: a tuple of mixed array types
    times = np.array(data.draw(st.lists(st.integers(-1000, 1000), min_size=rows, max_size=rows)), dtype=np.int64)
    valid = np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=np.bool_)
    start = data.draw(st.integers(-2000, 2000))
    owner = owners(workers)
    expected = split_rows(key_groups(keys), owner, workers) if rows else [np.zeros(0, np.int64)] * workers
    running = np.maximum.accumulate(np.concatenate([[start], np.where(valid, times, start)]))[1:]
    taken = np.zeros(rows, np.int64)
    for worker in range(workers):
        progress = np.full(rows, 7, np.int64)
        buffer = np.empty(rows, np.int64)
        count, end = owned_rows(tuple(keys), owner, worker, times, valid, start, progress, buffer)
        mine = buffer[:count]
        assert end == (running[-1] if rows else start)  # the batch's progress at its end, for every worker
        assert np.array_equal(mine, expected[worker])
        assert np.array_equal(progress[mine], running[mine])
        taken[mine] += 1
    assert (taken == 1).all()  # every row goes to exactly one worker
    # one thread routing for every owner at once: the same rows, grouped by owner, and the same progress
    progress, owners_of, grouped = np.full(rows, 7, np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64)
    counts, end = rows_by_owner(tuple(keys), owner, workers, times, valid, start, progress, owners_of, grouped)
    assert end == (running[-1] if rows else start)
    assert [len(e) for e in expected] == counts.tolist()
    assert np.array_equal(grouped, np.concatenate(expected))
    assert np.array_equal(progress, running)


def test_without_event_times_no_progress_is_written():
    keys = (np.arange(100, dtype=np.int64),)
    buffer = np.empty(100, np.int64)
    none = np.zeros(0, np.int64)
    found = [owned_rows(keys, owners(2), w, none, np.zeros(0, np.bool_), 5, none, buffer) for w in range(2)]
    assert sum(count for count, _ in found) == 100 and min(count for count, _ in found) > 0
    assert [end for _, end in found] == [5, 5]  # no event time moves the progress
    counts, end = rows_by_owner(keys, owners(2), 2, none, np.zeros(0, np.bool_), 5, none, np.empty(100, np.int64),
                                buffer)
    assert counts.tolist() == [count for count, _ in found] and end == 5
