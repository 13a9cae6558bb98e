"""One exception type for bad user input.

Anything the user can fix (a bad flag, a malformed table, an invalid grid file) raises
``UserError``. The command line turns it into ``initmem: error: ...`` and exit status 2;
every other exception is an internal fault (exit status 1).
"""


class UserError(Exception):
    """Bad input that the user can fix; the message is one line that says what to fix."""


class OptionError(UserError):
    """A bad value of a named option (an analysis option, say).

    The library's message names the option (``delta must be a positive number``); the command line
    names its flag instead (``--delta must be ...``) through :meth:`for_flag`, so library code never
    spells a flag. ``template`` holds ``{option}`` where the name goes.
    """

    def __init__(self, option: str, template: str):
        self.option, self.template = option, template
        super().__init__(template.replace("{option}", option))

    def for_flag(self, flag: str) -> str:
        return self.template.replace("{option}", flag)
