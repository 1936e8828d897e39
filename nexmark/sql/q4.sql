-- Average winning price per category: an interval join (bids while the auction was open), the
-- highest bid per auction, then the average per category.
CREATE TABLE nexmark_q4 (
    category  BIGINT,
    avg_final  DOUBLE
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q4
SELECT
    Q.category,
    AVG(Q.final) AS avg_final
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
