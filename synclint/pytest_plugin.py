"""pytest plugin: prove a test body never synchronises the host with the device.

* ``@pytest.mark.no_sync`` runs the test body inside :func:`synclint.no_sync`
  (``@pytest.mark.no_sync(device="cpu")`` forces the simulated detector);
* the ``sync_watch`` fixture yields a :class:`synclint.runtime.Watch` that
  collects the syncs of the test: ``assert not sync_watch.events``.

Registered through the ``pytest11`` entry point, so importing it must stay
cheap: torch loads only when a marked test or the fixture runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from synclint.runtime.api import Watch


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "no_sync(device='auto'): fail the test at the first host-device sync in its body "
        "(synclint.no_sync)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    marker = item.get_closest_marker("no_sync")
    if marker is None:
        yield
        return
    from synclint.runtime.api import no_sync

    with no_sync(*marker.args, **marker.kwargs):
        yield


@pytest.fixture
def sync_watch() -> Iterator[Watch]:
    """The syncs the test performs, in order (``sync_watch.events``)."""
    from synclint.runtime.api import watch

    with watch() as collected:
        yield collected
