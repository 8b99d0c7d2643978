"""Whether a process is ready, for ``/readyz``: the components it registered and each one's state."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

from .metrics import COMPONENT_READY

Check = Callable[[], "bool | str | None"]


@dataclass
class _Component:
    ready: bool
    reason: str
    check: Check | None = None


class Readiness:
    """Components of a process and whether each is ready, for ``/readyz``.

    ``register("bus")`` (not ready, "starting"), then ``set_ready("bus")`` or
    ``set_not_ready("bus", "reconnecting")``; setting an unregistered name registers it. A component
    may instead be registered with a ``check``: called at each ``/readyz``, it returns True or None
    (ready), or False or a reason (not ready); a check that raises is not ready, the error its reason.
    The process is ready when at least one component is registered and all are ready.

    ``export``: mirror each component in ``avalon_component_ready{component}`` (the module's
    ``readiness`` does; instances made for tests do not, so they leave the process's series alone).
    """

    def __init__(self, *, export: bool = False) -> None:
        self._components: dict[str, _Component] = {}
        self._export = export
        self._details: dict[str, Callable[[], object]] = {}

    def _gauge(self, name: str, ready: bool) -> None:
        if self._export:
            COMPONENT_READY.labels(component=name).set(1 if ready else 0)

    def register(self, name: str, *, ready: bool = False, reason: str = "starting",
                 check: Check | None = None) -> None:
        self._components[name] = _Component(ready, "" if ready else reason, check)
        self._gauge(name, ready)

    def set_ready(self, name: str) -> None:
        self.set(name, True)

    def set_not_ready(self, name: str, reason: str) -> None:
        self.set(name, False, reason)

    def set(self, name: str, ready: bool, reason: str = "") -> None:
        component = self._components.get(name)
        if component is None:
            self.register(name, ready=ready, reason=reason or "not ready")
            return
        component.ready, component.reason = ready, "" if ready else (reason or "not ready")
        self._gauge(name, ready)

    def unregister(self, name: str) -> None:
        if self._components.pop(name, None) is not None and self._export:
            with contextlib.suppress(KeyError):
                COMPONENT_READY.remove(name)

    def clear(self) -> None:
        for name in list(self._components):
            self.unregister(name)
        self._details.clear()

    def detail(self, name: str, describe: Callable[[], object] | None) -> None:
        """What ``/readyz`` also says of a part of the process (JSON-able), whether ready or not, e.g. the
        command partitions an engine serves; None: no longer."""
        if describe is None:
            self._details.pop(name, None)
        else:
            self._details[name] = describe

    def details(self) -> dict[str, object]:
        out = {}
        for name, describe in self._details.items():
            try:
                out[name] = describe()
            except Exception as error:  # noqa: BLE001 - said instead
                out[name] = f"{type(error).__name__}: {error}"[:200]
        return out

    @property
    def names(self) -> list[str]:
        return list(self._components)

    def evaluate(self) -> dict[str, tuple[bool, str]]:
        """Every component: (ready, why not); checks are run now."""
        out = {}
        for name, component in self._components.items():
            ready, reason = component.ready, component.reason
            if component.check is not None:
                ready, reason = _run_check(component.check)
                self._gauge(name, ready)
            out[name] = (ready, reason)
        return out

    def status(self) -> dict[str, str]:
        """Every component: "ready", or why it is not."""
        return {name: "ready" if ready else reason for name, (ready, reason) in self.evaluate().items()}

    def not_ready(self) -> dict[str, str]:
        """The components that are not ready, with their reasons."""
        return {name: reason for name, (ready, reason) in self.evaluate().items() if not ready}

    def is_ready(self) -> bool:
        return bool(self._components) and not self.not_ready()


def _run_check(check: Check) -> tuple[bool, str]:
    try:
        result = check()
    except Exception as error:  # noqa: BLE001 - the error is the reason
        return False, f"{type(error).__name__}: {error}"[:200]
    if result is None or result is True:
        return True, ""
    if result is False:
        return False, "not ready"
    return False, str(result)


#: The process's readiness: services register their components here.
readiness = Readiness(export=True)
