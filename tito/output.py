"""What tito prints, and how: one console for results (stdout), one for messages (stderr).

Every command prints through these functions. Text is printed as it is: a `[` in a file path or a student id is
never read as rich markup. Without a terminal (a pipe, a file, a test) rich assumes 80 columns; a table that
needs more is printed as one block of lines per row instead, so nothing is cut.
"""
from __future__ import annotations

import re
from typing import Sequence, Union

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # terminal colours in tool output
LINE_WIDTH = 160  # characters of a one-line summary in a table cell
WIDE = 100  # columns a table needs to stay readable when its cells wrap

Cell = Union[str, tuple]  # a cell's text, or (text, style), e.g. ("failed", "red")

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def _text(cell: Cell) -> Text:
    "A cell as rich Text, never parsed as markup."
    return Text(*cell) if isinstance(cell, tuple) else Text(cell)


def say(message: str, style: str = ""):
    "A line of the result, on stdout."
    out.print(_text((message, style)), soft_wrap=True)


def note(message: str, style: str = "dim"):
    "A line about the run rather than its result (progress, waiting), on stderr."
    err.print(_text((message, style)), soft_wrap=True)


def warn(message: str):
    err.print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)


def error(message: str):
    "A one-line error (never wrapped)."
    err.print(Text.assemble(("error: ", "bold red"), (message, "red")), soft_wrap=True)


def rule(title: str, style: str = "rule.line"):
    "A horizontal line with a title, to start a section."
    out.rule(Text(title), style=style, align="left")


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], title: str = "", *, right: Sequence[int] = (),
          wide: int = WIDE):
    """Rows under headers: a table when the console is at least `wide` columns or the table fits in it unwrapped;
    else one block per row, its first cell on a line, then each other cell as `header: value`, wrapped.
    `right`: the columns whose cells are right-aligned (numbers)."""
    grid = Table(*headers, title=_text(title) if title else None, title_justify="left")
    for i, column in enumerate(grid.columns):
        column.overflow = "fold"
        column.justify = "right" if i in right else "left"
    for row in rows:
        grid.add_row(*map(_text, row))
    if out.width >= wide or out.measure(grid, options=out.options.update_width(1_000_000)).maximum <= out.width:
        out.print(grid)
        return
    if title:
        say(title)
    for row in rows:
        out.print(Padding(_text(row[0]), (0, 0, 0, 2), expand=False), overflow="fold")
        for header, cell in zip(headers[1:], row[1:]):
            value = _text(cell)
            if value.plain:
                line = Text.assemble((f"{' '.join(header.split())}: ", "dim"), value)
                out.print(Padding(line, (0, 0, 0, 6), expand=False), overflow="fold")


def progress(*columns):
    "A rich progress bar on the results console (`with progress(...) as bar:`)."
    from rich.progress import Progress

    return Progress(*columns, console=out, transient=False)


def one_line(text: str) -> str:
    "The first non-empty line of `text`, without terminal colours, shortened to fit a table cell."
    line = next((s.strip() for s in ANSI.sub("", text or "").splitlines() if s.strip()), "")
    return line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH - 1] + "…"


def last_line(text: str) -> str:
    "The last non-empty line of `text` (where tools put their final error), shortened."
    return one_line("\n".join(reversed((text or "").splitlines())))
