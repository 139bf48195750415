"""A run's events as each framework's trainer logs them, for the sample trainer logs (`_make`).

The line forms are those the readers in ``relmodel/record/_trainers/`` document (each from its framework's
source). A failure is a rank's Python traceback, which carries no time: each reader places it as its format
allows, so a log measures the run as well as its framework's lines can tell.
"""

from __future__ import annotations

import datetime

SECONDS_PER_ITERATION = 6  # the events' steps are seconds of compute; the trainers count iterations
TOTAL_ITERATIONS = 144_000
LOG_INTERVAL = 100  # Megatron-LM prints an iteration line every this many iterations
NS = 10**9


def attempts(record) -> list[list[tuple]]:
    """The record's events, attempt by attempt: (kind, time in ns, iteration, duration in ns, reason)."""
    ev = record.events
    found = []
    for kind, time_ns, step, duration_ns, reason in zip(ev.kind.values, ev.time_ns.values, ev.step.values,
                                                        ev.duration_ns.values, ev.reason.values):
        if kind == "attempt_start":
            found.append([])
        found[-1].append((str(kind), int(time_ns), max(int(step), 0) // SECONDS_PER_ITERATION, int(duration_ns),
                          str(reason)))
    return found


def _clock(time_ns: int, *, digits: int = 3, mark: str = ",", between: str = " ") -> str:
    """Python logging's ``asctime`` (milliseconds after a comma) or another layout of a UTC time."""
    at = datetime.datetime.fromtimestamp(time_ns // NS, datetime.timezone.utc)
    fraction = f"{mark}{time_ns % NS // 10 ** (9 - digits):0{digits}d}" if digits else ""
    return at.strftime(f"%Y-%m-%d{between}%H:%M:%S") + fraction


def _traceback(script: str, reason: str) -> list[str]:
    return ["[rank0]: Traceback (most recent call last):", f'[rank0]:   File "{script}", line 600, in <module>',
            f"[rank0]: RuntimeError: {reason}"]


def torchtitan_lines(runs) -> list[str]:
    """torchtitan under ``torchrun --tee``; torchrun's summary gives each failure's time to the second."""
    def logged(time_ns, message):
        return f"[rank0]:[titan] {_clock(time_ns)} - root - INFO - {message}"

    def step(time_ns, iteration):
        return logged(time_ns, f"step: {iteration:2}  loss: {2.5:7.4f}  grad_norm: {0.8:7.4f}  memory: "
                               "61.20GiB(77.30%)  tps: 1,024  tflops: 380.12  mfu: 38.43%")

    lines = []
    for attempt in runs:
        began, loading = attempt[0][1], False
        for kind, time_ns, iteration, duration_ns, reason in attempt:
            if kind == "attempt_start":
                lines.append(logged(time_ns, "Starting job: Llama 3 70B pre-training"))
            elif kind == "checkpoint_restored" and iteration:
                loading = True
                lines.append(logged(time_ns, f"Loading the checkpoint from ./outputs/checkpoint/step-{iteration}."))
            elif kind == "first_step":
                if loading:
                    lines.append(logged(time_ns, f"Finished loading the checkpoint in {(time_ns - began) / NS:.2f} "
                                                 "seconds."))
                lines.append(logged(time_ns, f"Training starts at step {iteration + 1}."))
            elif kind == "checkpoint_written":
                lines += [step(time_ns - duration_ns, iteration),
                          logged(time_ns, "Finished saving the checkpoint (or staging if async is enabled)in "
                                          f"{duration_ns / NS:.2f} seconds.")]
            elif kind in ("failure", "interruption"):
                lines += [*_traceback("/torchtitan/torchtitan/train.py", reason),
                          "Root Cause (first observed failure):", "[0]:",
                          f"  time      : {_clock(time_ns, digits=0, between='_')}"]
            elif kind == "run_end":
                lines += [step(time_ns, iteration), logged(time_ns, "Training completed")]
    return lines


def megatron_lines(runs) -> list[str]:
    """Megatron-LM: an iteration line every `LOG_INTERVAL` iterations places a failure; a planned stop is
    its exit at an iteration."""
    def stamp(label, time_ns):
        return f"[{label}] datetime: {_clock(time_ns, digits=6, mark='.')} "

    def iteration_line(time_ns, iteration):
        return (f" [{_clock(time_ns, digits=6, mark='.')}] iteration {iteration:8d}/{TOTAL_ITERATIONS:8d} | "
                f"consumed samples: {iteration * 1024:12d} | elapsed time per iteration (ms): 6000.0 | "
                "learning rate: 1.500000E-04 | global batch size:  1024 | lm loss: 2.500000E+00 | loss scale: 1.0 | "
                "grad norm: 0.800 | number of skipped iterations:   0 | number of nan iterations:   0 |")

    def at(time_ns):
        return _clock(time_ns, digits=6, mark=".")

    lines = []
    for attempt in runs:
        since = None  # the time and iteration training last went on from
        for kind, time_ns, iteration, duration_ns, reason in attempt:
            if kind == "attempt_start":
                lines += ["------------------------ arguments ------------------------",
                          "  tensor_model_parallel_size ...................... 8",
                          "-------------------- end of arguments ---------------------",
                          "time to initialize megatron (seconds): 60.000",
                          stamp("after megatron is initialized", time_ns + 60 * NS)]
            elif kind == "checkpoint_restored" and iteration:
                lines.append(f"  successfully loaded checkpoint from /checkpoints [ t 1/8, p 1/16 ] at iteration "
                             f"{iteration}")
            elif kind == "first_step":
                lines.append(stamp("before the start of training step", time_ns))
                since = (time_ns, iteration)
            elif kind == "checkpoint_written":
                lines += [iteration_line(time_ns - duration_ns, iteration),
                          f"[{at(time_ns - duration_ns)}] saving checkpoint at iteration {iteration:7d} to "
                          "/checkpoints in torch_dist format",
                          f"  [{at(time_ns)}] successfully saved checkpoint from iteration {iteration:7d} to "
                          "/checkpoints [ t 1/8, p 1/16 ]"]
                since = (time_ns, iteration)
            elif kind in ("failure", "interruption"):
                logged = since[1] if since else 0
                if since is not None:
                    done = since[1] + (time_ns - since[0]) // (SECONDS_PER_ITERATION * NS)
                    logged = max(done // LOG_INTERVAL * LOG_INTERVAL, since[1])
                    if logged > since[1]:
                        lines.append(iteration_line(since[0] + (logged - since[1]) * SECONDS_PER_ITERATION * NS,
                                                    logged))
                lines += ([stamp(f"exiting program at iteration {logged}", time_ns)] if kind == "interruption"
                          else _traceback("/workspace/megatron/pretrain_gpt.py", reason))
            elif kind == "run_end":
                lines += [iteration_line(time_ns, iteration), stamp("after training is done", time_ns)]
    return lines


def hf_trainer_lines(runs) -> list[str]:
    """Hugging Face Trainer with transformers' explicit format: a save is logged as it begins, and a failure
    is placed at the attempt's last timed line."""
    def logged(where, time_ns, message):
        return f"[INFO|{where}] {_clock(time_ns)} >> {message}"

    lines = []
    for attempt in runs:
        resumed = 0
        for kind, time_ns, iteration, duration_ns, reason in attempt:
            if kind == "attempt_start":
                lines.append(logged("configuration_utils.py:733", time_ns, "loading configuration file config.json"))
            elif kind == "checkpoint_restored":
                resumed = iteration
            elif kind == "first_step":
                lines += [logged("trainer.py:2078", time_ns, "***** Running training *****"),
                          logged("trainer.py:2079", time_ns, "  Num examples = 147,456,000"),
                          logged("trainer.py:2086", time_ns, f"  Total optimization steps = {TOTAL_ITERATIONS:,}")]
                if resumed:
                    lines.append(logged("trainer.py:2105", time_ns, f"  Continuing training from global step "
                                                                     f"{resumed}"))
            elif kind == "checkpoint_written":
                lines += [logged("trainer.py:3800", time_ns - duration_ns,
                                 f"Saving model checkpoint to out/checkpoint-{iteration}"),
                          logged("modeling_utils.py:3042", time_ns,
                                 f"Model weights saved in out/checkpoint-{iteration}/model.safetensors")]
            elif kind in ("failure", "interruption"):
                lines += _traceback("run_clm.py", reason)
            elif kind == "run_end":
                lines += [logged("trainer.py:2383", time_ns, ""), "",
                          "Training completed. Do not forget to share your model on huggingface.co/models =)", ""]
    return lines


def lightning_lines(runs) -> list[str]:
    """PyTorch Lightning with ``logging.basicConfig``'s times and a verbose ModelCheckpoint: a save is logged
    as it begins, and a failure is placed at the attempt's last timed line."""
    def logged(time_ns, message, name="lightning.pytorch.utilities.rank_zero"):
        return f"{_clock(time_ns)} INFO {name}: {message}"

    lines = []
    for attempt in runs:
        restored = 0
        for kind, time_ns, iteration, duration_ns, reason in attempt:
            checkpoint = f"/ckpt/epoch=0-step={iteration}.ckpt"
            if kind == "attempt_start":
                lines += [logged(time_ns, "GPU available: True (cuda), used: True"),
                          logged(time_ns, "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
                                 "lightning.pytorch.accelerators.cuda")]
            elif kind == "checkpoint_restored" and iteration:
                restored = iteration
                lines.append(logged(time_ns, f"Restoring states from the checkpoint path at {checkpoint}"))
            elif kind == "first_step":
                lines += [logged(time_ns, "", "lightning.pytorch.callbacks.model_summary"),
                          "  | Name  | Type | Params | Mode ", "0 | model | GPT  | 70.6 B | train",
                          "70.6 B    Trainable params"]
                if restored:
                    lines.append(logged(time_ns, "Restored all states from the checkpoint at "
                                                 f"/ckpt/epoch=0-step={restored}.ckpt"))
            elif kind == "checkpoint_written":
                lines.append(logged(time_ns - duration_ns, f"Epoch 0, global step {iteration}: 'train_loss' reached "
                                                           f"2.50000 (best 2.50000), saving model to '{checkpoint}' "
                                                           "as top 1"))
            elif kind in ("failure", "interruption"):
                lines += _traceback("train.py", reason)
            elif kind == "run_end":
                lines.append(logged(time_ns, f"`Trainer.fit` stopped: `max_steps={iteration}` reached."))
    return lines
