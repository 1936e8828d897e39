-- Bids per bidder in 10 s tumbling windows. The reference windows by processing time
-- (PROCTIME()); Darwin has event time only, and its q12 windows by the bids' event time, with the
-- window's bounds first.
CREATE TABLE nexmark_q12 (
    window_start  TIMESTAMP(3),
    window_end  TIMESTAMP(3),
    bidder  BIGINT,
    bid_count  BIGINT
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q12
SELECT
    window_start,
    window_end,
    bidder,
    count(*) as bid_count
FROM TABLE(
        TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
