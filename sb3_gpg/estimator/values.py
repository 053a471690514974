"""
The numbers among the settings. A number written in a YAML file as ``1e-3`` (an exponent without a dot) reaches Python
as the text ``"1e-3"``, which is how most non-numbers arrive: the error says so.
"""

import numbers
from typing import Any


def check_real(name: str, value: Any) -> None:
    """
    :param name: the setting, as the error names it (``"ent_coef"``, ``"baseline_kwargs['ridge']"``)
    :param value: its value
    :raises ValueError: where the value is not a real number (a bool is not), saying how text that reads as a number
        got there
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} must be a number.{_text_number_hint(value)}")


def _text_number_hint(value: Any) -> str:
    """
    :param value: a setting's value that is not a number
    :return: for text that reads as a number, how it came to be text and what to write; else nothing
    """
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    if "e" in value.lower():
        return (
            " It is text: YAML reads a number with an exponent but no dot (1e-3) as a string. Write it with a dot "
            "(1.0e-3) or without the exponent (0.001), or pass a number."
        )
    return " It is text: pass the number without quotes."
