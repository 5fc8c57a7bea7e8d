"""Wrap a plain log the way production stores it (generated in tests, never stored)."""

from __future__ import annotations

import json
from collections.abc import Callable

SPLIT = 16 * 1024  # the Docker engine's and CRI's record size
STAMP = "2026-11-27T10:00:01.123456789Z"
REALTIME = "1795773601123456"  # 2026-11-27 10:00:01.123456 UTC in µs
LOKI_NS = 1795773601123456789


def docker(lines: list[str]) -> bytes:
    out = []
    for line in lines:
        body = line + "\n"
        while len(body) > SPLIT:  # split as the engine does: no "\n" until the last piece
            out.append(json.dumps({"log": body[:SPLIT], "stream": "stderr", "time": STAMP}))
            body = body[SPLIT:]
        out.append(json.dumps({"log": body, "stream": "stderr", "time": STAMP}))
    return _join(out)


def cri(lines: list[str]) -> bytes:
    out = []
    for line in lines:
        while len(line) > SPLIT:
            out.append(f"{STAMP} stderr P {line[:SPLIT]}")
            line = line[SPLIT:]
        out.append(f"{STAMP} stderr F {line}")
    return _join(out)


def journal_json(lines: list[str]) -> bytes:
    out = []
    for number, line in enumerate(lines):
        record: dict[str, object] = {
            "__REALTIME_TIMESTAMP": REALTIME,
            "_PID": "1234",
            "_HOSTNAME": "gpu-1",
        }
        if number % 2 or any(ord(c) < 32 and c != "\t" for c in line):
            record["MESSAGE"] = list(line.encode())  # journald's byte-array form
        else:
            record["MESSAGE"] = line
        out.append(json.dumps(record))
    return _join(out)


def journal_short(lines: list[str]) -> bytes:
    return _join([f"Nov 27 10:00:01 gpu-1 vllm[1234]: {line}" for line in lines])


def journal_short_iso(lines: list[str]) -> bytes:
    return _join([f"2026-11-27T10:00:01+0000 gpu-1 vllm[1234]: {line}" for line in lines])


def vector(lines: list[str]) -> bytes:
    return _join(
        [
            json.dumps(
                {"host": "gpu-1", "message": line, "source_type": "file", "timestamp": STAMP}
            )
            for line in lines
        ]
    )


def promtail(lines: list[str]) -> bytes:
    return _join(
        [json.dumps({"line": line, "ts": STAMP, "labels": {"job": "vllm"}}) for line in lines]
    )


def fluent_log(lines: list[str]) -> bytes:
    return _join(
        [json.dumps({"log": line + "\n", "time": STAMP, "host": "gpu-1"}) for line in lines]
    )


def logcli_jsonl(lines: list[str]) -> bytes:
    return _join(
        [
            json.dumps(
                {"labels": {"app": "vllm"}, "line": line, "timestamp": "2026-11-27T11:00:01+01:00"}
            )
            for line in lines
        ]
    )


def logcli(lines: list[str]) -> bytes:
    return _join([f'2026-11-27T11:00:01+01:00 {{app="vllm"}} {line}' for line in lines])


def loki_query_range(lines: list[str]) -> bytes:
    # Newest first, as Loki answers by default, pretty-printed as `| jq .` leaves it.
    values = [[str(LOKI_NS + i), line] for i, line in enumerate(lines)][::-1]
    document = {
        "status": "success",
        "data": {
            "resultType": "streams",
            "result": [{"stream": {"host": "gpu-1"}, "values": values}],
        },
    }
    return json.dumps(document, indent=2).encode()


def _join(records: list[str]) -> bytes:
    return ("\n".join(records) + "\n").encode()


WRAPPERS: dict[str, Callable[[list[str]], bytes]] = {
    "docker": docker,
    "cri": cri,
    "journal-json": journal_json,
    "journal-short": journal_short,
    "journal-short-iso": journal_short_iso,
    "vector": vector,
    "promtail": promtail,
    "fluent-log": fluent_log,
    "logcli-jsonl": logcli_jsonl,
    "logcli": logcli,
    "loki-query-range": loki_query_range,
}
