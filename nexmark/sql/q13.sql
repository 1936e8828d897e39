-- Bids enriched from a bounded side input: a lookup join. The reference looks the table up as of
-- a processing-time column (PROCTIME()); Darwin has event time only, and a static table is the
-- same at every time, so the lookup is as of the bid's time.
CREATE TABLE nexmark_q13 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    `dateTime`  TIMESTAMP(3),
    `value`  VARCHAR
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.`dateTime`,
    S.`value`
FROM bid B
JOIN side_input FOR SYSTEM_TIME AS OF B.`dateTime` AS S
ON mod(B.auction, 10000) = S.`key`;
