"""PyTorch Lightning's log, read through the times Python logging writes.

Learned from Lightning-AI/pytorch-lightning, src/lightning/pytorch: ``__init__.py`` gives the
``lightning.pytorch`` logger a bare ``StreamHandler`` (the message alone, no time) unless the root logger already
has handlers, to which it then propagates; ``trainer/connectors/checkpoint_connector.py``
``_CheckpointConnector.resume_start`` logs ``f"Restoring states from the checkpoint path at {checkpoint_path}"`` and
``resume_end`` ``f"Restored all states from the checkpoint at {self._ckpt_path}"``, the last set-up message before
the fit loop; ``callbacks/model_checkpoint.py`` ``ModelCheckpoint._update_best_and_save`` logs, with
``verbose=True`` and before it writes, ``f"Epoch {epoch:d}, global step {step:d}: {self.monitor!r} reached
{current:0.5f} (best {best:0.5f}), saving model to {filepath!r} as top {k}"`` and ``_save_monitor_checkpoint``
``f"Epoch {epoch:d}, global step {step:d}: {self.monitor!r} was not in top {self.save_top_k}"``; its default file
name is ``"{epoch}-{step}"`` (``epoch=E-step=S.ckpt``); ``loops/fit_loop.py`` ``_FitLoop.done`` logs
``f"`Trainer.fit` stopped: `max_epochs={self.max_epochs!r}` reached."`` (or ``max_steps``); the model summary
(``callbacks/model_summary.py``) is one record of lines under ``"  | Name | Type | Params"``.
"""

from __future__ import annotations

import re

from .._events import RunRecordError
from ._format import TrainerFormat, step_number
from ._logged import LOGGED_TIME_FORMATS, LoggedRun, read_logged

_RESTORING = re.compile(r"Restoring states from the checkpoint path at (.*?)\s*$")
_RESTORED = "Restored all states from the checkpoint at "
_CHECKPOINT_STEP = re.compile(r"step=([^-_./\\]*)[^/\\]*$")
_GLOBAL_STEP = re.compile(r"Epoch (\S+), global step (\S+?): (?:.*, saving model to|.* was not in top )")
_SAVING = ", saving model to "
_STOPPED = re.compile(r"`Trainer\.fit` stopped: `(max_epochs|max_steps)=")
_SUMMARY_HEADER = re.compile(r"^\s*\|\s*Name\s*\|\s*Type\s*\|")
_PROGRESS = re.compile(r"^(Epoch \d+|Sanity Checking[^:]*|Validation[^:]*):.*\|")
_SIGNATURE = re.compile(r"GPU available: (True|False)|TPU available: (True|False), using: |LOCAL_RANK: \d+ - "
                        r"CUDA_VISIBLE_DEVICES: |`Trainer\.fit` stopped: |Restoring states from the checkpoint path")
_NEEDS_TIME = re.compile(r"Restoring states from the checkpoint path at |Restored all states from the checkpoint|"
                         r"`Trainer\.fit` stopped: |Epoch \d+, global step \d+: ")


class _LightningLog:
    """The reading of one log: its attempts, and the step the running one restored."""

    def __init__(self, path: str, zone):
        self.run = LoggedRun(path, zone)
        self.path = path
        self.restored = -1  # the step the attempt restored, where its file's name says

    def timed(self, time_text: str, message: str, line: int) -> None:
        run = self.run
        if not run.is_open:
            self.restored = -1
        at = run.timed(time_text, line)
        restoring = _RESTORING.search(message)
        if restoring:
            step = _CHECKPOINT_STEP.search(restoring[1])
            if step:  # another name (last.ckpt, hpc_ckpt_N) is the latest written, which a restore assumes
                self.restored = step_number(step[1], self.path, line, "the checkpoint's step")
                run.add(line, at, "checkpoint_restored", step=self.restored)
        elif _RESTORED in message:
            run.hold_first_step(at, line, self.restored)
        elif _STOPPED.search(message):
            run.end(line, at)
        else:
            self.progress(message, at, line)

    def progress(self, message: str, at: int, line: int) -> None:
        """ModelCheckpoint's verbose lines: a write where it saves, progress where it does not."""
        reached = _GLOBAL_STEP.search(message)
        if reached:
            run = self.run
            run.flush_first_step()
            step_number(reached[1], self.path, line, "the epoch")
            step = step_number(reached[2], self.path, line, "the global step")
            if _SAVING in message:
                run.add(line, at, "checkpoint_written", step=step, duration_ns=0)
            else:
                run.add(line, at, "step", step=step)

    def untimed(self, text: str, line: int) -> None:
        run = self.run
        if _NEEDS_TIME.search(text):
            raise RunRecordError(self.path, line, "time", (
                f"{text.strip()[:60]!r} has no time: Lightning's own handler writes the message alone. Configure "
                f"Python logging with times before importing lightning ({LOGGED_TIME_FORMATS}), or give the run's "
                "events as CSV"))
        if _SUMMARY_HEADER.match(text) and run.record_open and run.is_open:
            run.hold_first_step(run.last[0], run.last[1], -1)  # the summary's record began at the last timed line
        elif _PROGRESS.match(text):
            run.flush_first_step()
        else:
            run.untimed(text, line)


def _parse(lines: list, path: str, zone):
    return read_logged(lines, _LightningLog(path, zone))


def _detect(lines: list) -> bool:
    return any(_SIGNATURE.search(text) for text in lines)


LIGHTNING_FORMAT = TrainerFormat(
    name="lightning",
    title="PyTorch Lightning",
    detect=_detect,
    parse=_parse,
    reads=("lines with Python logging's time (" + LOGGED_TIME_FORMATS + "): the first of the file, or the first "
           "after a failure, starts an attempt; the model summary's record, or 'Restored all states from the "
           "checkpoint at' after it, is the end of the set-up (the first step); 'Restoring states from the "
           "checkpoint path at .../epoch=E-step=S.ckpt' restores step S; ModelCheckpoint(verbose=True)'s 'Epoch E, "
           "global step S: ... saving model to' writes step S ('... was not in top k': progress at S); '`Trainer.fit` "
           "stopped: `max_epochs=`/`max_steps=` reached' ends the run; a Python traceback (its exception's line) or "
           "an NCCL watchdog timeout is a failure"),
    cannot=("Lightning's own handler writes no time (a log without one is refused, naming the line). Its progress "
            "bars show the time since the epoch began, not an instant: they give no event. Saves are logged only "
            "by ModelCheckpoint(verbose=True) with a monitor, when they begin, with neither their end nor their "
            "duration: each is read as a write of no duration, so its blocking time counts as compute; a restore "
            "of a step no logged save wrote is refused by measure_run. A restore of a file named without "
            "'step=' (last.ckpt) is read as the latest write's. The first step is where the set-up messages end "
            "(the sanity check's validation counts as compute). A traceback has no time: the failure is placed at "
            "the attempt's last timed line (an sacct export gives the attempts' true ends). A fit stopped by "
            "early stopping or max_time logs no end at info level; SLURM auto-requeue's checkpoint is not read."),
)
