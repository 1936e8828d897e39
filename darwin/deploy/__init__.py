"""Deployments: a YAML file describing a whole job (sources, query, sink, engine settings).

``darwin validate job.yaml`` checks it, ``darwin explain job.yaml`` prints its plans and
``darwin run job.yaml`` runs it; in Python, ``run(load("job.yaml"))``. This is an API-level
layer: it builds on darwin.api, darwin.sql and darwin.io; nothing below imports it.
"""

from darwin.deploy.jobs import Planned, clear_output, explain, plan, run, run_config
from darwin.deploy.spec import Deployment, QuerySpec, SinkSpec, SourceSpec, load

__all__ = ["Deployment", "Planned", "QuerySpec", "SinkSpec", "SourceSpec", "clear_output", "explain", "load",
           "plan", "run", "run_config"]
