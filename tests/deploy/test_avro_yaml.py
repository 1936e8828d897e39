"""Kafka sources and sinks in Avro, declared in YAML: the schema as a mapping, the wire format checked."""

import pytest

from darwin import deploy
from darwin.errors import ConfigError

JOB = """\
sources:
  bids:
    type: kafka
    topic: bids
    bootstrap_servers: 127.0.0.1:9
    format: avro
    avro_wire: {wire}
    avro_schema_id: 7
    avro_schema:
      type: record
      name: Bid
      fields:
        - {{name: auction, type: long}}
        - {{name: price, type: long}}
        - {{name: channel, type: [null, string]}}
query:
  sql: SELECT auction, price FROM bids WHERE price > 10
sinks:
  out:
    type: kafka
    topic: expensive
    bootstrap_servers: 127.0.0.1:9
    format: avro
    avro_schema: '{{"type": "record", "name": "Out", "fields": [{{"name": "auction", "type": "long"}},
                   {{"name": "price", "type": "long"}}]}}'
"""


def test_an_avro_kafka_job_plans_with_the_records_fields(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(wire="confluent"))
    planned = deploy.plan(deploy.load(job))  # builds source, query and sink; connects to nothing
    assert planned.table.columns == ["auction", "price"]
    source = deploy.load(job).sources[0]
    assert source.options["avro_wire"] == "confluent" and source.options["avro_schema"]["name"] == "Bid"


def test_a_bad_avro_wire_names_its_key_and_line(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(wire="magic"))
    with pytest.raises(ConfigError, match=r"job.yaml:7: key 'sources.bids.avro_wire': expected one of"):
        deploy.load(job)
