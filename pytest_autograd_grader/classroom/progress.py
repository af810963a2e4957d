"""The class run's progress as students finish: a bar on a terminal, lines
a CI log can follow elsewhere."""

from __future__ import annotations

import sys
import time

from .class_data import counted
from .runner import Outcome


class Progress:
    """A progress bar on a terminal (tqdm), plain lines every few seconds
    elsewhere (CI logs), and the summary line at the end."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.done = 0
        self.started = time.monotonic()
        self.last_line = self.started
        self.bar = None
        if total and self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, unit="student", file=self.stream, dynamic_ncols=True)

    def update(self, outcome: Outcome) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{outcome.student}: {outcome.status}", refresh=False)
            self.bar.update(1)
            return
        now = time.monotonic()
        if now - self.last_line >= 10 or self.done == self.total:
            self.last_line = now
            elapsed = now - self.started
            rate = self.done / elapsed if elapsed > 0 else 0.0
            left = (self.total - self.done) / rate if rate else 0.0
            print(
                counted("class.progress", self.total, done=self.done, total=self.total, rate=rate, left=left),
                file=self.stream,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
