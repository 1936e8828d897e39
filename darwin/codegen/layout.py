"""Slots of the ``ctl`` array through which kernels and the runtime share scalars."""

MAX_TIME = 0  # largest event time seen at the source (the watermark is this minus the delay)
LATE_ROWS = 1
NULL_TIME_ROWS = 2
OUT_ROWS = 3  # rows written to the output buffers in this call
LATE_OUT_ROWS = 4
MIN_WINDOW_END = 5  # smallest end of a window held in state: nothing fires before it
SIZE = 6
