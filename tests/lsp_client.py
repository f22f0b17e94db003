"""A minimal LSP client over a subprocess's stdio: Content-Length framed JSON-RPC."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any


class LspClient:
    def __init__(self, *command: str, cwd: str | None = None, env: dict | None = None) -> None:
        self.process = subprocess.Popen(
            list(command) or [sys.executable, "-m", "synclint", "server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        message = self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)
        if "error" in message:
            raise RuntimeError(message["error"])
        return message["result"]

    def wait_for(self, predicate, timeout: float = 60) -> dict[str, Any]:
        """The next message matching ``predicate``; the others are dropped (server
        logs and notifications the test does not look at)."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no matching message from the server: " + self.process.stderr.read1(4096).decode())
            try:
                message = self.messages.get(timeout=remaining)
            except queue.Empty:
                continue
            if predicate(message):
                return message

    def diagnostics(self, uri: str, timeout: float = 60) -> list[dict[str, Any]]:
        message = self.wait_for(
            lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri, timeout
        )
        return message["params"]["diagnostics"]

    def close(self) -> int:
        try:
            self.request("shutdown", None, timeout=20)
            self.notify("exit", None)
            return self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def apply_text_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP TextEdits (UTF-16 positions) to ``text``, last first."""

    def offset(position: dict[str, int]) -> int:
        lines = text.splitlines(keepends=True)
        before = sum(len(line) for line in lines[: position["line"]])
        if position["line"] >= len(lines):
            return len(text)
        line = lines[position["line"]]
        units = 0
        for index, char in enumerate(line):
            if units >= position["character"]:
                return before + index
            units += 2 if ord(char) > 0xFFFF else 1
        return before + len(line)

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
