"""Fixtures of the adapter tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from tests.unit.adapters.stubs import client


@pytest.fixture
def stubbed() -> Iterator[Callable[[str], tuple[Any, Stubber]]]:
    """Makes (client, its active Stubber) of a service; the stubs are deactivated after."""
    stubs: list[Stubber] = []

    def make(service: str) -> tuple[Any, Stubber]:
        made = client(service)
        stub = Stubber(made)
        stub.activate()
        stubs.append(stub)
        return made, stub

    yield make
    for stub in stubs:
        stub.deactivate()
