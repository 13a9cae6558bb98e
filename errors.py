"""One exception type for bad user input.

Anything the user can fix (a bad flag, a malformed table, an invalid grid file) raises
``UserError``. The command line turns it into ``initmem: error: ...`` and exit status 2;
every other exception is an internal fault (exit status 1).
"""


class UserError(Exception):
    """Bad input that the user can fix; the message is one line that says what to fix."""
