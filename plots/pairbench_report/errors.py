"""The one error the report raises on bad input: printed as one line, exit status 2."""


class BadInput(Exception):
    """Bad input or usage; the message names the file and the field."""
