"""Generated vLLM logs with ground truth per (process, hour), and the ways operators keep them:
split into stdout and stderr, rotated into parts, wrapped by journald on a second clock, doubled.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tests.scan.vllm_logs import P, traceback

MESSAGES = (
    "Unexpected token 200002 while expecting start token 200006",
    'unexpected tokens remaining in message header: Some("I must refuse this request")',
    "Unknown role: assistantassistant",
)


@dataclass
class GeneratedLog:
    """Lines of one vLLM server log, and per (pid, ISO hour) its requests and failures."""

    lines: list[str] = field(default_factory=list)
    stamps: list[datetime] = field(default_factory=list)  # each line's time (its own or the last)
    requests: Counter[tuple[int, str]] = field(default_factory=Counter)
    failures: Counter[tuple[int, str]] = field(default_factory=Counter)

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    @property
    def rate(self) -> float:
        return sum(self.failures.values()) / sum(self.requests.values())

    def add(self, line: str, stamp: datetime) -> None:
        self.lines.append(line)
        self.stamps.append(stamp)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%m-%d %H:%M:%S")


def vllm_log(seed: int, requests: int = 60, pids: tuple[int, ...] = (4121, 4377)) -> GeneratedLog:
    """A log of `requests` requests over a few hours and processes; about one in four fails,
    several failures may share one second. Every request logs `Received request` and an access
    line; a failure logs vLLM's traceback."""
    rng = random.Random(seed)
    log = GeneratedLog()
    moment = datetime(2026, 11, 27, 9, 58, 0)
    for number in range(requests):
        moment += timedelta(seconds=rng.choice((0, 0, 1, 7, 61, 400)))
        pid = rng.choice(pids)
        hour = moment.strftime("%Y-%m-%dT%H")
        stamp = _stamp(moment)
        log.add(
            P.format(pid=pid)
            + f"INFO {stamp} [logger.py:71] Received request chatcmpl-{seed}-{number}: "
            "params: SamplingParams(n=1, temperature=1.0, max_tokens=512), "
            "prompt_token_ids: None, lora_request: None.",
            moment,
        )
        log.requests[(pid, hour)] += 1
        if rng.random() < 0.25:
            for line in traceback(pid, stamp, rng.choice(MESSAGES)):
                log.add(line, moment)
            log.failures[(pid, hour)] += 1
        log.add(
            P.format(pid=pid)
            + 'INFO:     10.0.0.2:5555 - "POST /v1/chat/completions HTTP/1.1" '
            + ("500 Internal Server Error" if log.failures[(pid, hour)] else "200 OK"),
            moment,
        )
    return log


def split_streams(log: GeneratedLog) -> tuple[str, str]:
    """stdout (INFO lines: requests and access lines) and stderr (ERROR lines: tracebacks), as
    containers and systemd units often keep them."""
    out = [line for line in log.lines if ") ERROR " not in line]
    err = [line for line in log.lines if ") ERROR " in line]
    return "".join(x + "\n" for x in out), "".join(x + "\n" for x in err)


def rotated(log: GeneratedLog, parts: int, seed: int) -> list[str]:
    """The log cut into `parts` pieces at random line boundaries, oldest first."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(log.lines)), parts - 1))
    bounds = [0, *cuts, len(log.lines)]
    return ["".join(x + "\n" for x in log.lines[a:b]) for a, b in itertools.pairwise(bounds)]


def journald(log: GeneratedLog, ahead: timedelta = timedelta(hours=5)) -> str:
    """`journalctl -o json` of the log: the journal's clock (UTC) `ahead` of the log's own
    stamps (a host at UTC-5), the process id beside each line."""
    epoch = datetime(1970, 1, 1)
    out = []
    for line, moment in zip(log.lines, log.stamps, strict=True):
        micros = int((moment + ahead - epoch).total_seconds()) * 1_000_000
        record = {
            "__REALTIME_TIMESTAMP": str(micros),
            "_PID": "4000",
            "_HOSTNAME": "gpu-1",
            "_SYSTEMD_UNIT": "vllm.service",
            "MESSAGE": line,
        }
        out.append(json.dumps(record) + "\n")
    return "".join(out)


def llamacpp_log(seed: int, requests: int = 60) -> GeneratedLog:
    """A llama-server log (no pid, no time of its own) of `requests` chat requests, about one
    in four failing: the chat parser's error (`got exception: {...}`), then the request line
    llama-server logs per HTTP request (`srv  log_server_r: request: POST PATH ADDR STATUS`).
    Requests the rate must not count are mixed in: /slots, /tokenize, /v1/embeddings, and in
    verbose mode the request body and the response. Its truth is under pid 0, its stamps
    (one request a minute or so) for wrappers that add a clock."""
    rng = random.Random(seed)
    log = GeneratedLog()
    moment = datetime(2026, 11, 27, 9, 31, 0)
    log.add("main: server is listening on http://127.0.0.1:8080 - starting the main loop", moment)
    for number in range(requests):
        moment += timedelta(seconds=rng.choice((0, 1, 7, 61, 400)))
        hour = moment.strftime("%Y-%m-%dT%H")
        log.add(f"slot launch_slot_: id  0 | task {number} | processing task", moment)
        failed = rng.random() < 0.25
        if failed:
            log.add(
                'srv    operator(): got exception: {"code":500,"message":"Failed to parse input '
                f"at pos {30 + number}: <|start|>assistant<|channel|>final <|constrain|>json"
                '<|message|>","type":"server_error"}',
                moment,
            )
            log.failures[(0, hour)] += 1
        path = rng.choice(("/v1/chat/completions", "/chat/completions", "/completion"))
        verb = rng.choice(("request", "done request"))
        log.add(
            f"srv  log_server_r: {verb}: POST {path} 127.0.0.1 {500 if failed else 200}", moment
        )
        log.requests[(0, hour)] += 1
        if number % 3 == 0:
            log.add('srv  log_server_r: request:  {"messages": [{"role": "user"}]}', moment)
            log.add('srv  log_server_r: response: {"choices": []}', moment)
        if number % 4 == 0:
            other = rng.choice(("GET /slots", "POST /tokenize", "POST /v1/embeddings"))
            log.add(f"srv  log_server_r: request: {other} 127.0.0.1 200", moment)
    return log
