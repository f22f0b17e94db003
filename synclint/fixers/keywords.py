"""Edit call arguments while keeping the author's formatting."""

from __future__ import annotations

import libcst as cst


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with keyword ``name=value`` (replacing an existing one, else appended)."""
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new_arg = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    if args:
        last = args[-1]
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if isinstance(last.comma, cst.Comma):
            # A trailing comma (one argument per line): keep that layout.
            new_arg = new_arg.with_changes(comma=last.comma)
            if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
                separator = args[-2].comma
        args[-1] = last.with_changes(comma=separator)
    args.append(new_arg)
    return call.with_changes(args=args)
