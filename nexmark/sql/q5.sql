-- Hot items: the auctions with the most bids of each 10 s window sliding every 2 s.
-- As Darwin's q5 (nexmark/queries.py), each window's maximum is a tumbling window of the slide
-- over the counts' window ends, joined back on the window end; the reference groups the counts
-- by their window bounds instead, which Darwin's SQL does not take as a window aggregation.
CREATE TABLE nexmark_q5 (
    auction  BIGINT,
    num  BIGINT
) WITH (
    'connector' = 'blackhole'
);

CREATE VIEW AuctionBids AS
SELECT auction, count(*) AS num, window_end AS endtime
FROM TABLE(
        HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
FROM AuctionBids
JOIN (
    SELECT max(num) AS maxn, window_start AS endtime
    FROM TABLE(
            TUMBLE(TABLE AuctionBids, DESCRIPTOR(endtime), INTERVAL '2' SECOND))
    GROUP BY window_start, window_end
) AS MaxBids
ON AuctionBids.endtime = MaxBids.endtime AND AuctionBids.num >= MaxBids.maxn;
