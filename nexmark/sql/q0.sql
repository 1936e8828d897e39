-- Pass-through: every bid. (Darwin's q0 also passes channel and url on.)
CREATE TABLE nexmark_q0 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q0
SELECT auction, bidder, price, channel, url, `dateTime`, extra FROM bid;
