"""A trainer's step lines in their common form, found and read a block of lines at a time in NumPy.

A reader describes the form as a `StepLine` of parts; `read_lines` hands each run of lines of that form to
the reader together, as arrays, and every other line one by one. A line the form does not vouch for (another
layout, a time that is no time or falls in an hour in which the zone's offset changes) is read alone, so the
events and errors are those of reading every line alone (docs: user-guide/trainer-logs.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timezone

import numpy as np

from ..._fast_csv import iso_ns
from .._events import NS_PER_H, RunRecordError, parse_instant
from ._format import AttemptEvents, instant

BLOCK_LINES = 1 << 16  # lines matched at a time: bounds the arrays held
_SPACE, _ZERO, _NINE = 32, 48, 57
_TIME_WIDTH = 30  # YYYY-MM-DD HH:MM:SS, a mark and up to 9 digits, and room past them
_TIME_DIGITS = ((0, 4), (5, 2), (8, 2), (11, 2), (14, 2), (17, 2))  # where the digits of YYYY-MM-DD HH:MM:SS are
_SAMPLE_LINES = 32  # a block's first lines, among which the one whose layout the others are compared with
_MOST_LAYOUT = 512  # bytes of such a layout
_MOST_LAYOUTS = 4  # layouts tried in a block before its other lines are matched part by part
# Where str.splitlines also breaks a line, in UTF-8.
_OTHER_BREAKS = tuple(mark.encode() for mark in "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_SCAN_BYTES = 1 << 22


@dataclasses.dataclass(frozen=True)
class Literal:
    """These bytes."""

    text: bytes


@dataclasses.dataclass(frozen=True)
class Spaces:
    """A run of `least` to `most` spaces."""

    least: int = 0
    most: int = 64


@dataclasses.dataclass(frozen=True)
class Digits:
    """`least` to `most` ASCII digits; `step`: they are the line's step."""

    least: int = 1
    most: int = 18
    step: bool = False


@dataclasses.dataclass(frozen=True)
class Time:
    """The line's time, ``YYYY-MM-DD`` and one of `dates` and ``HH:MM:SS`` in the years 1900-2099, then one of
    `marks` and `least` to `most` fraction digits (none at all where `least` is 0)."""

    dates: bytes = b" T"
    marks: bytes = b".,"
    least: int = 0
    most: int = 9


@dataclasses.dataclass(frozen=True)
class Maybe:
    """The parts where they all match, else nothing."""

    parts: tuple


@dataclasses.dataclass(frozen=True)
class StepLine:
    """A step line's common form: `parts` from the line's start (what follows them is not read).

    It must vouch only for lines that the reader, reading the line alone, would take as a step of that time
    and step (a form narrower than the reader's is fine: the other lines are read alone).
    """

    parts: tuple

    def find(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, zone) -> tuple:
        """Which of the lines ``buf[starts:ends]`` (`LogLines.block`: zeros after them) have this form, their
        times (ns since the epoch, in `zone`) and steps."""
        n = starts.size
        ok, time_ns, steps = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        rest = np.arange(n)
        for _ in range(_MOST_LAYOUTS):  # a layout a width of the step (or of another number) printed
            same = self.laid_out_as_one(buf, starts[rest], ends[rest])
            if same is None:
                break
            found, time_ns[rest[found]], steps[rest[found]] = same
            ok[rest[found]] = True
            rest = rest[~found]
        if rest.size:
            cursor = _Cursor(buf, starts[rest], ends[rest])
            cursor.match(self.parts)
            ok[rest], time_ns[rest], steps[rest] = cursor.ok, cursor.time, cursor.step
        if ok.any() and zone is not None and zone is not timezone.utc:
            time_ns[ok], steady = _in_zone(time_ns[ok], zone)
            ok[ok] = steady
        return ok, time_ns, steps

    def laid_out_as_one(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        """The lines laid out byte for byte as the first of this form among the first of them, but for their
        digits' values (a trainer prints its step lines at fixed widths): the same match, found in one
        comparison. Which they are, and their (naive) times and steps, read from the same places; None where
        none of the first lines has this form."""
        sample = _Cursor(buf, starts[:_SAMPLE_LINES], ends[:_SAMPLE_LINES])
        sample.match(self.parts)
        if not sample.ok.any():
            return None
        first = int(np.argmax(sample.ok))
        begin = int(starts[first])
        width = int(sample.at[first]) - begin
        if width > _MOST_LAYOUT:
            return None
        words = -(-width // 8)  # compared 8 bytes at a time
        layout, free = np.zeros(words * 8, dtype=np.uint8), np.zeros(words * 8, dtype=np.uint8)
        layout[:width] = buf[begin:begin + width]
        fixed = np.zeros(words * 8, dtype=np.uint8)
        fixed[:width] = 0xFF
        for at, count in sample.digits:  # digits whose values may differ
            free[int(at[first]) - begin:int(at[first]) - begin + int(count[first])] = 0xFF
        fixed &= ~free
        window = np.lib.stride_tricks.sliding_window_view(buf, words * 8)[starts].view(np.uint64)
        layout, fixed, free = (x.view(np.uint64) for x in (layout, fixed, free))
        same = starts + width <= ends
        work = np.bitwise_xor(window, layout)  # one scratch array, the comparisons made in place
        work &= fixed
        same &= ~work.any(axis=1)
        # A free byte is a digit where, less "0", it is below 10: neither its own high bit nor that of it plus
        # 0x76 (on its low seven bits, so that no sum carries into the next byte) is set.
        np.bitwise_xor(window, np.uint64(0x3030303030303030), out=window)
        np.bitwise_and(window, np.uint64(0x7F7F7F7F7F7F7F7F), out=work)
        work += np.uint64(0x7676767676767676)
        work |= window
        work &= free & np.uint64(0x8080808080808080)
        same &= ~work.any(axis=1)
        rows = starts[same]
        time_at, time_length = int(sample.time_at[first]) - begin, int(sample.time_length[first])
        c = np.zeros((rows.size, _TIME_WIDTH), dtype=np.uint8)
        c[:, :time_length] = buf[rows[:, None] + time_at + np.arange(time_length)]
        time_ns, valid, _ = iso_ns(np.full(rows.size, time_length), c)
        step_at, step_length = int(sample.step_at[first]) - begin, int(sample.step_length[first])
        powers = 10 ** np.arange(step_length - 1, -1, -1, dtype=np.int64)
        steps = (buf[rows[:, None] + step_at + np.arange(step_length)].astype(np.int64) - _ZERO) @ powers
        keep = valid & _in_years(c)  # a time no calendar has is read alone, and refused there
        same[same] = keep
        return same, time_ns[keep], steps[keep]


class _Cursor:
    """Where each line's match has reached (`at`), and whether it still holds (`ok`)."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        self.buf, self.at, self.ends = buf, starts, ends
        self.ok = np.ones(starts.size, dtype=bool)
        self.time = np.zeros(starts.size, dtype=np.int64)
        self.step = np.zeros(starts.size, dtype=np.int64)
        # Where each line's time and step lie, and its runs of digits (start, count): `laid_out_as_one`.
        self.time_at = self.time_length = self.step_at = self.step_length = None
        self.digits = []

    def byte(self, offset) -> np.ndarray:
        """Each line's byte `offset` past where it has reached (0 past its end)."""
        where = np.minimum(self.at + offset, self.buf.size - 1)
        return np.where(where < self.ends, self.buf[where], 0)

    def match(self, parts: tuple) -> None:
        for part in parts:
            if isinstance(part, Maybe):
                saved, recorded = (self.at.copy(), self.ok.copy()), len(self.digits)
                self.match(part.parts)
                self.digits[recorded:] = [(at, np.where(self.ok, count, 0)) for at, count in self.digits[recorded:]]
                self.at, self.ok = np.where(self.ok, self.at, saved[0]), saved[1]
            elif isinstance(part, Literal):
                size = len(part.text)
                window = np.lib.stride_tricks.sliding_window_view(self.buf, size)
                found = window[np.minimum(self.at, self.buf.size - size)]
                self.ok &= (found == np.frombuffer(part.text, np.uint8)).all(axis=1) & (self.at + size <= self.ends)
                self.at = self.at + size
            elif isinstance(part, Spaces):
                self.run(lambda b: b == _SPACE, part.least, part.most)
            elif isinstance(part, Digits):
                at = self.at
                value = self.run(lambda b: (b >= _ZERO) & (b <= _NINE), part.least, part.most)
                self.digits.append((at, self.at - at))
                if part.step:
                    self.step, self.step_at, self.step_length = value, at, self.at - at
            else:
                self.read_time(part)

    def run(self, belongs, least: int, most: int) -> np.ndarray:
        """Advance over `least` to `most` bytes that `belongs`; the digits' value where they are digits."""
        going, count = self.ok.copy(), np.zeros(self.at.size, dtype=np.int64)
        value = np.zeros(self.at.size, dtype=np.int64)
        for k in range(most):
            byte = self.byte(k)
            going &= belongs(byte)
            if not going.any():
                break
            count += going
            value = np.where(going, value * 10 + byte.astype(np.int64) - _ZERO, value)
        self.ok &= count >= least
        self.at = self.at + count
        return value

    def read_time(self, part: Time) -> None:
        """The time (`iso_ns`, naive: in UTC until `_in_zone`) and the cursor past it."""
        c = np.lib.stride_tricks.sliding_window_view(self.buf, _TIME_WIDTH)[np.minimum(self.at, self.buf.size
                                                                                       - _TIME_WIDTH)].copy()
        c[c > 0x7F] = 1
        digit = (c >= _ZERO) & (c <= _NINE)
        fraction, going = np.zeros(self.at.size, dtype=np.int64), np.isin(c[:, 19], list(part.marks))
        for k in range(part.most):
            going &= digit[:, 20 + k]
            fraction += going
        has_fraction = fraction >= max(part.least, 1)
        length = np.where(has_fraction, 20 + fraction, 19)
        c[np.arange(_TIME_WIDTH) >= length[:, None]] = 0
        ns, valid, _ = iso_ns(length, c)
        self.ok &= (valid & (has_fraction | (part.least == 0)) & np.isin(c[:, 10], list(part.dates)) & _in_years(c)
                    & (self.at + length <= self.ends))
        self.time, self.time_at, self.time_length = ns, self.at, length
        for offset, count in _TIME_DIGITS:
            self.digits.append((self.at + offset, np.full(self.at.size, count)))
        self.digits.append((self.at + 20, fraction * has_fraction))
        self.at = self.at + length


def _in_years(c: np.ndarray) -> np.ndarray:
    """Which times (`iso_ns`'s bytes) are of the years 1900-2099."""
    century = c[:, 0].astype(np.int64) * 256 + c[:, 1]
    return (century == ord("1") * 256 + ord("9")) | (century == ord("2") * 256 + ord("0"))


def _in_zone(naive: np.ndarray, zone) -> tuple[np.ndarray, np.ndarray]:
    """Local times (ns, as if UTC) in `zone`, and which of them lie in an hour of one offset (the others are
    read alone, where a time the change makes ambiguous or skips is refused)."""
    hours, which = np.unique(naive // NS_PER_H, return_inverse=True)
    offsets, steady = np.zeros(hours.size, dtype=np.int64), np.zeros(hours.size, dtype=bool)
    for k, hour in enumerate(hours.tolist()):
        begins = hour * NS_PER_H
        try:
            first, last = (parse_instant(str(np.datetime64(begins + at, "ns")), zone, "", 0)
                           for at in (0, NS_PER_H - 1))
        except RunRecordError:
            continue
        steady[k], offsets[k] = last - first == NS_PER_H - 1, begins - first
    return naive - offsets[which], steady[which]


class LineReader:
    """What reads a trainer's log line by line into its `AttemptEvents` (``self.run``), as `read_lines` hands
    it the lines: a subclass reads one line (``read(number, raw)``) and takes a run of step lines
    (``step_lines(first_number, time_ns, steps)``, passing them to `AttemptEvents.step_lines`)."""

    step_form: StepLine | None = None  # the form of the trainer's step lines (None: every line read alone)

    def __init__(self, path: str, zone):
        self.path, self.zone = path, zone
        self.run = AttemptEvents(path, zone)

    @classmethod
    def parse(cls, lines, path: str, zone):
        """The events of a log (`TrainerFormat.parse`), read by a reader of this kind."""
        reader = cls(path, zone)
        read_lines(lines, reader, cls.step_form)
        return reader.run.finish()

    def quick(self) -> bool:
        """Whether a step line now only adds a step (the attempt is open and past its first step)."""
        return self.run.is_open and self.run.started

    def time(self, text: str, line: int) -> int:
        """A time of line `line` (`instant`)."""
        return instant(text, self.zone, self.path, line)


def read_lines(lines, reader: LineReader, form: StepLine | None) -> None:
    """Hand a log's lines (`LogLines`, or a list of str) to `reader` in order: each run of lines of `form`
    (None: none) while ``reader.quick()`` says that such a line now only adds a step, together, to
    ``reader.step_lines``; every other line to ``reader.read``."""
    log = lines
    if not isinstance(lines, LogLines) and lines:
        try:
            log = LogLines.of(("\n".join(lines) + "\n").encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: every line read alone
            form = None
    for first in range(0, len(log), BLOCK_LINES):
        last = min(first + BLOCK_LINES, len(log))
        if form is None or not isinstance(log, LogLines):
            ok = np.zeros(last - first, dtype=bool)
        else:
            ok, time_ns, steps = form.find(*log.block(first, last), reader.zone)
        breaks = np.flatnonzero(~ok)
        k = 0
        while k < last - first:
            end = int(breaks[np.searchsorted(breaks, k)]) if breaks.size and breaks[-1] >= k else last - first
            if end > k and reader.quick():
                reader.step_lines(first + k + 1, time_ns[k:end], steps[k:end])
                k = end
            else:
                reader.read(first + k + 1, log[first + k])
                k += 1


class LogLines(Sequence):
    """A log's lines as ``str.splitlines`` gives them, held as the text's UTF-8 bytes (`data`) and each line's
    span (`starts`, `ends`): a str is made only for a line asked for."""

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray):
        self.data, self.starts, self.ends = data, starts, ends

    @classmethod
    def of(cls, data: bytes):
        """The lines of UTF-8 `data`; ``data.decode().splitlines()`` (a list) where it breaks lines at anything
        but a line feed."""
        if any(mark in data for mark in _OTHER_BREAKS if len(mark) == 1 or not data.isascii()):
            return data.decode("utf-8").splitlines()
        buf = np.frombuffer(data, dtype=np.uint8)
        # Found a slice at a time: one comparison of the whole text would fault in as many pages again.
        ends = np.concatenate([[0]] + [np.flatnonzero(buf[at:at + _SCAN_BYTES] == 10) + at
                                       for at in range(0, buf.size, _SCAN_BYTES)])[1:].astype(np.int64)
        if data and not data.endswith(b"\n"):
            ends = np.append(ends, len(data))
        return cls(data, np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)[:ends.size], ends)

    def block(self, first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lines `first` to `last` (not included) as bytes with zeros after them, and their spans there."""
        begin, end = int(self.starts[first]), int(self.ends[last - 1])
        buf = np.zeros(end - begin + _MOST_LAYOUT + _TIME_WIDTH, dtype=np.uint8)
        buf[:end - begin] = np.frombuffer(self.data, dtype=np.uint8, count=end - begin, offset=begin)
        return buf, self.starts[first:last] - begin, self.ends[first:last] - begin

    def __len__(self) -> int:
        return self.starts.size

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        return self.data[self.starts[index]:self.ends[index]].decode("utf-8")
