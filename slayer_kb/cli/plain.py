"""The options that store their value as given (a title, a description, a topic key, a project, a
session id): a bare ``-`` there is refused, since ``-`` reads standard input only for the text and
``--query``, and was stored as "-"."""

from __future__ import annotations

from ..core.errors import UsageError

# The options that store their value as it is given, each with what it names and an example: a
# "-" there is no standard input (the text's and --query's), and was stored as "-".
_PLAIN_VALUES = {
    "title": ("a title", "the title", '"Auth decision"'),
    "description": ("a description", "the description", '"JWT over sessions"'),
    "topic-key": ("a topic key", "the topic key", "architecture/auth-model"),
    "project": ("a project", "the project", "api"),
    "session": ("a session id", "the session id", "ses-42"),
}


def no_stdin_for(**values: str | None) -> None:
    """Refuses ``-`` as the value of a plain option (``_PLAIN_VALUES``; ``topic_key`` for
    --topic-key), naming the first given."""
    for key, value in values.items():
        if value == "-":
            option = key.replace("_", "-")
            what, itself, example = _PLAIN_VALUES[option]
            raise UsageError(f"--{option} is '-', which reads standard input for the text and --query but not for "
                             f"{what}: give {itself} itself (--{option} {example}).")
