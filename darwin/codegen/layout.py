"""Slots of the ``ctl`` array through which kernels and the runtime share scalars."""

MAX_TIME = 0  # largest event time seen at the source (the watermark is this minus the delay)
LATE_ROWS = 1
NULL_TIME_ROWS = 2
OUT_ROWS = 3  # rows written to the output buffers in this call
LATE_OUT_ROWS = 4
MIN_WINDOW_END = 5  # smallest end of a window held in state: nothing fires before it
EMPTY_SLOT = -(2**63)  # a window-ring slot holding no window (also "no watermark yet")

STATUS = 6  # why a kernel returned early (below)
FUTURE_ROWS = 7  # rows beyond the source's max_future: they did not move MAX_TIME
INPUT_WATERMARK = 8  # a pipeline not reading a source: its input's watermark before this batch
FORMAT_SITE = 9  # NEEDS_STRING: which strftime format (its index in the kernel's params) ...
FORMAT_KEY = 10  # ... lacks the string of this time unit
ROOM_PER_ROW = 11  # entries one input row may add to a hash table: its windows times a lookup join's fan-out
ROW_BASE = 12  # a keyed-parallel kernel: the serial number of the batch's first row (first-seen order)
FIRED_THROUGH = 13  # panes: every window ending at or before this watermark has fired
PAIR_RIGHT = 14  # NEEDS_PAIR: FORMAT_SITE is the concatenation's table, FORMAT_KEY and this the two codes
SCOUT = 15  # set by the runtime: the kernel only records the strings its tables lack (below), doing nothing else
MISSES = 16  # ... how many (table, key, key) triples it recorded in ``ptm`` (a format's table as -1 - its number)
SIZE = 17  # new slots go last: a checkpoint's shorter ctl restores as a prefix

OK = 0
NEEDS_ROOM = 1  # the hash table is full: grow it
RING_FULL = 2  # a ring slot still holds a closed window: drain it
OUT_OF_DOMAIN = 3  # a key outside the range the source's statistics promised
NEEDS_STRING = 4  # a timestamp formatted into a string the kernel has no code for: format it
NEEDS_PAIR = 6  # two strings concatenated that the kernel has no code for: join and intern them
CAST_FAILED = 7  # a string CAST does not parse: FORMAT_SITE is its lookup table, FORMAT_KEY the string's code
STRINGS_MISSED = 8  # a scouting kernel's record of strings its tables lack (``ptm``) is full
WINDOW_TIME_BEYOND = 9  # a window's time beyond the supported event times: FORMAT_SITE is the window's place
#                         in ``Pipeline.checked_times``, FORMAT_KEY the time
WINDOWS_DUE = 5  # panes: a row late for some of its windows, which the watermark closed but have not fired
