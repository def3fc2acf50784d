#!/usr/bin/env python3
"""An aslrun activity worker in plain Python (standard library only).

It long-polls an `aslrun serve` for the tasks of one activity, works on
each (here: summarizes a document), sends heartbeats while it works, and
answers with the task token:

    POST /v1/activities/{name}/poll      {"workerName": ...}  -> 200 task | 204 none yet
    POST /v1/task-tokens/heartbeat       {"token"}
    POST /v1/task-tokens/success         {"token", "output"}
    POST /v1/task-tokens/failure         {"token", "error", "cause"}

Usage:

    ASLRUN_TOKEN=$(cat worker.token) python3 worker.py --url http://127.0.0.1:8080

The token is a bearer token with the worker role (aslrun token create NAME
--role worker). See README.md beside this file.
"""

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


class DocumentRejected(Exception):
    """A document the worker refuses: the Task fails with DocumentRejected."""


def summarize(task_input):
    """The work: the first maxWords words of a document, and its length."""
    doc_id = task_input.get("id")
    text = task_input.get("text")
    if not isinstance(text, str):
        raise TypeError("the text of document %s is %s, not a string" % (doc_id, type(text).__name__))
    if not text.strip():
        raise DocumentRejected("document %s has no text" % doc_id)
    words = text.split()
    return {"id": doc_id, "summary": " ".join(words[: task_input.get("maxWords", 10)]), "words": len(words)}


class Busy(RuntimeError):
    """The execution is busy (409): ask again in a moment."""


class API:
    """A small client of aslrun's HTTP API."""

    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def post(self, path, body, timeout):
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + self.token},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                data = resp.read()
                return resp.status, json.loads(data) if data else None
        except urllib.error.HTTPError as e:
            # A problem document (RFC 9457): say what the server refused.
            detail = e.read().decode(errors="replace")
            kind = Busy if e.code == 409 else RuntimeError
            raise kind("POST %s: %d %s" % (path, e.code, detail)) from None

    def poll(self, activity, worker, wait):
        path = "/v1/activities/%s/poll?wait=%d" % (urllib.parse.quote(activity, safe=""), wait)
        status, task = self.post(path, {"workerName": worker}, timeout=wait + 30)
        return task if status == 200 else None

    def heartbeat(self, token):
        self.post("/v1/task-tokens/heartbeat", {"token": token}, timeout=30)

    def succeed(self, token, output):
        self.post("/v1/task-tokens/success", {"token": token, "output": output}, timeout=30)

    def fail(self, token, error, cause):
        self.post("/v1/task-tokens/failure", {"token": token, "error": error, "cause": cause}, timeout=30)


def heartbeats(api, token, every, done):
    """Sends a heartbeat now, then every `every` seconds until done is set."""
    while True:
        try:
            api.heartbeat(token)
        except Exception as e:  # the task ended (a timeout): stop beating
            print("heartbeat: %s" % e, file=sys.stderr)
            return
        if done.wait(every):
            return


def work(api, task, heartbeat_every):
    """Works on one task, with heartbeats meanwhile, and answers its token."""
    token = task["taskToken"]
    done = threading.Event()
    beat = threading.Thread(target=heartbeats, args=(api, token, heartbeat_every, done), daemon=True)
    beat.start()
    try:
        answer = ("succeeded", api.succeed, (token, summarize(task["input"])))
    except DocumentRejected as e:
        answer = ("rejected", api.fail, (token, "DocumentRejected", str(e)))
    except Exception as e:
        # Anything unexpected: the Task fails with States.TaskFailed.
        answer = ("failed", api.fail, (token, "States.TaskFailed", "%s: %s" % (type(e).__name__, e)))
    finally:
        done.set()
        beat.join()
    outcome, send, send_args = answer
    # An execution busy with another of its tasks (409) is asked again.
    for attempt in range(20):
        try:
            send(*send_args)
            return outcome
        except Busy:
            time.sleep(min(0.05 * 2 ** attempt, 2))
    send(*send_args)
    return outcome


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("ASLRUN_URL", "http://127.0.0.1:8080"), help="the server's base URL")
    p.add_argument("--token-file", help="a file holding the bearer token (default: $ASLRUN_TOKEN)")
    p.add_argument("--activity", default="summarize", help="the activity's NAME (of arn:aws:states:REGION:ACCOUNT:activity:NAME)")
    p.add_argument("--name", default="py-worker-%d" % os.getpid(), help="this worker's name (workerName)")
    p.add_argument("--wait", type=int, default=20, help="how long one poll waits, in seconds (0 to 60)")
    p.add_argument("--heartbeat-every", type=float, default=10, help="seconds between heartbeats while working")
    p.add_argument("--tasks", type=int, default=0, help="stop after this many tasks (0: never)")
    args = p.parse_args()

    token = os.environ.get("ASLRUN_TOKEN", "")
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    if not token:
        sys.exit("worker.py: give a worker token with --token-file or ASLRUN_TOKEN")
    api = API(args.url, token)
    handled = 0
    while args.tasks == 0 or handled < args.tasks:
        try:
            task = api.poll(args.activity, args.name, args.wait)
        except (OSError, RuntimeError) as e:
            # The server is away (a restart) or refused: try again soon.
            print("poll: %s" % e, file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        if task is None:
            continue  # none came within the wait: poll again
        outcome = work(api, task, args.heartbeat_every)
        handled += 1
        print("%s %s %s" % (task["execution"], task["state"], outcome), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
