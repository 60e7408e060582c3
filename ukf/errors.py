"""Errors raised by the UKF layer. Each names the offending field or value."""

from __future__ import annotations


class UKFError(ValueError):
    """Base class of every UKF error."""


class FrozenFieldError(UKFError, AttributeError):
    """An identity field was assigned after construction; use ``derive()`` or ``clone()``."""


class MalformedTagError(UKFError):
    """A tag is not of the form ``[SLOT:value]``."""


class UnknownTypeError(UKFError):
    """A dictionary names a UKF ``type`` that no template registered."""


class IdMismatchError(UKFError):
    """A serialized entry carries an ``id`` or ``content_hash`` its fields do not produce."""


class UnknownComposerError(UKFError, KeyError):
    """A composer name (or role) is not registered."""


class UnknownTriggerError(UKFError, KeyError):
    """A trigger name is not registered."""
