"""Write corral agents in Python, with the standard library only.

An agent is a program that reads one JSON object per line on stdin and
writes one per line on stdout (docs/protocol.md).  This module does the
reading and writing: it answers corral's pings, sorts what arrives into
requests, tasks, child results, messages and notices, calls your handler
for each request and task, and writes its reply.  It also makes the
control calls an agent needs for sub-agents: spawn a child, wait for its
result, send an envelope to another agent, stop, list.

    from corral_agent import Agent

    agent = Agent("Greeter")

    @agent.on("plan")
    def plan(req):
        return agent.reply(req, "Hello, " + req.text, intent="finalize",
                           confidence=0.9)

    agent.run()

How it behaves:

- A handler returns the reply: an envelope from reply() or error(), or
  a string (a reply with that text).  An exception in a handler, or a
  reply that is not a valid envelope, is answered with an error envelope
  (content.type "error") and logged with its traceback; the agent goes on.
- Pings are answered at once by a reader thread, even while a handler is
  busy.  Notices, messages and child results are never answered; they go
  to the on_notice, on_message and on_child_result callbacks (which log
  them by default).
- Requests are served one at a time, in arrival order.  While a handler
  waits (call(), spawn(), wait(), send()), requests that arrive are kept
  for later; notices and messages go to their callbacks meanwhile.
- Once run() (or the first control call) starts, stdout belongs to the
  protocol: print() and anything a subprocess writes on its stdout go to
  stderr, which corral logs.  stdin is the protocol's too: the agent
  reads /dev/null if it reads sys.stdin.
- Lines that are not JSON objects are skipped with a line on stderr.  At
  the end of input run() returns 0, after serving what had arrived.

Python 3.9 or later; one file, no dependencies: copy it next to your agent
or put its directory in PYTHONPATH.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import re
import sys
import threading
import time
import traceback
from collections import deque
from datetime import datetime, timezone
from typing import (Any, Callable, Deque, Dict, Iterable, List, NamedTuple,
                    Optional, Sequence, Set, Union)

__all__ = [
    "Agent", "Message", "Child", "CallError", "InputClosed", "action",
    "artifact", "INTENTS", "E_NOT_FOUND", "E_SPAWN_FAILED", "E_LIMIT",
    "E_FORBIDDEN", "E_UNKNOWN_AGENT", "E_QUOTA", "E_NO_ADDRESS",
    "E_TERMINATED",
]

__version__ = "1"

PROTOCOL = "multiagent-1.0"

#: The intents an envelope may carry.
INTENTS = ("plan", "decompose", "execute", "route", "retrieve", "analyze",
           "summarize", "reflect", "finalize", "tool.call") + tuple(
    i for i in os.environ.get("CORRAL_INTENTS", "").split(",") if i)
#: The ten standard ones come first; the workflow's own (its intents:
#: key, which corral passes in CORRAL_INTENTS) follow.
ROLES = ("agent", "user", "system", "tool")
CONTENT_TYPES = ("text", "code", "json", "tool_result", "error")
CATEGORIES = ("TIMEOUT", "UNAVAILABLE", "REJECTED", "INTERNAL")

#: JSON-RPC error codes of corral's control calls: MAP's (docs/protocol.md).
#: CallError.reason tells apart the refusals that share a code.
E_FORBIDDEN = 1003        # the caller may not reach that agent
E_NO_ADDRESS = 2000       # the address matches no agent
E_NOT_FOUND = 2001        # no such agent
E_TERMINATED = 3003       # the target has stopped
E_SPAWN_FAILED = 3004     # not in the workflow's agents, or could not start
E_UNKNOWN_AGENT = E_SPAWN_FAILED    # reason "unknown_agent"
E_LIMIT = 4000            # fan-out or agents alive: try again later
E_QUOTA = 4002            # depth or budget: trying again will not help

MAX_LINE = 64 * 1024 * 1024     # longer input lines are skipped whole
CALL_TIMEOUT = 30.0             # seconds a control call waits by default
_READ_CHUNK = 65536
_NUL_ESCAPE = re.compile(r'(?<!\\)(?:\\\\)*\\u0000')

Envelope = Dict[str, Any]
Handler = Callable[["Message"], Union[Envelope, str, None]]
Callback = Callable[["Message"], None]


class CallError(Exception):
    """corral refused a control call: code (E_LIMIT, ...), message, data."""

    def __init__(self, method: str, code: Optional[int], message: str,
                 data: Any = None) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data

    @property
    def reason(self) -> Optional[str]:
        """Why, in a word, when corral says: "fan_out", "depth",
        "budget", "unknown_agent", ... (error.data.details.reason)."""
        details = _obj(_obj(self.data).get("details"))
        r = details.get("reason")
        return r if isinstance(r, str) else None


class InputClosed(BaseException):
    """corral closed the agent's input (or output) while it waited.

    Raised out of call(), spawn(), wait() and send() so that a handler
    unwinds; run() catches it and returns.  It derives from BaseException
    so that a handler's "except Exception" does not swallow it.
    """


def _obj(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


class Message:
    """One envelope that arrived, with its members at hand.

    kind is "request", "task", "child_result", "message", "notice",
    "cancel" (a request we work on was cancelled: its reply will be
    dropped) or "progress" (a child's partial output about its task).
    Absent strings are "", absent objects {} and absent lists [];
    env is the whole envelope as a dict.
    """

    __slots__ = ("env", "kind")

    def __init__(self, env: Envelope, kind: str) -> None:
        self.env = env
        self.kind = kind

    @property
    def id(self) -> str:
        """trace.id: what a reply names in trace.parents."""
        return _str(_obj(self.env.get("trace")).get("id"))

    @property
    def intent(self) -> str:
        return _str(self.env.get("intent"))

    @property
    def task(self) -> str:
        return _str(self.env.get("task"))

    @property
    def text(self) -> str:
        """content.text."""
        return _str(_obj(self.env.get("content")).get("text"))

    @property
    def data(self) -> Any:
        """content.data, or None."""
        return _obj(self.env.get("content")).get("data")

    @property
    def content_type(self) -> str:
        return _str(_obj(self.env.get("content")).get("type"))

    @property
    def is_error(self) -> bool:
        """content.type is "error": a failure, never a result."""
        return self.content_type == "error"

    @property
    def context(self) -> str:
        """inputs.context: the text of the reply that proposed this work."""
        return _str(_obj(self.env.get("inputs")).get("context"))

    @property
    def params(self) -> Dict[str, Any]:
        """inputs.parameters: a next action's args."""
        return _obj(_obj(self.env.get("inputs")).get("parameters"))

    def param(self, key: str, default: Any = None) -> Any:
        """One of inputs.parameters, or default."""
        return self.params.get(key, default)

    @property
    def actions(self) -> List[Dict[str, Any]]:
        """outputs.next_actions."""
        v = _obj(self.env.get("outputs")).get("next_actions")
        return v if isinstance(v, list) else []

    @property
    def artifacts(self) -> List[Dict[str, Any]]:
        """outputs.artifacts."""
        v = _obj(self.env.get("outputs")).get("artifacts")
        return v if isinstance(v, list) else []

    @property
    def confidence(self) -> Dict[str, Any]:
        return _obj(self.env.get("confidence"))

    @property
    def score(self) -> Optional[float]:
        """confidence.score, or None."""
        v = self.confidence.get("score")
        return float(v) if isinstance(v, (int, float)) else None

    @property
    def author(self) -> Dict[str, Any]:
        """The agent member: {id, name, model, ...} of whoever wrote it."""
        return _obj(self.env.get("agent"))

    @property
    def mark(self) -> Dict[str, Any]:
        """The corral member corral put on the envelope."""
        return _obj(self.env.get("corral"))

    @property
    def is_task(self) -> bool:
        """The first request of a spawned child: answer it with finalize."""
        return self.kind == "task"

    @property
    def parent(self) -> str:
        """A task's parent agent id."""
        return _str(self.mark.get("parent"))

    @property
    def sender(self) -> str:
        """A message's sender (corral.from)."""
        return _str(self.mark.get("from"))

    @property
    def child(self) -> str:
        """A child result's child id."""
        return _str(self.mark.get("child"))

    @property
    def spawn(self) -> str:
        """A child result's task id (what spawn() returned as task)."""
        return _str(self.mark.get("spawn"))

    @property
    def ok(self) -> bool:
        """A child result: the child finished its task."""
        return self.mark.get("ok") is True

    @property
    def reflect(self) -> Optional[Dict[str, Any]]:
        """On a reflect request: {"of": reply id, "intent": its intent,
        "round": n}; None otherwise."""
        v = self.mark.get("reflect")
        return v if isinstance(v, dict) else None

    @property
    def retry_count(self) -> int:
        v = self.mark.get("retry_count")
        return v if isinstance(v, int) else 0

    def __repr__(self) -> str:
        return (f"Message(kind={self.kind!r}, id={self.id!r}, "
                f"intent={self.intent!r}, task={self.task!r})")


class Child(NamedTuple):
    """A child spawned with Agent.spawn()."""

    id: str             #: its agent id, e.g. "lookup-3"
    task: str           #: its task's id; its result's Message.spawn
    name: str           #: the workflow entry it was made from
    info: Dict[str, Any]    #: the agent object corral answered with


def action(intent: str, task: str,
           args: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One entry of outputs.next_actions: work corral routes by intent,
    with args as the new request's inputs.parameters."""
    if intent not in INTENTS:
        raise ValueError(f"next action intent {intent!r} is not one of "
                         f"{', '.join(INTENTS)}")
    a: Dict[str, Any] = {"intent": intent, "task": str(task)}
    if args is not None:
        if not isinstance(args, dict):
            raise ValueError("next action args must be a dict")
        a["args"] = args
    return a


def artifact(kind: str, name: str, uri: Optional[str] = None,
             inline: Optional[str] = None) -> Dict[str, Any]:
    """One entry of outputs.artifacts: something the agent produced."""
    a: Dict[str, Any] = {"kind": str(kind), "name": str(name), "uri": uri}
    if inline is not None:
        a["inline"] = str(inline)
    return a


def _timestamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _classify(env: Envelope) -> str:
    kind = _obj(env.get("corral")).get("kind")
    if kind in ("task", "notice", "child_result", "message", "cancel",
                "progress"):
        return kind
    return "request"


def _problem(env: Any) -> Optional[str]:
    """What makes env an envelope corral would refuse, or None.

    Only the mistakes a handler is likely to make are checked; corral
    checks the rest (docs/protocol.md)."""
    if not isinstance(env, dict):
        return f"a {type(env).__name__} is not an envelope"
    if env.get("protocol") != PROTOCOL:
        return f"protocol must be {PROTOCOL!r}"
    if env.get("role") not in ROLES:
        return f"role must be one of {', '.join(ROLES)}"
    if env.get("intent") not in INTENTS:
        return f"intent {env.get('intent')!r} is not one of {', '.join(INTENTS)}"
    if not isinstance(env.get("task"), str):
        return "task must be a string"
    content = env.get("content")
    if not isinstance(content, dict) or content.get("type") not in CONTENT_TYPES:
        return f"content.type must be one of {', '.join(CONTENT_TYPES)}"
    if "text" in content and not isinstance(content["text"], str):
        return "content.text must be a string"
    if "confidence" in env:
        score = _obj(env["confidence"]).get("score")
        if (isinstance(score, bool) or not isinstance(score, (int, float))
                or not 0 <= score <= 1):
            return "confidence.score must be a number from 0 to 1"
    outputs = env.get("outputs", {})
    if not isinstance(outputs, dict):
        return "outputs must be an object"
    for i, a in enumerate(outputs.get("next_actions", [])):
        if not isinstance(a, dict) or a.get("intent") not in INTENTS \
                or not isinstance(a.get("task"), str):
            return (f"outputs.next_actions[{i}] needs an intent of "
                    f"{', '.join(INTENTS)} and a task string")
    return None


class Agent:
    """A corral agent: register handlers with on(), then call run().

    name becomes agent.name in what it writes; model and version fill in
    the rest of the agent member.  ready="handshake" makes run() send
    map/connect first, for workflow entries with ready: handshake.
    debug=True (or CORRAL_AGENT_DEBUG=1 in the environment) logs every
    line read and written on stderr.
    """

    def __init__(self, name: str, *, model: str = "python",
                 version: str = "1", ready: str = "spawn",
                 max_line: int = MAX_LINE, debug: bool = False) -> None:
        if ready not in ("spawn", "handshake"):
            raise ValueError("ready must be 'spawn' or 'handshake'")
        self.name = name
        self.model = model
        self.version = version
        self.ready = ready
        self.max_line = max_line
        self.debug = debug or os.environ.get("CORRAL_AGENT_DEBUG") == "1"
        #: The agent's id in the run (CORRAL_AGENT_ID), else its name.
        self.id = os.environ.get("CORRAL_AGENT_ID") or name
        #: The run's id, "" outside corral.
        self.run_id = os.environ.get("CORRAL_RUN_ID", "")
        #: The workflow's workspace directory, or None.
        self.workspace = os.environ.get("CORRAL_WORKSPACE") or None
        self._under_corral = "CORRAL_AGENT_ID" in os.environ
        #: How many of corral's pings have been answered.
        self.pings = 0

        self._handlers: Dict[str, Handler] = {}
        self._on_notice: Callback = self._log_notice
        self._on_message: Callback = self._log_message
        self._on_child_result: Callback = self._log_child_result
        self._on_cancel: Callback = self._log_cancel
        self._on_progress: Callback = self._ignore

        self._trace_seq = itertools.count(1)
        self._rpc_seq = itertools.count(1)
        self._wlock = threading.Lock()
        self._items: "queue.Queue[tuple]" = queue.Queue()
        self._inbox: Deque[Message] = deque()
        self._calls: Set[int] = set()
        self._responses: Dict[int, Dict[str, Any]] = {}
        self._spawned: Dict[str, Child] = {}    # task id -> child, no result yet
        self._results: Dict[str, Message] = {}  # task id -> its result
        self._answered: Set[str] = set()        # request ids replied to
        self._tasks: Set[str] = set()           # ids of tasks received
        self._started = False
        self._eof = False
        self._broken = False
        self._in_fd = -1
        self._out_fd = -1

    # ------------------------------------------------------------------
    # Registering handlers and callbacks

    def on(self, *intents: str) -> Callable[[Handler], Handler]:
        """Decorate the handler of requests with these intents.

        "*" catches intents without a handler of their own; "task" catches
        a spawned child's task whatever its intent (without it, a task goes
        to the handler of its intent).  The handler gets a Message and
        returns the reply: an envelope, a string, or None when it wrote
        the reply itself with write().
        """
        for i in intents:
            if i not in INTENTS and i not in ("*", "task"):
                raise ValueError(f"unknown intent {i!r}: use one of "
                                 f"{', '.join(INTENTS)}, 'task' or '*'")
        if not intents:
            raise ValueError("on() needs at least one intent")

        def register(fn: Handler) -> Handler:
            for i in intents:
                self._handlers[i] = fn
            return fn
        return register

    def on_notice(self, fn: Callback) -> Callback:
        """Decorate the callback for notices: corral's errors about this
        agent's own output.  Never answered."""
        self._on_notice = fn
        return fn

    def on_message(self, fn: Callback) -> Callback:
        """Decorate the callback for envelopes other agents sent with
        map/send.  Never answered."""
        self._on_message = fn
        return fn

    def on_cancel(self, fn: Callback) -> Callback:
        """Decorate the callback for cancel notices: a request this agent
        works on was cancelled (m.data["request"] names it); its reply
        would be dropped.  Never answered."""
        self._on_cancel = fn
        return fn

    def on_progress(self, fn: Callback) -> Callback:
        """Decorate the callback for a child's progress: its partial
        output about its task, before its result.  Never answered."""
        self._on_progress = fn
        return fn

    def on_child_result(self, fn: Callback) -> Callback:
        """Decorate the callback for child results nobody wait()ed for.
        Never answered."""
        self._on_child_result = fn
        return fn

    # ------------------------------------------------------------------
    # Building envelopes

    def envelope(self, intent: str, task: str, text: Optional[str] = None,
                 *, data: Any = None, params: Optional[Dict[str, Any]] = None,
                 context: Optional[str] = None,
                 content_type: Optional[str] = None) -> Envelope:
        """A fresh envelope from this agent, with no lineage: for send(),
        for a child's task, or the base of a reply.  With data and no
        content_type, content.type is "json"."""
        if intent not in INTENTS:
            raise ValueError(f"intent {intent!r} is not one of "
                             f"{', '.join(INTENTS)}")
        ctype = content_type or ("json" if data is not None else "text")
        if ctype not in CONTENT_TYPES:
            raise ValueError(f"content type {ctype!r} is not one of "
                             f"{', '.join(CONTENT_TYPES)}")
        content: Dict[str, Any] = {"type": ctype}
        if text is not None or data is None:
            content["text"] = "" if text is None else str(text)
        if data is not None:
            content["data"] = data
        env: Envelope = {
            "protocol": PROTOCOL,
            "role": "agent",
            "agent": {"id": self.id, "name": self.name, "model": self.model,
                      "version": self.version},
            "timestamp": _timestamp(),
            "intent": intent,
            "task": str(task),
            "content": content,
            "trace": {"id": self._new_id()},
        }
        if params is not None or context is not None:
            inputs: Dict[str, Any] = {}
            if context is not None:
                inputs["context"] = context
            if params is not None:
                inputs["parameters"] = params
            env["inputs"] = inputs
        return env

    def reply(self, req: Message, text: Optional[str] = None, *,
              intent: Optional[str] = None, data: Any = None,
              confidence: Optional[float] = None,
              rationale: Optional[str] = None,
              risks: Optional[Sequence[str]] = None,
              next_actions: Optional[Iterable[Any]] = None,
              artifacts: Optional[Iterable[Dict[str, Any]]] = None,
              cost: Any = None, tags: Optional[Sequence[str]] = None,
              task: Optional[str] = None,
              content_type: Optional[str] = None) -> Envelope:
        """The reply to req, with req's trace.id in trace.parents.

        intent defaults to "finalize" for a task and to req's own intent
        otherwise.  confidence is confidence.score (0..1), with rationale
        and risks beside it.  next_actions takes action() dicts or
        (intent, task[, args]) tuples; artifacts takes artifact() dicts.
        cost is {"input_tokens", "output_tokens", "usd"} or a tuple
        (input_tokens, output_tokens[, usd]).
        """
        if intent is None:
            intent = "finalize" if req.is_task or not req.intent else req.intent
        env = self.envelope(intent, req.task if task is None else task, text,
                            data=data, content_type=content_type)
        if req.id:
            env["trace"]["parents"] = [req.id]
        if confidence is not None:
            if isinstance(confidence, bool) or \
                    not isinstance(confidence, (int, float)):
                raise ValueError("confidence must be a number from 0 to 1")
            conf: Dict[str, Any] = {"score": min(1.0, max(0.0,
                                                          float(confidence)))}
            if rationale is not None:
                conf["rationale"] = str(rationale)
            if risks:
                conf["risks"] = [str(r) for r in risks]
            env["confidence"] = conf
        elif rationale is not None or risks:
            raise ValueError("rationale and risks need a confidence score")
        outputs: Dict[str, Any] = {}
        if next_actions:
            outputs["next_actions"] = [
                a if isinstance(a, dict) else action(*a) for a in next_actions]
        if artifacts:
            outputs["artifacts"] = list(artifacts)
        if outputs:
            env["outputs"] = outputs
        if cost is not None:
            env["trace"]["cost"] = self._cost(cost)
        if tags:
            env["trace"]["tags"] = [str(t) for t in tags]
        return env

    def error(self, req: Message, message: str, *, code: str = "agent_error",
              category: str = "INTERNAL", retryable: bool = False,
              data: Optional[Dict[str, Any]] = None,
              intent: Optional[str] = None) -> Envelope:
        """An error reply to req (content.type "error"): the request
        failed.  It ends a task as failed and is never reflected on.
        data adds members to content.data beside code, category, message
        and retryable."""
        if category not in CATEGORIES:
            raise ValueError(f"category must be one of {', '.join(CATEGORIES)}")
        env = self.reply(req, message, intent=intent)
        details: Dict[str, Any] = dict(data or {})
        details.update({"code": code, "category": category,
                        "message": message, "retryable": bool(retryable)})
        env["content"] = {"type": "error", "text": message, "data": details}
        return env

    @staticmethod
    def _cost(cost: Any) -> Dict[str, Any]:
        if isinstance(cost, dict):
            c = dict(cost)
        else:
            vals = list(cost)
            if len(vals) not in (2, 3):
                raise ValueError("cost is (input_tokens, output_tokens[, usd])")
            c = {"input_tokens": vals[0], "output_tokens": vals[1]}
            if len(vals) == 3:
                c["usd"] = vals[2]
        for k, v in c.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"cost {k} must be a number >= 0")
        return c

    def _new_id(self) -> str:
        # Unique in the run: agent id, process id, a counter; at most 63 bytes.
        return f"{self.id[:32]}-{os.getpid()}-{next(self._trace_seq)}"

    # ------------------------------------------------------------------
    # Logging and writing

    def log(self, *parts: Any) -> None:
        """Write a line on stderr; corral logs it with the agent's id."""
        line = " ".join(str(p) for p in parts)
        if not self._under_corral:
            line = f"{self.name}: {line}"
        try:
            sys.stderr.write(line.replace("\n", "\n  ") + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def write(self, env: Dict[str, Any]) -> None:
        """Write one envelope (or control frame) as it is, as one line.

        For progress on a task, or a reply written by hand; a handler
        that replied this way returns None.  Raises ValueError for what
        JSON cannot carry (NaN, a NUL character, lone surrogates) and
        InputClosed when corral no longer reads the agent's output."""
        self._start()
        data = self._encode(env)
        parents = _obj(env.get("trace")).get("parents")
        self._write_bytes(data)
        if not isinstance(parents, list):
            return
        # What ends a task is a finalize or an error; before, progress.
        ends = env.get("intent") == "finalize" or \
            _obj(env.get("content")).get("type") == "error"
        self._answered.update(p for p in parents if isinstance(p, str) and
                              (ends or p not in self._tasks))

    def _encode(self, obj: Dict[str, Any]) -> bytes:
        s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                       allow_nan=False)
        if "\\u0000" in s and _NUL_ESCAPE.search(s):
            raise ValueError("a string holds a NUL character, which corral "
                             "refuses")
        return s.encode("utf-8") + b"\n"

    def _write_bytes(self, data: bytes) -> None:
        with self._wlock:
            if self._broken:
                raise InputClosed("stdout is closed")
            if self.debug:
                self._debug("->", data)
            view = memoryview(data)
            try:
                while view:
                    n = os.write(self._out_fd, view)
                    view = view[n:]
            except OSError as e:
                self._broken = True
                self.log(f"stdout: {e.strerror}")
                raise InputClosed("stdout is closed") from None

    def _debug(self, arrow: str, line: bytes) -> None:
        text = line.rstrip(b"\n").decode("utf-8", "replace")
        if len(text) > 300:
            text = text[:300] + "..."
        self.log(arrow, text)

    # ------------------------------------------------------------------
    # Reading: a thread reads stdin, answers pings, hands on the rest

    def _start(self) -> None:
        """Take over stdin and stdout and start the reader thread."""
        if self._started:
            return
        self._started = True
        sys.stdout.flush()
        self._in_fd = os.dup(0)
        self._out_fd = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        threading.Thread(target=self._reader, name="corral-agent-reader",
                         daemon=True).start()

    def _reader(self) -> None:
        # Whatever stops the thread, the main loop must hear of it.
        try:
            self._read_lines()
        except BaseException:
            self.log("the reader stopped:\n" + traceback.format_exc().rstrip())
        finally:
            self._items.put(("eof", None))

    def _read_lines(self) -> None:
        buf = bytearray()
        scan = 0
        skipped = 0
        discarding = False
        while True:
            try:
                chunk = os.read(self._in_fd, _READ_CHUNK)
            except OSError as e:
                self.log(f"stdin: {e.strerror}")
                chunk = b""
            if not chunk:
                if buf and not discarding:
                    self._line(bytes(buf))  # the last line may lack its \n
                return
            buf += chunk
            while True:
                nl = buf.find(b"\n", scan)
                if nl < 0:
                    scan = len(buf)
                    if len(buf) > self.max_line:
                        skipped += len(buf)
                        del buf[:]
                        scan = 0
                        discarding = True
                    break
                line = bytes(buf[:nl])
                del buf[:nl + 1]
                scan = 0
                if discarding:
                    self.log(f"skipped a line of {skipped + len(line)} bytes "
                             f"(more than {self.max_line})")
                    discarding = False
                    skipped = 0
                    continue
                self._line(line)

    def _line(self, raw: bytes) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            return
        if self.debug:
            self._debug("<-", raw)
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as e:  # bad UTF-8 is a ValueError
            self.log(f"skipped an invalid line ({type(e).__name__}: "
                     f"{str(e)[:200]})")
            return
        if not isinstance(obj, dict):
            self.log("skipped a line that is not a JSON object")
            return
        if "jsonrpc" in obj:
            if "method" in obj:
                self._control_request(obj)
            else:
                self._items.put(("response", obj))
            return
        self._items.put(("envelope", obj))

    def _control_request(self, frame: Dict[str, Any]) -> None:
        if "id" not in frame:
            return          # a notification: nothing to answer
        if frame.get("method") == "ping":
            out: Dict[str, Any] = {"jsonrpc": "2.0", "id": frame["id"],
                                   "result": {}}
        else:
            out = {"jsonrpc": "2.0", "id": frame["id"],
                   "error": {"code": -32601, "message": "method not found"}}
        try:
            self._write_bytes(self._encode(out))
        except (InputClosed, ValueError):
            return
        if frame.get("method") == "ping":
            self.pings += 1

    def _pump(self, deadline: Optional[float]) -> bool:
        """Take one item from the reader; False when the deadline passed."""
        if deadline is None:
            item = self._items.get()
        else:
            try:
                item = self._items.get(timeout=max(0.0,
                                                   deadline - time.monotonic()))
            except queue.Empty:
                return False
        what, obj = item
        if what == "eof":
            self._eof = True
        elif what == "response":
            rid = obj.get("id")
            if isinstance(rid, int) and rid in self._calls:
                self._responses[rid] = obj
            else:
                self.log(f"dropped a response nobody waits for (id {rid!r})")
        else:
            m = Message(obj, _classify(obj))
            if m.kind == "notice":
                self._callback(self._on_notice, m)
            elif m.kind == "message":
                self._callback(self._on_message, m)
            elif m.kind == "cancel":
                self._callback(self._on_cancel, m)
            elif m.kind == "progress":
                self._callback(self._on_progress, m)
            elif m.kind == "child_result":
                if m.spawn in self._spawned:
                    self._results[m.spawn] = m
                else:
                    self._callback(self._on_child_result, m)
            else:
                if m.is_task and m.id:
                    self._tasks.add(m.id)
                self._inbox.append(m)
        return True

    def _callback(self, fn: Callback, m: Message) -> None:
        try:
            fn(m)
        except InputClosed:
            raise
        except Exception:
            self.log(f"the {m.kind} callback failed:\n"
                     + traceback.format_exc().rstrip())

    def _log_notice(self, m: Message) -> None:
        self.log(f"corral reports a problem with our output: {m.text}")

    def _log_message(self, m: Message) -> None:
        self.log(f"message from {m.sender} ignored: {m.task}")

    def _log_cancel(self, m: Message) -> None:
        self.log(f"cancelled: {m.text}")

    def _ignore(self, m: Message) -> None:
        pass

    def _log_child_result(self, m: Message) -> None:
        self.log(f"result of child {m.child} ignored "
                 f"({'finished' if m.ok else 'failed'}: {m.text[:200]})")

    # ------------------------------------------------------------------
    # The main loop

    def run(self) -> int:
        """Serve requests and tasks until corral closes the input.

        Returns 0 at the end of input.  Exits with status 1 when the
        map/connect handshake fails or stdout is closed under it."""
        self._start()
        try:
            if self.ready == "handshake":
                try:
                    self.handshake()
                except (CallError, TimeoutError) as e:
                    self.log(f"no handshake: {e}")
                    raise SystemExit(1)
            while True:
                self._release_results()
                if self._inbox:
                    self._serve(self._inbox.popleft())
                elif self._eof:
                    return 0
                else:
                    self._pump(None)
        except InputClosed:
            if self._broken:
                raise SystemExit(1)
            return 0

    def _release_results(self) -> None:
        # Results that no handler waited for go to the callback.
        for tid in list(self._results):
            m = self._results.pop(tid)
            self._spawned.pop(tid, None)
            self._callback(self._on_child_result, m)

    def _handler_for(self, req: Message) -> Optional[Handler]:
        if req.is_task and "task" in self._handlers:
            return self._handlers["task"]
        return self._handlers.get(req.intent, self._handlers.get("*"))

    def _serve(self, req: Message) -> None:
        """Answer one request or task with exactly one envelope."""
        fn = self._handler_for(req)
        try:
            if fn is None:
                out: Any = self.error(
                    req, f"{self.id} has no handler for intent "
                    f"{req.intent!r}", category="REJECTED")
            else:
                out = fn(req)
                if out is None and req.id in self._answered:
                    return
                if isinstance(out, str):
                    out = self.reply(req, out)
                elif out is None:
                    raise ValueError(f"the {req.intent} handler returned "
                                     "no reply")
                problem = _problem(out)
                if problem is not None:
                    raise ValueError(f"the {req.intent} handler's reply is "
                                     f"not a valid envelope: {problem}")
                trace = out.setdefault("trace", {})
                if isinstance(trace, dict) and req.id and \
                        not trace.get("parents"):
                    trace["parents"] = [req.id]
            data = self._encode(out)
        except InputClosed:
            raise
        except Exception as e:
            self.log(f"{req.kind} {req.id} ({req.intent}) failed:\n"
                     + traceback.format_exc().rstrip())
            if req.id and req.id in self._answered:
                return
            data = self._encode(self.error(req, f"{type(e).__name__}: {e}"))
        self._write_bytes(data)
        if req.id:
            self._answered.add(req.id)

    # ------------------------------------------------------------------
    # Control calls and sub-agents

    def call(self, method: str, params: Optional[Dict[str, Any]] = None,
             timeout: Optional[float] = CALL_TIMEOUT) -> Any:
        """Make a JSON-RPC call to corral and return its result.

        Raises CallError when corral answers with an error, TimeoutError
        after timeout seconds (None: wait for ever), InputClosed at the
        end of input."""
        self._start()
        rid = next(self._rpc_seq)
        frame: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        deadline = None if timeout is None else time.monotonic() + timeout
        self._calls.add(rid)
        try:
            self._write_bytes(self._encode(frame))
            while rid not in self._responses:
                if self._eof:
                    raise InputClosed(f"{method}: corral closed our input")
                if not self._pump(deadline):
                    raise TimeoutError(f"{method}: no response in {timeout}s")
            resp = self._responses.pop(rid)
        finally:
            self._calls.discard(rid)
            self._responses.pop(rid, None)
        if "error" in resp:
            err = _obj(resp.get("error"))
            code = err.get("code")
            raise CallError(method, code if isinstance(code, int) else None,
                            _str(err.get("message")) or "error",
                            err.get("data"))
        return resp.get("result")

    def handshake(self) -> Dict[str, Any]:
        """Send map/connect; corral's answer names the session and this
        agent.  run() does it first with ready="handshake"."""
        return _obj(self.call("map/connect", {
            "name": self.name,
            "capabilities": {"canSpawn": True, "canSend": True}}))

    def spawn(self, agent: str, task: Union[Envelope, str], *,
              keep: bool = False, visible: bool = False,
              timeout: Optional[float] = None, restart: Optional[str] = None,
              limits: Optional[Dict[str, Any]] = None) -> Child:
        """Start a child from the workflow entry agent, with one task.

        task is an envelope (see envelope()) or a string, which corral
        takes as an execute task.  timeout is how long the task may take
        in seconds; keep leaves the child running after its result;
        visible lets the workflow route to it; limits is {"depth": n,
        "children": n, "budget": {"tokens": n, "cost": usd, "time": s}}.
        Raises CallError: code E_LIMIT when fan-out or the agents limit
        refused it (try again once a child is done), E_QUOTA for depth or
        budget, E_UNKNOWN_AGENT (reason "unknown_agent") for an entry the
        workflow does not have."""
        params: Dict[str, Any] = {"agent": agent, "task": task}
        if keep:
            params["keep"] = True
        if visible:
            params["visible"] = True
        if timeout is not None:
            params["timeout"] = timeout
        if restart is not None:
            params["restart"] = restart
        if limits is not None:
            params["limits"] = limits
        res = _obj(self.call("map/agents/spawn", params))
        info = _obj(res.get("agent"))
        cid = _str(info.get("id"))
        tid = _str(res.get("messageId")) or _str(res.get("task"))
        if not cid or not tid:
            raise CallError("map/agents/spawn", None,
                            "the answer names no agent or no task")
        child = Child(cid, tid, agent, info)
        self._spawned[tid] = child
        return child

    def wait(self, children: Optional[Iterable[Union[Child, str]]] = None,
             timeout: Optional[float] = None) -> List[Message]:
        """Wait for the results of children (Child objects or task ids;
        default: every child whose result has not been taken yet) and
        return them in the order given.

        Pings are answered and messages and notices handled while it
        waits; requests that arrive are served after the handler
        returns.  Each result is a Message: child, spawn, ok (the child
        finished), data, text, is_error.  corral ends a child's task with
        an error result when it fails, times out or goes over budget, so
        every child gives one result.  Raises TimeoutError after timeout
        seconds (None: no limit of our own), InputClosed at the end of
        input.  A result nobody waits for goes to on_child_result once the
        handler returns."""
        if children is None:
            tids = list(self._spawned)
        else:
            tids = [c.task if isinstance(c, Child) else str(c)
                    for c in children]
        for t in tids:
            if t not in self._spawned:
                raise ValueError(f"no child with task {t} is waiting to be "
                                 "collected")
        try:
            self.wait_for(lambda: all(t in self._results for t in tids),
                          timeout)
        except TimeoutError:
            have = sum(1 for t in tids if t in self._results)
            raise TimeoutError(f"{have} of {len(tids)} child results after "
                               f"{timeout}s") from None
        out = []
        for t in tids:
            out.append(self._results.pop(t))
            self._spawned.pop(t, None)
        return out

    def wait_for(self, condition: Callable[[], bool],
                 timeout: Optional[float] = None) -> None:
        """Handle what arrives until condition() is true: pings are
        answered, messages and notices go to their callbacks, child
        results and requests are kept for later.  For a handler
        that waits for a message (a child waiting for its parent's go, a
        parent gathering progress).  Raises TimeoutError after timeout
        seconds (None: no limit), InputClosed at the end of input."""
        self._start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not condition():
            if self._eof:
                raise InputClosed("corral closed our input")
            if not self._pump(deadline):
                raise TimeoutError(f"the condition did not hold within "
                                   f"{timeout}s")

    def send(self, to: Union[str, Dict[str, Any]],
             envelope: Union[Envelope, str]) -> List[str]:
        """Send an envelope to other agents with map/send; returns the ids
        it reached.  to is an agent id or an address: {"parent": True},
        {"children": True}, {"siblings": True}, {"role": "reviewer"}, ...
        (docs/protocol.md).  A string is sent as an execute envelope with
        that text.  Raises CallError: E_FORBIDDEN, E_NOT_FOUND."""
        if isinstance(envelope, str):
            envelope = self.envelope("execute", envelope, envelope)
        res = _obj(self.call("map/send", {"to": to, "envelope": envelope}))
        ids = res.get("delivered", res.get("to"))
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) \
            else []

    def send_to_parent(self, envelope: Union[Envelope, str]) -> List[str]:
        """send() to the agent that spawned this one."""
        return self.send({"parent": True}, envelope)

    def stop(self, agent_id: str) -> bool:
        """Stop a descendant and its subtree for good (map/agents/stop)."""
        return bool(_obj(self.call("map/agents/stop",
                                   {"agentId": agent_id})).get("stopping"))

    def list_agents(self) -> List[Dict[str, Any]]:
        """The agents this one may see (map/agents/list)."""
        agents = _obj(self.call("map/agents/list")).get("agents")
        return agents if isinstance(agents, list) else []

    def get_agent(self, agent_id: str) -> Dict[str, Any]:
        """One agent (map/agents/get); CallError E_NOT_FOUND if it is not
        there or not visible to this one."""
        return _obj(_obj(self.call("map/agents/get",
                                   {"agentId": agent_id})).get("agent"))
