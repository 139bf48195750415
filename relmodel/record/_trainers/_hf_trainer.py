"""Hugging Face `Trainer`'s log (transformers' trainer.py), read through the times Python logging writes.

Learned from huggingface/transformers, src/transformers/trainer.py: ``Trainer._inner_training_loop`` logs the
banner ``"***** Running training *****"`` and its indented lines (``"  Num examples = ..."``, ...), then on a
resume ``"  Continuing training from global step {global_step}"``; ``_save_checkpoint`` saves into
``f"{PREFIX_CHECKPOINT_DIR}-{global_step}"`` through ``_save``, which logs ``"Saving model checkpoint to
{output_dir}"`` before it writes; the loop ends with ``"\\n\\nTraining completed. Do not forget to share your model
on huggingface.co/models =)\\n\\n"``. ``Trainer.log`` hands ``{'loss': ..., 'epoch': ...}`` to
``ProgressCallback.on_log`` (trainer_callback.py), which prints ``str(logs)`` through ``tqdm.write``: no time and
no step. transformers' own handler (utils/logging.py) prints the bare message unless
``enable_explicit_format()`` (which the example scripts call) sets ``"[%(levelname)s|%(filename)s:%(lineno)s]
%(asctime)s >> %(message)s"``.
"""

from __future__ import annotations

import re

from .._events import RunRecordError
from ._format import TrainerFormat, step_number
from ._logged import LOGGED_TIME_FORMATS, LoggedRun, read_logged

_BANNER = "***** Running training *****"
_BANNER_LINE = re.compile(r"\s(Num examples|Num Epochs|Instantaneous batch size|Training with DataParallel|"
                          r"Total train batch size|Gradient Accumulation steps|Total optimization steps|"
                          r"Number of trainable parameters|Continuing training from|Will skip the first)\b")
_RESUMED = re.compile(r"Continuing training from global step (\S*)")
_SAVING = re.compile(r"Saving model checkpoint to (.*?)\s*$")
_CHECKPOINT_DIR = re.compile(r"(?:^|[/\\])checkpoint-([^/\\]*)[/\\]?$")
_COMPLETED = "Training completed. Do not forget to share your model"
# Trainer.log's dicts as the progress bar prints them: the training loss's, and the end's speed metrics.
_LOG_DICT = re.compile(r"^\{'loss': [^{}]*'learning_rate': [^{}]*'epoch': [^{}]*\}$|^\{'train_runtime': ")
_NEEDS_TIME = (_BANNER, "Continuing training from global step", "Saving model checkpoint to")


def _no_time(path: str, line: int, text: str) -> RunRecordError:
    return RunRecordError(path, line, "time", (
        f"{text.strip()[:60]!r} has no time: the Trainer's default logging writes none. Log with times ("
        f"{LOGGED_TIME_FORMATS}; e.g. transformers.utils.logging.set_verbosity_info() and "
        "enable_explicit_format()), or give the run's events as CSV"))


class _HfTrainerLog:
    """The reading of one log: its attempts, and whether the banner's lines are running."""

    def __init__(self, path: str, zone):
        self.run = LoggedRun(path, zone)
        self.path = path
        self.in_banner = False

    def timed(self, time_text: str, message: str, line: int) -> None:
        run = self.run
        at = run.timed(time_text, line)
        if self.in_banner and _BANNER_LINE.search(message):
            run.hold_first_step(at, line, run.held_first_step[2])
            resumed = _RESUMED.search(message)
            if resumed:
                step = step_number(resumed[1], self.path, line, "the global step")
                run.add(line, at, "checkpoint_restored", step=step)
                run.hold_first_step(at, line, step)
            return
        self.in_banner = False
        run.flush_first_step()
        if _BANNER in message:
            self.in_banner = True
            run.hold_first_step(at, line, 0)
        elif _COMPLETED in message:
            run.end(line, at)
        else:
            saving = _SAVING.search(message)
            directory = _CHECKPOINT_DIR.search(saving[1]) if saving else None
            if directory:  # a save elsewhere (the final model's) is no training checkpoint
                step = step_number(directory[1], self.path, line, "the checkpoint folder's suffix")
                run.add(line, at, "checkpoint_written", step=step, duration_ns=0)

    def untimed(self, text: str, line: int) -> None:
        run = self.run
        if self.in_banner:
            self.in_banner = False
            run.flush_first_step()
        if _COMPLETED in text:
            if not (run.record_open and run.is_open):
                raise _no_time(self.path, line, text)
            run.end(line, run.last[0])  # the end message begins with blank lines, under its record's time
        elif any(needed in text for needed in _NEEDS_TIME) or (_LOG_DICT.match(text) and run.last is None):
            raise _no_time(self.path, line, text)
        else:
            run.untimed(text, line)


def _parse(lines: list, path: str, zone):
    return read_logged(lines, _HfTrainerLog(path, zone))


def _detect(lines: list) -> bool:
    return any(_BANNER in text or _LOG_DICT.match(text) for text in lines)


HF_TRAINER_FORMAT = TrainerFormat(
    name="hf_trainer",
    title="Hugging Face Trainer (transformers)",
    detect=_detect,
    parse=_parse,
    reads=("lines with Python logging's time (" + LOGGED_TIME_FORMATS + "): the first of the file, or the first "
           "after a failure, starts an attempt; the end of the '***** Running training *****' banner's lines is the "
           "first step; 'Continuing training from global step N' restores step N; 'Saving model checkpoint to "
           ".../checkpoint-N' writes step N; 'Training completed.' ends the run; a Python traceback (its exception's "
           "line) or an NCCL watchdog timeout is a failure"),
    cannot=("The Trainer's default logging writes no time (a log without one is refused, naming the line), and its "
            "step lines ({'loss': ..., 'epoch': ...}, printed by the progress bar) carry neither a time nor a step: "
            "they give no event. The first step is read where the banner's lines end (the model, optimizer and "
            "checkpoint are loaded, the first batch is next): a resumed run's skipping of seen batches counts as "
            "compute. A save is logged when it begins, and neither its end nor its duration is: each is read as a "
            "write of no duration at that line, so its blocking time counts as compute. A traceback has no time: "
            "the failure is placed at the attempt's last timed line, so compute after it reads as down time (an "
            "sacct export gives the attempts' true ends)."),
)
