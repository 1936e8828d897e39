-- Average selling price per seller over its last 11 winning bids: a top-1 per auction under an
-- OVER window. As Darwin's q6, ties are broken by the earlier bid (top-1) and by the auction id
-- (OVER), which the reference leaves open; the reference's ROW_NUMBER filter in its own SELECT
-- is written here as the standard nested form.
CREATE TABLE nexmark_q6 (
    seller  BIGINT,
    avg_price  DOUBLE
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.price) OVER
        (PARTITION BY Q.seller ORDER BY Q.`dateTime`, Q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
FROM (
    SELECT id, seller, price, `dateTime`
    FROM (
        SELECT A.id, A.seller, B.price, B.`dateTime`,
            ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
        FROM auction AS A, bid AS B
        WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
    )
    WHERE rownum <= 1
) AS Q;
