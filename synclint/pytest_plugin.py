"""pytest plugin: prove a test body never synchronises the host with the device.

* ``@pytest.mark.no_sync`` runs the test body inside :func:`synclint.no_sync`
  (``@pytest.mark.no_sync(device="cpu")`` forces the simulated detector);
* ``@pytest.mark.sync_budget(N)`` fails the test when its body syncs more than
  ``N`` times (:func:`synclint.budget`; ``device=`` as for ``no_sync``);
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
    config.addinivalue_line(
        "markers",
        "sync_budget(max_syncs, device='auto'): fail the test when its body syncs more than "
        "max_syncs times (synclint.budget)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    marker = item.get_closest_marker("no_sync")
    budget_marker = item.get_closest_marker("sync_budget")
    if marker is None and budget_marker is None:
        yield
        return
    from contextlib import ExitStack

    from synclint.runtime.api import budget, no_sync

    with ExitStack() as stack:
        if budget_marker is not None:
            stack.enter_context(budget(*budget_marker.args, **budget_marker.kwargs))
        if marker is not None:
            stack.enter_context(no_sync(*marker.args, **marker.kwargs))
        yield


@pytest.fixture
def sync_watch() -> Iterator[Watch]:
    """The syncs the test performs, in order (``sync_watch.events``)."""
    from synclint.runtime.api import watch

    with watch() as collected:
        yield collected
