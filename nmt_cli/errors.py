"""The one exception type for problems with what the user gave us."""


class UserError(Exception):
    """A problem with the user's input (files, options, run directories): shown as one line."""
