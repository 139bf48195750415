"""Delimited text read a block of lines at a time, column by column: the
vectorised path of the job-log and trace readers.

A reader takes a file's lines from `blocks` and hands each block to `parse`:
NumPy finds the line ends, separators and quotes in the bytes, and pandas' C
reader splits the fields (as strings, only the columns asked for), so a
reader holds one block's strings at a time, never the file's. A line that this
path cannot vouch for (a field too many or too few, quoting that Python's csv
module might read otherwise, a carriage return that ends no line, a NUL)
raises `Doubt`: the reader then takes the whole file line by line, and its
per-line path says what is wrong, and on which line.
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import numpy as np

BLOCK_BYTES = 1 << 24  # 16 MiB of whole lines at a time
_LONGEST_LINE = 4 * BLOCK_BYTES  # a "line" longer than this is no log's: the per-line reader judges it
_SPACE = b" \t\n\v\f\r\x1c\x1d\x1e\x1f"  # the ASCII bytes str.strip() removes
_LF, _CR, _NUL, _QUOTE, _HASH = 10, 13, 0, 34, 35


class Doubt(Exception):
    """A line the vectorised path cannot vouch for (the per-line reader decides).

    Parameters
    ----------
    line : int
        The 1-based line (0: the whole file).
    why : str
        What the vectorised path saw there.
    """

    def __init__(self, line: int, why: str):
        super().__init__(f"line {line}: {why}")
        self.line = line


def blocks(source, *, bom: bool = True, universal: bool = True, progress: bool = False, desc: str = "reading"):
    """Yield the lines of a file or of bytes, a block at a time.

    Parameters
    ----------
    source : pathlib.Path or bytes
        A file (read a block at a time) or its content.
    bom : bool, default True
        Drop a leading UTF-8 byte-order mark.
    universal : bool, default True
        A carriage return alone ends a line too, as Python's text files read
        it (else only a line feed does, CRLF read as LF).
    progress : bool, default False
        A progress bar over the bytes (`relmodel._feedback.progress_bar`).
    desc : str, default "reading"
        The bar's label.

    Yields
    ------
    data : bytes
        Whole lines, each ending in a line feed.
    first_line : int
        The 1-based number of the block's first line.
    """
    from ._feedback import progress_bar

    size = source.stat().st_size if isinstance(source, Path) else len(source)
    bar = progress_bar(size, desc, unit="B", enabled_=bool(progress) and size > BLOCK_BYTES)
    line, carry, first = 1, b"", True
    try:
        for chunk in _chunks(source):
            bar.update(len(chunk))
            data = carry + chunk
            if first and bom and data.startswith(codecs.BOM_UTF8):
                data = data[len(codecs.BOM_UTF8):]
            first = False
            cut = data.rfind(b"\n") + 1  # a CR before it is no CR of a CRLF across blocks
            carry = data[cut:]
            if len(carry) > _LONGEST_LINE:
                raise Doubt(line, "a line longer than a block")
            if cut:
                block = _lf(data[:cut], universal)
                yield block, line
                line += block.count(b"\n")
        if carry:  # a last line without its line feed
            block = _lf(carry, universal)
            yield block + (b"" if block.endswith(b"\n") else b"\n"), line
    finally:
        bar.close()


def _chunks(source):
    if isinstance(source, Path):
        with source.open("rb") as file:
            while chunk := file.read(BLOCK_BYTES):
                yield chunk
    else:
        for start in range(0, len(source), BLOCK_BYTES):
            yield source[start:start + BLOCK_BYTES]


def _lf(data: bytes, universal: bool) -> bytes:
    """Line feeds for CRLF (and for a CR alone, if `universal`)."""
    if b"\r" not in data:
        return data
    data = data.replace(b"\r\n", b"\n")
    return data.replace(b"\r", b"\n") if universal else data


def utf8(data: bytes, first_line: int) -> tuple[bytes, list[int]]:
    """Return the block as valid UTF-8, and the lines that were not.

    Undecodable bytes become U+FFFD, as ``decode(errors="replace")`` reads
    them (line feeds are never part of a multi-byte character, so a block
    reads as the whole file would).

    Parameters
    ----------
    data : bytes
        Whole lines.
    first_line : int
        The 1-based number of the first.

    Returns
    -------
    data : bytes
        UTF-8.
    lines : list of int
        The lines that held bytes that are not UTF-8.
    """
    if data.isascii():
        return data, []
    try:
        data.decode("utf-8")
        return data, []
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8"), undecodable_lines(data, first_line)


def undecodable_lines(data: bytes, first_line: int = 1) -> list[int]:
    """Return the 1-based numbers of the lines of `data` that are not UTF-8.

    Parameters
    ----------
    data : bytes
        Lines separated by line feeds.
    first_line : int, default 1
        The number of the first.

    Returns
    -------
    list of int
        The lines, ascending.
    """
    bad = []
    for number, line in enumerate(data.split(b"\n"), first_line):
        if not line.isascii():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(number)
    return bad


def parse(data: bytes, first_line: int, *, sep: str, n_fields: int, usecols, quoted: bool,
          comments: bool) -> tuple[dict, np.ndarray]:
    """Split the rows of a block into columns of strings.

    Blank lines (and with `comments`, lines whose first non-blank character is
    ``#``) are no rows.

    Parameters
    ----------
    data : bytes
        Whole lines of UTF-8 (`blocks`, `utf8`).
    first_line : int
        The 1-based number of the first.
    sep : str
        The one-character field separator.
    n_fields : int
        Fields per row (the header's).
    usecols : sequence of int
        The columns to return.
    quoted : bool
        Fields may be quoted as the csv module writes them; else a quote is text.
    comments : bool
        Lines starting with ``#`` are comments.

    Returns
    -------
    columns : dict of int to numpy.ndarray
        Each column asked for: an object array of str, one per row.
    lines : numpy.ndarray
        The 1-based line of each row.

    Raises
    ------
    Doubt
        On a line the vectorised path cannot vouch for.
    """
    import pandas as pd

    buf = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buf == _LF)
    starts = np.concatenate(([0], ends[:-1] + 1))[:ends.size]
    sep_byte = ord(sep)
    seps = np.flatnonzero(buf == sep_byte)
    odd = np.zeros(ends.size, dtype=bool)  # lines not to read as they stand: blank, a comment, or doubt
    if quoted:
        quotes = np.flatnonzero(buf == _QUOTE)
        if quotes.size:
            seps, bad = _unquoted(buf, seps, quotes, starts, ends, sep_byte)
            odd[bad] = True
    odd |= np.diff(np.searchsorted(seps, ends), prepend=0) != n_fields - 1
    for byte in (_CR, _NUL):  # pandas would end a line at the one, and may end a field at the other
        odd[np.searchsorted(ends, np.flatnonzero(buf == byte))] = True
    commented = np.zeros(ends.size, dtype=bool)  # lines that may be comments
    if comments:
        hashes = np.flatnonzero(buf == _HASH)
        line_of = np.searchsorted(ends, hashes)
        first = buf[starts[line_of]]
        commented[line_of[(hashes == starts[line_of]) | np.isin(first, list(_SPACE)) | (first >= 0x80)]] = True
    keep = np.ones(ends.size, dtype=bool)
    for k in np.flatnonzero(odd | commented):
        text = data[starts[k]:ends[k]].decode("utf-8")
        # Blank or a comment as the per-line reader sees it (a separator is never blank: ^|^ logs
        # come with \x1f for it, which str.strip() would remove).
        if (not text.strip() and sep not in text) or (comments and text.lstrip().startswith("#")):
            keep[k] = False
        elif odd[k]:
            raise Doubt(first_line + int(k), "a row the vectorised reader cannot vouch for")
    lines = first_line + np.flatnonzero(keep)
    if not lines.size:
        return {c: np.empty(0, dtype=object) for c in usecols}, lines
    rows = data if keep.all() else buf[np.repeat(keep, ends - starts + 1)].tobytes()
    frame = pd.read_csv(io.BytesIO(rows), sep=sep, header=None,
                        names=list(range(n_fields)), usecols=list(usecols), dtype=object, na_filter=False,
                        skip_blank_lines=False, quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
                        index_col=False, engine="c", encoding="utf-8", low_memory=False)
    if len(frame) != lines.size:
        raise Doubt(0, f"{len(frame)} rows read from {lines.size} lines")
    return {c: frame[c].to_numpy(dtype=object) for c in usecols}, lines


def _unquoted(buf, seps, quotes, starts, ends, sep_byte):
    """(the separators outside quotes, the lines whose quoting is not plain): plain is each
    quoted field a whole field, with no quote inside, as both csv.reader and pandas read it."""
    line_of = np.searchsorted(ends, quotes)
    uneven = np.bincount(line_of, minlength=ends.size) % 2 == 1
    paired = ~uneven[line_of]
    quotes, line_of = quotes[paired], line_of[paired]
    opens, closes = quotes[0::2], quotes[1::2]
    plain = ((opens == starts[line_of[0::2]]) | (buf[opens - 1] == sep_byte)) & np.isin(buf[closes + 1],
                                                                                           (sep_byte, _LF))
    bad = np.union1d(np.flatnonzero(uneven), line_of[0::2][~plain])
    inside = np.searchsorted(quotes, seps) % 2 == 1
    return seps[~inside], bad


# --------------------------------------------------------------------------- fields


_ISO_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def codepoints(values: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the values' lengths, and their first `width` characters as code points.

    Parameters
    ----------
    values : numpy.ndarray
        Object array of str.
    width : int
        Characters kept.

    Returns
    -------
    lengths : numpy.ndarray
        int64.
    points : numpy.ndarray
        int32, shape (n, width); 0 past a value's end.
    """
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=values.size)
    text = values.astype(f"U{width}").view(np.uint32).reshape(values.size, width).astype(np.int32)
    return lengths, text


def iso_seconds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Read times written ``YYYY-MM-DDTHH:MM:SS`` (or with a space for T, or a final Z) as UTC.

    Parameters
    ----------
    values : numpy.ndarray
        Object array of str.

    Returns
    -------
    seconds : numpy.ndarray
        Seconds since the epoch (float; NaN where not so written).
    ok : numpy.ndarray
        Which values were so written (a valid date and time, year 1 to 9999).
    """
    lengths, c = codepoints(values, 20)
    ok = (lengths == 19) | ((lengths == 20) & (c[:, 19] == ord("Z")))
    ok &= (c[:, 4] == 45) & (c[:, 7] == 45) & ((c[:, 10] == 84) | (c[:, 10] == 32)) & (c[:, 13] == 58) \
        & (c[:, 16] == 58)
    d = c[:, _ISO_DIGITS] - 48
    ok &= ((d >= 0) & (d <= 9)).all(axis=1)
    d[~ok] = 0
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month, day = d[:, 4] * 10 + d[:, 5], d[:, 6] * 10 + d[:, 7]
    hour, minute, second = d[:, 8] * 10 + d[:, 9], d[:, 10] * 10 + d[:, 11], d[:, 12] * 10 + d[:, 13]
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = _DAYS_IN_MONTH[np.clip(month, 0, 12)] + ((month == 2) & leap)
    ok &= (year >= 1) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days) & (hour < 24) \
        & (minute < 60) & (second < 60)
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    seconds = days.astype(np.int64) * 86400 + hour * 3600 + minute * 60 + second
    return np.where(ok, seconds.astype(float), np.nan), ok


def digits_at(points: np.ndarray, lengths: np.ndarray, from_end: int, count: int):
    """(value, all digits) of `count` characters starting `from_end` before each value's end.

    Parameters
    ----------
    points, lengths : numpy.ndarray
        As `codepoints` gives them.
    from_end : int
        Where the digits start, counted back from the end (``len - from_end``).
    count : int
        How many digits.

    Returns
    -------
    value : numpy.ndarray
        int64 (meaningless where not all digits).
    ok : numpy.ndarray
        Whether all were digits (and within the value and `points`).
    """
    value = np.zeros(lengths.size, dtype=np.int64)
    ok = (lengths >= from_end) & (lengths - from_end + count <= points.shape[1])
    for k in range(count):
        column = np.clip(lengths - from_end + k, 0, points.shape[1] - 1)
        d = np.take_along_axis(points, column[:, None], axis=1)[:, 0] - 48
        ok &= (d >= 0) & (d <= 9)
        value = value * 10 + d
    return value, ok


def char_at(points: np.ndarray, lengths: np.ndarray, from_end: int) -> np.ndarray:
    """The code point `from_end` characters before each value's end (-1 where there is none).

    Parameters
    ----------
    points, lengths : numpy.ndarray
        As `codepoints` gives them.
    from_end : int
        Counted back from the end (1: the last character).

    Returns
    -------
    numpy.ndarray
        int32.
    """
    column = lengths - from_end
    inside = (column >= 0) & (column < points.shape[1])
    found = np.take_along_axis(points, np.clip(column, 0, points.shape[1] - 1)[:, None], axis=1)[:, 0]
    return np.where(inside, found, -1)


def whole_numbers(values: np.ndarray, max_digits: int = 15) -> tuple[np.ndarray, np.ndarray]:
    """Read plain ASCII digit strings (no sign, space or point) as integers.

    Parameters
    ----------
    values : numpy.ndarray
        Object array of str.
    max_digits : int, default 15
        Longer strings are not read (15 digits stay below 2**53, exact as floats).

    Returns
    -------
    numbers : numpy.ndarray
        int64 (0 where not read).
    ok : numpy.ndarray
        Which values were read.
    """
    digits, _, ok = _digits(values, max_digits, point=False)
    return digits, ok


def decimals(values: np.ndarray, max_digits: int = 15) -> tuple[np.ndarray, np.ndarray]:
    """Read plain ASCII decimals (digits and at most one point; no sign, exponent or space).

    Parameters
    ----------
    values : numpy.ndarray
        Object array of str.
    max_digits : int, default 15
        More digits are not read: the digits as an integer then stay below
        2**53, so that one division by a power of ten rounds as ``float`` does.

    Returns
    -------
    numbers : numpy.ndarray
        float64 (0 where not read).
    ok : numpy.ndarray
        Which values were read.
    """
    digits, after, ok = _digits(values, max_digits, point=True)
    return digits / 10.0 ** after, ok


def _digits(values: np.ndarray, max_digits: int, point: bool):
    """(the digits as an integer, digits after the point, which values are plain: 1 to
    `max_digits` ASCII digits and, if `point`, at most one point; 0 where not plain)."""
    lengths, c = codepoints(values, max_digits + 2)
    c = np.ascontiguousarray(c.T) - 48  # position by position; a point is -2
    digits = np.zeros(values.size, dtype=np.int64)
    points = np.zeros(values.size, dtype=np.int64)
    after = np.zeros(values.size, dtype=np.int64)
    other = np.zeros(values.size, dtype=bool)
    for k in range(min(max_digits + 1, int(lengths.max(initial=0)))):
        d, within = c[k], k < lengths
        dot = within & (d == -2) if point else np.zeros(values.size, dtype=bool)
        digit = within & (d >= 0) & (d <= 9)
        points += dot
        after += digit & (points > 0)
        digits = np.where(digit, digits * 10 + d, digits)
        other |= within & ~dot & ~digit
    ok = ~other & (points <= 1) & (lengths > points) & (lengths - points <= max_digits)
    return np.where(ok, digits, 0), np.where(ok, after, 0), ok


class Table:
    """Distinct strings across blocks, numbered in first-seen order."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.values: list[str] = []

    def codes(self, values: np.ndarray) -> np.ndarray:
        """Return each value's number (int32), numbering the new ones.

        Parameters
        ----------
        values : numpy.ndarray
            Object array of str.

        Returns
        -------
        numpy.ndarray
            The numbers.
        """
        import pandas as pd

        codes, uniques = pd.factorize(values)
        index, known = self.index, self.values
        lut = np.empty(len(uniques), dtype=np.int32)
        for k, value in enumerate(uniques):
            number = index.get(value)
            if number is None:
                number = index[value] = len(known)
                known.append(value)
            lut[k] = number
        return lut[codes]


def per_value(values: np.ndarray, read) -> tuple[list, np.ndarray]:
    """Apply `read` once per distinct value.

    Parameters
    ----------
    values : numpy.ndarray
        Object array of str.
    read : callable
        str -> anything.

    Returns
    -------
    results : list
        ``read(v)`` of each distinct value.
    codes : numpy.ndarray
        Each value's index into `results`.
    """
    import pandas as pd

    codes, uniques = pd.factorize(values)
    return [read(v) for v in uniques], codes



# --------------------------------------------------------------------------- unquoted fields as bytes


def plain_fields(data: bytes, first_line: int, n_fields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Find the fields of lines of unquoted, comma-separated fields, without making strings of them.

    Blank lines (no comma, nothing but spaces) are no rows.

    Parameters
    ----------
    data : bytes
        Whole lines of UTF-8 (`blocks`), with no quote and no carriage return.
    first_line : int
        The 1-based number of the first.
    n_fields : int
        Fields per row (the header's).

    Returns
    -------
    starts, ends : numpy.ndarray
        int64, shape (rows, n_fields): each field is ``data[start:end]``.
    lines : numpy.ndarray
        The 1-based line of each row.

    Raises
    ------
    Doubt
        On a line of another number of fields.
    """
    buf = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buf == _LF)
    starts = np.concatenate(([0], ends[:-1] + 1))[:ends.size]
    seps = np.flatnonzero(buf == ord(","))
    count = np.diff(np.searchsorted(seps, ends), prepend=0)
    keep = count == n_fields - 1
    for k in np.flatnonzero(~keep):
        if count[k] or data[starts[k]:ends[k]].decode("utf-8").strip():
            raise Doubt(first_line + int(k), "a row of another length")
    seps = seps.reshape(-1, n_fields - 1)
    return (np.column_stack([starts[keep], seps + 1]), np.column_stack([seps, ends[keep]]),
            first_line + np.flatnonzero(keep))


def field_points(data: bytes, starts: np.ndarray, ends: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the fields' lengths (bytes), and their first `width` bytes (0 past a field's end).

    Parameters
    ----------
    data : bytes
        The lines.
    starts, ends : numpy.ndarray
        One column of `plain_fields`.
    width : int
        Bytes kept.

    Returns
    -------
    lengths : numpy.ndarray
        int64.
    points : numpy.ndarray
        uint8, shape (n, width); bytes past 0x7f are no ASCII character, and read as 1.
    """
    buf = np.concatenate((np.frombuffer(data, np.uint8), np.zeros(width, np.uint8)))
    lengths = ends - starts
    found = np.lib.stride_tricks.sliding_window_view(buf, width)[starts]
    found[found > 0x7F] = 1
    found[np.arange(width) >= lengths[:, None]] = 0
    return lengths, found


def iso_ns(lengths: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read times written ``YYYY-MM-DDTHH:MM:SS[.f]`` (a space for T, ``.`` or ``,`` before 1 to 9
    fraction digits, a final ``Z`` or ``z`` or none) exactly, as integer ns since the epoch in UTC.

    Parameters
    ----------
    lengths, c : numpy.ndarray
        As `field_points` gives them, at least 30 wide.

    Returns
    -------
    ns : numpy.ndarray
        int64 (0 where not so written).
    ok : numpy.ndarray
        Which values were so written (a valid date and time within the years that int64 ns hold).
    naive : numpy.ndarray
        Which of them have no ``Z`` (their zone is the reader's to say).
    """
    last = char_at(c, lengths, 1)
    zulu = (last == ord("Z")) | (last == ord("z"))
    body = lengths - zulu
    fraction_digits = body - 20
    ok = (body == 19) | ((fraction_digits >= 1) & (fraction_digits <= 9) & ((c[:, 19] == 46) | (c[:, 19] == 44)))
    fraction = np.zeros(lengths.size, dtype=np.int64)
    for k in range(9):  # the fraction's digits, then zeros to nine
        inside = k < fraction_digits
        d = c[:, 20 + k].astype(np.int16) - 48
        ok &= ~inside | ((d >= 0) & (d <= 9))
        fraction = fraction * 10 + np.where(inside, d, 0)
    d = c[:, _ISO_DIGITS].astype(np.int64) - 48
    ok &= ((d >= 0) & (d <= 9)).all(axis=1) & (c[:, 4] == 45) & (c[:, 7] == 45) & (c[:, 13] == 58) \
        & (c[:, 16] == 58) & ((c[:, 10] == 84) | (c[:, 10] == 32))
    hour, minute, second = d[:, 8] * 10 + d[:, 9], d[:, 10] * 10 + d[:, 11], d[:, 12] * 10 + d[:, 13]
    ok &= (hour < 24) & (minute < 60) & (second < 60)
    days, valid = days_since_epoch(d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3], d[:, 4] * 10 + d[:, 5],
                                   d[:, 6] * 10 + d[:, 7])
    ok &= valid & (np.abs(days) < 100_000)  # within 1696 .. 2243, of the years int64 ns hold
    seconds = days * 86400 + hour * 3600 + minute * 60 + second
    return np.where(ok, seconds * 10**9 + fraction, 0), ok, ~zulu


_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def days_since_epoch(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Days from 1970-01-01 to dates of the proleptic Gregorian calendar (as `datetime.date`), and which
    dates are valid ones (years 1 to 9999; days past a month's end are none).

    Parameters
    ----------
    year, month, day : numpy.ndarray
        int64.

    Returns
    -------
    days : numpy.ndarray
        int64 (meaningless where not valid).
    valid : numpy.ndarray
        bool.
    """
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = _MONTH_DAYS[np.clip(month - 1, 0, 11)] + (leap & (month == 2))
    valid = (year >= 1) & (year <= 9999) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
    # Counted from 0000-03-01, so that a leap day ends its year; 719468 days lie from there to 1970-01-01.
    shifted = year - (month <= 2)
    era = shifted // 400
    of_era = shifted - era * 400
    of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468, valid


def decimal_ns(lengths: np.ndarray, c: np.ndarray, max_whole_digits: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Read plain ASCII decimal seconds (digits, at most one point and 9 digits after it; no sign,
    exponent or space) exactly, as integer ns.

    Parameters
    ----------
    lengths, c : numpy.ndarray
        As `field_points` gives them, at least ``max_whole_digits + 10`` wide.
    max_whole_digits : int, default 9
        More digits before the point are not read (9 keep the ns below 2**63).

    Returns
    -------
    ns : numpy.ndarray
        int64 (0 where not read).
    ok : numpy.ndarray
        Which values were read.
    """
    width = max_whole_digits + 10
    c = np.ascontiguousarray(c[:, :width].T, dtype=np.int16) - 48  # position by position; a point is -2
    whole = np.zeros(lengths.size, dtype=np.int64)
    fraction = np.zeros(lengths.size, dtype=np.int64)
    points = np.zeros(lengths.size, dtype=np.int64)
    before = np.zeros(lengths.size, dtype=np.int64)
    after = np.zeros(lengths.size, dtype=np.int64)
    other = lengths > width
    for k in range(min(width, int(lengths.max(initial=0)))):
        d, within = c[k], k < lengths
        dot = within & (d == -2)
        digit = within & (d >= 0) & (d <= 9)
        points += dot
        in_fraction = digit & (points > 0)
        before += digit & (points == 0)
        after += in_fraction
        whole = np.where(digit & (points == 0), whole * 10 + d, whole)
        fraction = np.where(in_fraction, fraction * 10 + d, fraction)
        other |= within & ~dot & ~digit
    ok = ~other & (points <= 1) & (before + after > 0) & (before <= max_whole_digits) & (after <= 9)
    scale = 10 ** (9 - np.clip(after, 0, 9))
    return np.where(ok, whole * 10**9 + fraction * scale, 0), ok
