"""The old name of `tito.workspace` (and of the text helpers now in `tito.output`), kept only for `tito.testing`,
which is being rewritten elsewhere: it goes when testing.py imports from the new names."""
from tito.output import ANSI, last_line, one_line  # noqa: F401
from tito.workspace import Module, TitoError, Workspace, tool_env  # noqa: F401
