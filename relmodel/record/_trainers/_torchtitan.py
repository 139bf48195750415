"""The log of torchtitan's trainer (``torchtitan/train.py``), as its logger prints it:
``[titan] 2025-01-01 12:00:00,123 - root - INFO - message`` (``[rank0]:`` before it under ``torchrun --tee``)."""

from __future__ import annotations

import re

from .._events import RunRecordError
from ._format import TrainerFormat, plain_line, printed_ns, step_number
from ._step_lines import Digits, LineReader, Literal, Maybe, Spaces, StepLine, Time

_LOGGED = re.compile(r"(?:\[titan\] )?(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - [\w.]+ - [A-Z]+ - "
                     r"(?P<message>.*)")
_STEP = re.compile(r"step:\s*(?P<step>\S+?)(?:/\d+ = [\d.]+%)?\s+loss:")
_STARTING = re.compile(r"Starting job: ")
_TRAINING_STARTS = re.compile(r"Training starts at step (?P<step>\S+?)[.,]")
_LAST_SAVE = re.compile(r"Saving a (?:full|model weights only) checkpoint .*at last step, step (?P<step>\d+)\.")
_SAVED = re.compile(r"Finished saving the checkpoint \(or staging if async is enabled\) ?in (?P<seconds>\S+) seconds")
_LOADING = re.compile(r"Loading the checkpoint (?:from (?P<path>.*)|at step (?P<step>\d+))\.\s*$")
_LOADED = re.compile(r"Finished loading the (?:model/optimizer/scheduler )?checkpoint in ")
_CHECKPOINT_STEP = re.compile(r"step-(\d+)/*$")
_COMPLETED = re.compile(r"Training completed")
_TELLING = (_STARTING, _TRAINING_STARTS, _SAVED, _COMPLETED)
# A step line as `MetricsProcessor.log` prints it through torchtitan's logger, which `_Reader.read` reads as one
# (the lines of this form are read together).
STEP_LINE = StepLine((Maybe((Literal(b"[rank"), Digits(1, 9), Literal(b"]:"))), Maybe((Literal(b"[titan] "),)),
                      Time(dates=b" ", marks=b",", least=3, most=3), Literal(b" - root - INFO - "),
                      Maybe((Literal(b"\x1b[31m"),)), Literal(b"step:"), Spaces(), Digits(step=True), Spaces(1),
                      Maybe((Literal(b"\x1b[32m"),)), Literal(b"loss:")))


def _detect(lines) -> bool:
    """A torchtitan log: its logger's lines, with a message only its trainer prints."""
    for line in lines:
        logged = _LOGGED.fullmatch(plain_line(line).rstrip())
        message = logged["message"] if logged else ""
        if any(p.match(message) for p in _TELLING) or ("mfu:" in message and _STEP.match(message)):
            return True
    return False


class _Reader(LineReader):
    """Reads a torchtitan log line by line."""

    step_form = STEP_LINE

    def __init__(self, path: str, zone):
        super().__init__(path, zone)
        self.step = self.loaded = None  # the latest step printed; the checkpoint being loaded

    def step_lines(self, first: int, time_ns, steps) -> None:
        """Step lines, as `read` would read each (`read_lines`)."""
        self.run.step_lines(first, time_ns, steps)
        self.step = int(steps[-1])

    def read(self, number: int, raw: str) -> None:
        path, run = self.path, self.run
        text = plain_line(raw).rstrip()
        logged = _LOGGED.fullmatch(text)
        if not logged:
            run.error(number, text)
            return
        t, message = self.time(logged["time"], number), logged["message"]
        if _STARTING.match(message) or not run.is_open:
            run.start(number, t)
            self.step = None
        run.seen(t)
        if (match := _STEP.match(message)) is not None:
            self.step = step_number(match["step"], path, number, "the step")
            run.step(number, t, self.step)
        elif (match := _TRAINING_STARTS.match(message)) is not None:
            run.first_step(number, t, step_number(match["step"], path, number, "the step"))
        elif (match := _LAST_SAVE.match(message)) is not None:
            self.step = step_number(match["step"], path, number, "the step")
        elif (match := _SAVED.match(message)) is not None:
            if self.step is None:
                raise RunRecordError(path, number, "step", "a save before any step line: its step is not known")
            seconds = printed_ns(match["seconds"], 10**9, path, number, "duration")
            run.add(number, t, "checkpoint_written", step=self.step, duration_ns=seconds)
        elif (match := _LOADING.match(message)) is not None:
            found = _CHECKPOINT_STEP.search(match["path"]) if match["path"] is not None else None
            self.loaded = step_number(match["step"] or (found[1] if found else "0"), path, number, "the step")
        elif _LOADED.match(message) and self.loaded is not None:
            run.add(number, t, "checkpoint_restored", step=self.loaded)
            self.loaded = None
        elif _COMPLETED.match(message):
            run.ended(number, t)
        else:
            run.error(number, message)



TORCHTITAN_FORMAT = TrainerFormat(
    name="torchtitan",
    title="torchtitan",
    detect=_detect,
    parse=_Reader.parse,
    reads=("the logger's lines ('[titan] <time> - root - INFO - ...'): 'Starting job' (an attempt's start), "
           "'Training starts at step N' (initialisation over), 'step: N  loss: ...' lines, 'Finished saving the "
           "checkpoint ... in S seconds', 'Loading the checkpoint from .../step-N' and 'Finished loading the "
           "checkpoint', 'Training completed', and error output (a traceback's exception, an NCCL timeout, a CUDA "
           "error)"),
    cannot=("The process's start before 'Starting job' (torchrun's launch, imports, the config's parse) is not "
            "in the log: an attempt starts at that line. A save prints its blocking time (with asynchronous "
            "checkpoints, the staging) but not its step: it is the latest step line's, exact when "
            "checkpoint.interval is a multiple of metrics.log_freq and earlier otherwise; the write's end on "
            "storage after an asynchronous save is not printed. A checkpoint loaded from outside the checkpoint "
            "folder (an initial load) is the run's start, step 0. Error output carries no time: a failure is at "
            "the time torchrun's summary gives for its root cause (to the second) where the log has one, else at "
            "the last line the log printed before the error, and compute between that line and the crash is not "
            "known (the scheduler's end of the job bounds it)."),
)
