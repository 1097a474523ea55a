"""GitHub Actions workflow commands (`::error file=F,line=N,title=T::message`), escaped as the
runner unescapes them (actions/toolkit's command.ts): in the message `%`, CR and LF; in a
property also `:` and `,`, which end a property or the command. Unescaped, a line break in a
label, a reason or a file name starts a workflow command of the input's choosing (a hostile
pull request's `::add-mask::` or `::stop-commands::`), and a `,` or `::` in a file name cuts the
annotation short."""
from __future__ import annotations


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: object) -> str:
    """One workflow command line; properties with a None value are left out, the others kept in
    the order given (file, line, title: the order GitHub documents)."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None)
    return f"::{level}{' ' + props if props else ''}::{escape_data(message)}"
