"""What planning a deployment file refuses, as text."""

import pytest

from darwin import deploy
from darwin.errors import ConfigError


def error_of(path) -> str:
    with pytest.raises(ConfigError) as e:
        deploy.plan(deploy.load(path))
    return str(e.value)
