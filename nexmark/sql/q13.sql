-- Bids enriched from a bounded side input: a lookup join. Darwin has no processing time: PROCTIME()
-- only says when the lookup happens, and the side input is loaded once, the same at every time.
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
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.`key`;
