"""The log of Megatron-LM's ``pretrain`` (``megatron/training/training.py`` and ``checkpointing.py``), which
NeMo's Megatron path prints too: ``print_rank_0`` lines, the ``[label] datetime: <time>`` of ``print_datetime``,
and the iteration lines of ``training_log`` with their ``[<time>]``."""

from __future__ import annotations

import re

from .._events import RunRecordError
from ._format import TrainerFormat, plain_line, printed_ns, step_number
from ._step_lines import Digits, LineReader, Literal, Maybe, Spaces, StepLine, Time

_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?"
_STAMP = rf"(?:\[(?P<time>{_TIME})\] )"
_DATETIME = re.compile(rf"\[(?P<label>[^\]]+)\] datetime: (?P<time>{_TIME})")
_ITERATION = re.compile(r"(?:\[(?P<time>[^\]]*)\] )?iteration\s+(?P<iteration>\S+?)/\s*\d+ \|")
_SAVING = re.compile(rf"{_STAMP}?saving checkpoint at iteration\s+(?P<iteration>\d+) to ")
_SAVED = re.compile(rf"{_STAMP}?successfully saved (?:local )?checkpoint from iteration\s+(?P<iteration>\d+) to ")
_SCHEDULED = re.compile(rf"{_STAMP}scheduled an async checkpoint save at iteration\s+(?P<iteration>\d+) ")
_SAVE_TIMER = re.compile(r"save-checkpoint(?:-non-persistent)? \.+: (?:\([\d.]+, (?P<max>[\d.]+)\)|(?P<only>[\d.]+))")
_LOADED = re.compile(r"successfully loaded checkpoint from .* at iteration (?P<iteration>\d+)")
_INITIALISED = re.compile(r"time to initialize megatron \(seconds\): (?P<seconds>\S+)")
_ARGUMENTS = re.compile(r"-+ arguments -+")
_VALIDATION = re.compile(r"validation(?:-\d+)? loss at ")
_STEP_LINE = "elapsed time per iteration (ms)"
# An iteration line as `training_log` prints it, which `_Reader.read` reads as one (the lines of this form are
# read together).
ITERATION_LINE = StepLine((Maybe((Literal(b"[rank"), Digits(1, 9), Literal(b"]:"), Maybe((Literal(b" "),)))),
                           Spaces(), Literal(b"["), Time(), Literal(b"] iteration"), Spaces(1), Digits(step=True),
                           Literal(b"/"), Spaces(), Digits(), Literal(b" |"),
                           Maybe((Literal(b" consumed samples:"), Spaces(1), Digits(), Literal(b" |"))),
                           Literal(f" {_STEP_LINE}".encode())))
_INITIALISED_LABEL = "after megatron is initialized"
_TRAINING_LABEL = "before the start of training step"
_DONE_LABEL = "after training is done"
_EXIT_LABEL = "exiting program"


def _detect(lines) -> bool:
    """A Megatron-LM log: its iteration lines, or its initialisation's lines."""
    for line in lines:
        text = plain_line(line).strip()
        if _INITIALISED.match(text) or (_STEP_LINE in text and _ITERATION.match(text)):
            return True
        stamp = _DATETIME.fullmatch(text)
        if stamp and stamp["label"] == _INITIALISED_LABEL:
            return True
    return False


class _Reader(LineReader):
    """Reads a Megatron-LM log line by line."""

    step_form = ITERATION_LINE

    def __init__(self, path: str, zone):
        super().__init__(path, zone)
        self.starting = None  # an attempt begun and not yet placed: [line, its startup's times, init seconds]
        self.restore = None  # a load printed without a time: (line, iteration)
        self.restored = 0
        self.save = None  # the save under way: {"line", "iteration", "begin", "end", "ended"}
        self.scheduled = set()  # iterations whose asynchronous save was scheduled (their end is not a write's)
        self.last_stamp = None  # (what printed it: the iteration or the print_datetime label, its time)

    def begin_attempt(self, line: int) -> None:
        if self.starting is None:
            self.run.close()
            self.starting, self.restored, self.save, self.last_stamp = [line, [], None], 0, None, None

    def place_attempt(self, line: int) -> None:
        """The attempt begun starts at the earliest time its startup printed."""
        if self.starting is None:
            return
        begun, times, _ = self.starting
        if not times:
            raise RunRecordError(self.path, line, "time", "the attempt begun at line "
                                                          f"{begun} printed no time before this line")
        self.run.start(begun, min(times))
        self.starting = None

    def stamped(self, line: int, time_ns: int, what) -> None:
        """A line with a time: what waited for one (a load) is placed there; a log that begins with no
        startup begins its attempt at its first time."""
        self.place_attempt(line)
        if not self.run.is_open:
            self.run.start(line, time_ns)
        self.run.seen(time_ns)
        self.last_stamp = (what, time_ns)
        if self.restore is not None:
            self.run.add(self.restore[0], time_ns, "checkpoint_restored", step=self.restore[1])
            self.restore = None

    def datetime_line(self, line: int, label: str, time_ns: int) -> None:
        if self.starting is not None:
            self.starting[1].append(time_ns)
            if label == _INITIALISED_LABEL and self.starting[2] is not None:
                self.starting[1].append(time_ns - self.starting[2])
            waiting = self.restore is not None or label in (_TRAINING_LABEL, _DONE_LABEL)
            if not waiting and not label.startswith(_EXIT_LABEL):
                return
        self.stamped(line, time_ns, label)
        if label == _TRAINING_LABEL:
            self.run.first_step(line, time_ns, self.restored + 1)
        elif label == _DONE_LABEL:
            self.run.ended(line, time_ns)
        elif label.startswith(_EXIT_LABEL):
            self.run.planned(line, time_ns, label)

    def iteration_line(self, line: int, text: str) -> None:
        match = _ITERATION.match(text)
        iteration = step_number(match["iteration"], self.path, line, "the iteration")
        if match["time"] is None:
            raise RunRecordError(self.path, line, "time", "an iteration line with no time: this Megatron-LM "
                                                          "version prints none")
        if self.save is not None:
            raise RunRecordError(self.path, self.save["line"], "time", "the save's end is not printed before the "
                                                                       "next iteration line")
        time_ns = self.time(match["time"], line)
        self.stamped(line, time_ns, iteration)
        self.run.step(line, time_ns, iteration)

    def quick(self) -> bool:
        """Whether an iteration line now only adds a step: nothing waits for its time."""
        return self.starting is None and self.restore is None and self.save is None and super().quick()

    def step_lines(self, first: int, time_ns, iterations) -> None:
        """Iteration lines, as `iteration_line` would read each (`read_lines`)."""
        self.run.step_lines(first, time_ns, iterations)
        self.last_stamp = (int(iterations[-1]), self.run.last_time)

    def saving(self, line: int, match) -> None:
        iteration = step_number(match["iteration"], self.path, line, "the iteration")
        begin = None
        if match["time"] is not None:
            begin = self.time(match["time"], line)
            self.stamped(line, begin, "save")
        elif self.last_stamp is not None and self.last_stamp[0] in (iteration, _DONE_LABEL):
            # The loop saves right after printing the iteration, and the run's last save right after its end.
            begin = self.last_stamp[1]
        self.save = {"line": line, "iteration": iteration, "begin": begin, "end": None, "ended": False}

    def saved(self, line: int, match, scheduled: bool) -> None:
        iteration = step_number(match["iteration"], self.path, line, "the iteration")
        if not scheduled and iteration in self.scheduled:
            self.scheduled.discard(iteration)
            return
        if self.save is None or self.save["iteration"] != iteration:
            raise RunRecordError(self.path, line, "step", f"the end of a save of iteration {iteration} that did "
                                                          "not start")
        if scheduled:
            self.scheduled.add(iteration)
        self.save["ended"] = True
        if match["time"] is not None:
            self.save["end"] = self.time(match["time"], line)
            self.stamped(line, self.save["end"], "save")
            if self.save["begin"] is not None:
                self.written(line, self.save["end"] - self.save["begin"])

    def save_timer(self, line: int, match) -> None:
        """The save's blocking time, where its lines printed no time for its end."""
        if self.save is None or not self.save["ended"]:
            return
        duration = printed_ns(match["max"] or match["only"], 10**6, self.path, line, "duration")
        if self.save["end"] is None and self.save["begin"] is None:
            raise RunRecordError(self.path, self.save["line"], "time", "this save prints no time and does not "
                                                                       "follow its iteration's line: when it "
                                                                       "ended is not known")
        if self.save["end"] is None:
            self.save["end"] = self.save["begin"] + duration
        self.written(self.save["line"], duration)

    def written(self, line: int, duration: int) -> None:
        self.run.add(line, self.save["end"], "checkpoint_written", step=self.save["iteration"], duration_ns=duration)
        self.save = None

    def error(self, line: int, text: str) -> None:
        reason = self.run.errors.reason(text)
        if reason:
            self.place_attempt(line)
            self.run.failed(line, reason)
        else:
            self.run.summary(line, text)

    def read(self, line: int, raw: str) -> None:
        text = plain_line(raw).strip()
        if _ARGUMENTS.fullmatch(text):
            self.begin_attempt(line)
        elif (match := _INITIALISED.match(text)) is not None:
            self.begin_attempt(line)
            self.starting[2] = printed_ns(match["seconds"], 10**9, self.path, line, "duration")
        elif (match := _DATETIME.fullmatch(text)) is not None:
            self.datetime_line(line, match["label"], self.time(match["time"], line))
        elif _STEP_LINE in text and _ITERATION.match(text):
            self.iteration_line(line, text)
        elif (match := _SAVING.match(text)) is not None:
            self.saving(line, match)
        elif (match := _SCHEDULED.match(text)) is not None:
            self.saved(line, match, scheduled=True)
        elif (match := _SAVED.match(text)) is not None:
            self.saved(line, match, scheduled=False)
        elif (match := _SAVE_TIMER.match(text)) is not None:
            self.save_timer(line, match)
        elif (match := _LOADED.match(text)) is not None:
            self.restored = step_number(match["iteration"], self.path, line, "the iteration")
            self.restore = (line, self.restored)
        elif _VALIDATION.match(text):
            self.last_stamp = None  # an evaluation ran since: a save printed without a time no longer follows it
        else:
            self.error(line, text)



MEGATRON_FORMAT = TrainerFormat(
    name="megatron",
    title="Megatron-LM (and NeMo's Megatron path)",
    detect=_detect,
    parse=_Reader.parse,
    reads=("the arguments banner and 'time to initialize megatron (seconds)' (an attempt's start), the "
           "'[label] datetime: <time>' lines ('before the start of training step': initialisation over; 'after "
           "training is done': the end; 'exiting program ...': a planned exit), the '[<time>] iteration N/ M | "
           "... elapsed time per iteration (ms)' lines, 'saving checkpoint at iteration N', 'successfully saved "
           "checkpoint from iteration N' (or 'scheduled an async checkpoint save'), the save-checkpoint timer, "
           "'successfully loaded checkpoint from ... at iteration N', and error output (a traceback's exception, "
           "an NCCL timeout, a CUDA error)"),
    cannot=("An attempt starts at the earliest time its startup prints: the process's start as Megatron measures it "
            "('after megatron is initialized' less the 'time to initialize megatron' seconds), or the entry script's "
            "own start where it prints one; the scheduler's launch before it is not in the log. Iteration lines are "
            "printed every log-interval iterations; a log whose iteration lines carry no time (older Megatron-LM) is "
            "refused. A save's start and end carry a time in recent versions, and the write is the span between them;"
            " where they carry none, the save starts right after its iteration's line (or the end of training) and "
            "lasts the save-checkpoint timer's maximum over ranks, and a save that does not follow either directly "
            "(an evaluation between them) is refused. An asynchronous save is its blocking part, up to 'scheduled an "
            "async checkpoint save'; when its files are finished is not read (where save lines carry no time, an "
            "asynchronous save is refused). A load prints no time: it is placed at the next line with one, within the"
            " attempt's initialisation. Error output carries no time: a failure is at the time torchrun's summary "
            "gives for its root cause (to the second) where the log has one, else at the last line the log printed "
            "before the error, and compute between that line and the crash is not known (the scheduler's end of the "
            "job bounds it)."),
)
