"""``python -m nexmark``: the same CLI as the ``nexmark`` command."""

from nexmark.cli import app

app()
