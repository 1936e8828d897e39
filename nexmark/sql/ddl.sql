-- The Nexmark streams from Darwin's generator, with the reference schema's column names (the
-- 'nexmark' connector maps them to the generator's), and q13's bounded side input.
-- The events, rate and seed placeholders are filled in by nexmark/sql_queries.py, as the reference
-- runner fills in its own; the watermark delay is the fluent queries' (0 s). The generator gives
-- every new person and auction the next id, so they declare it their primary key (NOT ENFORCED, as
-- Flink has it: trusted, never checked), as the fluent queries' sources do.

CREATE TABLE person (
    id  BIGINT,
    name  VARCHAR,
    emailAddress  VARCHAR,
    creditCard  VARCHAR,
    city  VARCHAR,
    state  VARCHAR,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '0' SECOND,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'nexmark',
    'stream' = 'person',
    'events.num' = '${EVENTS}',
    'first-event.rate' = '${RATE}',
    'seed' = '${SEED}'
);

CREATE TABLE auction (
    id  BIGINT,
    itemName  VARCHAR,
    description  VARCHAR,
    initialBid  BIGINT,
    reserve  BIGINT,
    `dateTime`  TIMESTAMP(3),
    expires  TIMESTAMP(3),
    seller  BIGINT,
    category  BIGINT,
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '0' SECOND,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'nexmark',
    'stream' = 'auction',
    'events.num' = '${EVENTS}',
    'first-event.rate' = '${RATE}',
    'seed' = '${SEED}'
);

CREATE TABLE bid (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '0' SECOND
) WITH (
    'connector' = 'nexmark',
    'stream' = 'bid',
    'events.num' = '${EVENTS}',
    'first-event.rate' = '${RATE}',
    'seed' = '${SEED}'
);

CREATE TABLE side_input (
    `key`  BIGINT,
    `value`  VARCHAR
) WITH (
    'connector' = 'nexmark',
    'stream' = 'side_input'
);
