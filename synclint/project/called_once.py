"""Functions that run once per run: every call of each is made where code runs once.

A script's ``main()`` under ``if __name__ == "__main__":``, a notebook's ``show_images``
helper called from a cell, ``evaluate(model)`` called after the training loop: no step
reaches them, and nothing marks them cold by name, so the call graph alone leaves them
unknown. Yet each call runs once. The function's own code outside its loops (setup before
the loop, the summary after it) then runs once per run too, like the module code that
calls it: cold. Its loops keep the context the index gives them (a loop over batches is a
step; any other loop is left as it is), and so do the functions those loops call.

A call site runs once when it is

* in module code outside a loop,
* in such a function's own code outside its loops, to a fixpoint (a comprehension is a
  loop there, whatever it iterates: see :func:`synclint.project.run_once.straight_line_spans`),
* in cold code, or where the summary found it runs rarely (``call.quiet``: an error path,
  a periodic guard, after the loop over batches).

A function is left alone when it may run from a call the index does not see: its name is
passed as a value somewhere (a callback, a decorator that registers it), or it is a
module's ``forward``/``__call__`` (see ``ProjectIndex.runs_unseen``). The call graph
resolves calls as :mod:`synclint.project.hotness` does; a call it cannot resolve is no call
site, so a function is also left alone when such a call may run it
(``ProjectIndex.unresolved_calls``): a plain call of its name (``report(x)`` after
``from utils import *``), or for a method, an attribute call of its name
(``meters["loss"].update(x)``). Nor is one an earlier definition of a twice-defined
name calls (see ``FileSummary.redefined``): the call graph leaves those calls out. A piece
of a project split for its size (:mod:`synclint.project.layout`) does not hold every call:
nothing there runs once by this reasoning.

Blind spots left: a function reached through an attribute call the index cannot resolve
(``U = importlib.import_module("utils"); U.report(x)``), or by a computed name
(``getattr(self, mode + "_pass")(x)``, ``globals()[name](x)``), while the index sees
only calls of it that run once.
"""

from __future__ import annotations

from synclint.project.hotness import UNKNOWN_CONTEXT, Context
from synclint.project.index import FunctionId, ProjectIndex
from synclint.project.run_once import within_spans

MODULE_SITE = "module code outside a loop"


def runs_once(why_called: str) -> str:
    """The cold ``why`` of a function's straight-line code, called only from ``why_called``."""
    return f"runs once: called only from {why_called}"


def functions_called_once(index: ProjectIndex, contexts: dict[FunctionId, Context]) -> dict[FunctionId, str]:
    """Functions of unknown context (with no reason, so not in a class nothing names) all of
    whose project calls run once, each with where it is called from (for its ``why``)."""
    callers = index.callers()
    owners = index.call_owners()
    unresolved = index.unresolved_calls()
    called_apart = _called_from_earlier_definitions(index)
    candidates: list[tuple[FunctionId, list]] = []
    for fid, sites in sorted(callers.items()):
        function = index.function(fid)
        if function is None or not sites or not function.once_spans:
            continue
        if contexts.get(fid, UNKNOWN_CONTEXT) != UNKNOWN_CONTEXT or index.runs_unseen(fid):
            continue
        # A method runs from attribute calls, a function from calls of its plain name.
        if function.name in (unresolved.names if function.cls is None else unresolved.attributes) or fid in called_apart:
            continue
        candidates.append((fid, [call for call, _plain in sites]))
    found: dict[FunctionId, str] = {}
    changed = True
    while changed:
        changed = False
        for fid, sites in candidates:
            if fid in found:
                continue
            where = None
            for call in sites:
                site = _once_site(call, owners[id(call)], contexts, found, index)
                if site is None:
                    break
                where = where or site
            else:
                found[fid] = where or MODULE_SITE
                changed = True
    return found


def _called_from_earlier_definitions(index: ProjectIndex) -> set[FunctionId]:
    """What the earlier definitions of a name defined twice call (``if PT2: def train ...
    else: def train ...``): the call graph holds a name's last definition, so their calls
    are no call sites of it, though either one may be the definition that runs."""
    called = set()
    for key, entry in index.entries.items():
        for function in entry.summary.redefined:
            for call in function.calls:
                callee = index.resolve_call(key, function, call.target)
                if callee is not None:
                    called.add(callee)
    return called


def _once_site(call, owner: FunctionId, contexts, found, index: ProjectIndex) -> str | None:
    """Where ``call`` runs once, in words, or None when it may run more often."""
    if call.quiet is not None:
        return f"where it runs rarely ({call.quiet})"
    context = contexts.get(owner, UNKNOWN_CONTEXT)
    if context.is_cold:
        return f"cold code ({context.why})"
    module = owner[1] == "<module>"
    if not module and owner not in found:
        return None
    function = index.function(owner)
    if function is None or not within_spans(call.line, function.once_spans):
        return None
    return MODULE_SITE if module else f"`{owner[1]}` outside its loops"
