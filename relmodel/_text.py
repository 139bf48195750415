"""Text files as every reader takes them: UTF-8, with or without a byte-order mark."""

import codecs

# What a log's or a record's field says where it has no value (compared in lower case,
# stripped): Slurm's "Unknown" and "(null)", a dataframe's "nan", a spreadsheet's "n/a".
MISSING_TOKENS = ("", "unknown", "none", "null", "(null)", "nan", "n/a", "na")


class NotUTF8Error(ValueError):
    """Bytes that are not UTF-8 text: `line` (from 1) and `reason` say where and what."""

    def __init__(self, line: int, byte: int):
        self.line = line
        self.reason = f"not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8"
        super().__init__(f"line {line}: {self.reason}")


def decode_utf8(data: bytes) -> str:
    """Return the text of a file's bytes, a leading byte-order mark dropped.

    Parameters
    ----------
    data : bytes
        The file's content.

    Returns
    -------
    str
        The text.

    Raises
    ------
    NotUTF8Error
        If the bytes are not UTF-8, naming the line and the byte.
    """
    if data.startswith(codecs.BOM_UTF8):  # spreadsheets save CSV so; invisible, it would spoil the header
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise NotUTF8Error(data.count(b"\n", 0, err.start) + 1, data[err.start]) from None


def utf8_bytes(data: bytes) -> bytes:
    """Return `data` less a leading byte-order mark, checked as `decode_utf8` checks it (raising its
    `NotUTF8Error`): the bytes of its text, which is made only where they are not ASCII."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if not data.isascii():
        decode_utf8(data)
    return data
