#!/usr/bin/env python3
"""A client of `pkb serve` (docs/serve.md), standard library only.

    from pkb_client import Client, reward_fn
    c = Client("http://127.0.0.1:8737", token)              # or $PKB_SERVE_URL and $PKB_SERVE_TOKEN
    rows = c.evaluate([{"problem": 1, "world": 2, "source": code}])   # submit, wait on the event stream
    rows[0]["state"], rows[0]["reward"]["value"], rows[0]["record"]["status"]

    rewards = reward_fn(prompts, completions, problem=[1, 7], world=2)  # a training loop's reward function

Command line: `pkb_client.py evaluate FILE... --problem 1 -w 2 [--timing quick]` prints each evaluation's state,
status and reward; `pkb_client.py health`.
"""
import argparse
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8737"
FINISHED = ("done", "failed", "cancelled")


class PkbError(Exception):
    """An error answer of the server: its HTTP status, the field it names and why."""

    def __init__(self, status, field, message):
        super().__init__(f"HTTP {status}: {field}: {message}")
        self.status, self.field, self.message = status, field, message


class Client:
    def __init__(self, url=None, token=None, timeout=60.0, retries=5):
        self.url = (url or os.environ.get("PKB_SERVE_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("PKB_SERVE_TOKEN", "")
        self.timeout, self.retries = timeout, retries

    def _headers(self):
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def request(self, method, path, body=None):
        """One call; 429 and 503 are retried after the server's Retry-After (at most `retries` times)."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url + path, data=data, method=method, headers=self._headers())
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    return json.loads(r.read() or b"null")
            except urllib.error.HTTPError as e:
                text = e.read()
                if e.code in (429, 503) and attempt < self.retries:
                    time.sleep(float(e.headers.get("Retry-After") or 2 ** attempt))
                    continue
                try:
                    answer = json.loads(text)
                except ValueError:
                    answer = None
                if e.code == 422 and isinstance(answer, dict) and "items" in answer:
                    return answer  # a batch whose every item was refused: the per-item errors
                err = answer.get("error", {}) if isinstance(answer, dict) else {"message": text.decode(errors="replace")}
                raise PkbError(e.code, err.get("field", ""), err.get("message", "")) from None

    def submit(self, items):
        """Queues the items (one dict each); the server's answer: batch id and, per item, id or error."""
        return self.request("POST", "/v1/evaluations", {"items": list(items)})

    def results(self, ids, shaping=None, record=True):
        q = {"ids": ",".join(ids)}
        if shaping:
            q["shaping"] = shaping
        if not record:
            q["record"] = "0"
        return self.request("GET", "/v1/evaluations?" + urllib.parse.urlencode(q))["items"]

    def get(self, eval_id, shaping=None):
        return self.request("GET", f"/v1/evaluations/{eval_id}" + (f"?shaping={shaping}" if shaping else ""))

    def cancel(self, eval_id):
        return self.request("DELETE", f"/v1/evaluations/{eval_id}")

    def prompt(self, problem, world=2, **query):
        q = urllib.parse.urlencode({"world": world, **query})
        return self.request("GET", f"/v1/problems/{problem}/prompt?{q}")

    def events(self, ids, shaping=None, timeout=None):
        """The server-sent events of these evaluations, (event, data) pairs, until `end`."""
        u = urllib.parse.urlsplit(self.url)
        conn_type = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = conn_type(u.hostname, u.port, timeout=timeout)
        q = {"ids": ",".join(ids), **({"shaping": shaping} if shaping else {})}
        conn.request("GET", (u.path or "") + "/v1/events?" + urllib.parse.urlencode(q), headers=self._headers())
        resp = conn.getresponse()
        if resp.status != 200:
            raise PkbError(resp.status, "events", resp.read().decode(errors="replace"))
        event, data = "", ""
        try:
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif line == "" and event:
                    yield event, json.loads(data)
                    if event == "end":
                        return
                    event, data = "", ""
        finally:
            conn.close()

    def evaluate(self, items, shaping=None, timeout=None):
        """Submits a batch and waits on its event stream; one row per item, in order (a refused item: its error).
        The stream is opened again if it breaks (a restarted server finishes what it accepted)."""
        answer = self.submit(items)
        ids = [it["id"] for it in answer["items"] if "id" in it]
        deadline = None if timeout is None else time.monotonic() + timeout
        while ids:
            try:
                for _ in self.events(ids, shaping=shaping, timeout=timeout):
                    pass
                break
            except (OSError, http.client.HTTPException):
                if deadline is not None and time.monotonic() > deadline:
                    raise
                time.sleep(1)
        rows = {r["id"]: r for r in (self.results(ids, shaping=shaping) if ids else [])}
        return [rows.get(it["id"], it) if "id" in it else it for it in answer["items"]]


FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def extract_code(completion):
    """The candidate in a model's answer: its last ```cuda, ```cpp (or unlabelled) fenced block; None if none."""
    if isinstance(completion, list):  # chat format: the last assistant message
        completion = next((m.get("content", "") for m in reversed(completion) if m.get("role") == "assistant"), "")
    blocks = [(lang.lower(), code) for lang, code in FENCE.findall(completion or "")]
    preferred = [code for lang, code in blocks if lang in ("cuda", "cu", "cpp", "c++", "cxx", "c")]
    chosen = preferred or [code for lang, code in blocks if lang == ""]
    return chosen[-1] if chosen else None


def _per_sample(value, n):
    return list(value) if isinstance(value, (list, tuple)) else [value] * n


def reward_fn(prompts, completions, problem=None, world=2, params=None, timing="standard", shaping="ladder-v1",
              client=None, no_code_reward=-1.0, failed_reward=0.0, **kwargs):
    """A reward function for RL trainers (TRL's signature: extra dataset columns arrive as keyword lists).
    `problem` (and `world`, `params`) per sample or one for all. Completions without code get `no_code_reward`
    without a request; evaluations pkb could not finish (failed, cancelled) get `failed_reward`."""
    n = len(completions)
    problems, worlds, params_list = _per_sample(problem, n), _per_sample(world, n), _per_sample(params, n)
    client = client or Client()
    rewards, items, where = [no_code_reward] * n, [], []
    for i, completion in enumerate(completions):
        code = extract_code(completion)
        if code is None or problems[i] is None:
            continue
        item = {"problem": problems[i], "world": worlds[i], "source": code, "timing": timing}
        if params_list[i]:
            item["params"] = params_list[i]
        items.append(item)
        where.append(i)
    if not items:
        return rewards
    for i, row in zip(where, client.evaluate(items, shaping=shaping)):
        value = (row.get("reward") or {}).get("value") if row.get("state") == "done" else None
        rewards[i] = failed_reward if value is None else value
    return rewards


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default=None)
    p.add_argument("--token", default=None)
    sub = p.add_subparsers(dest="cmd", required=True)
    ev = sub.add_parser("evaluate")
    ev.add_argument("files", nargs="+")
    ev.add_argument("--problem", required=True)
    ev.add_argument("-w", "--world", type=int, default=2)
    ev.add_argument("--timing", default="standard")
    ev.add_argument("--param", action="append", default=[], help="NAME=VALUE")
    ev.add_argument("--shaping", default=None)
    sub.add_parser("health")
    a = p.parse_args(argv)
    c = Client(a.url, a.token)
    if a.cmd == "health":
        print(json.dumps(c.request("GET", "/v1/health"), indent=2))
        return 0
    params = {k: int(v) for k, v in (s.split("=", 1) for s in a.param)}
    items = [{"problem": a.problem, "world": a.world, "timing": a.timing, "source": open(f).read(),
              **({"params": params} if params else {})} for f in a.files]
    for f, row in zip(a.files, c.evaluate(items, shaping=a.shaping)):
        reward = (row.get("reward") or {}).get("value")
        print(f"{f}: {row.get('state', 'refused')} {row.get('status', '')} reward={reward} "
              f"{row.get('error', '')}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
