-- Bids with their day and minute, the partitions of the reference's file sink. Written to a
-- blackhole here, as `nexmark run` times it; a 'filesystem' table with PARTITIONED BY (dt, hm)
-- writes Hive-style directories.
CREATE TABLE nexmark_q10 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR,
    dt  STRING,
    hm  STRING
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;
