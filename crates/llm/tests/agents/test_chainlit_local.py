"""The Chainlit example (examples/chainlit_agent/app.py) on the local model, as a new user runs
it: `chainlit run` against the citeflow proxy in front of SmolLM2-135M (what `citeflow serve`
runs with no upstream; no key), driven by headless Chromium with the framework tests' driver
(crates/py/tests_frameworks/chainlit_browser.mjs, given a longer ANSWER_MS). The agent searches (the agent policy), and
the answer shows at least one `[n]` that opens its source in the side panel; the screenshot is
target/llm-agents/chainlit-local.png."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[4]
APP = ROOT / "examples/chainlit_agent/app.py"
DRIVER = ROOT / "crates/py/tests_frameworks/chainlit_browser.mjs"
PLAYWRIGHT = ROOT / "crates/server/tests/browser/node_modules/playwright-core/index.mjs"
OUT = ROOT / "target/llm-agents"
PROXY_URL = os.environ["CITEFLOW_PROXY_URL"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_chainlit_agent_on_the_local_model_cites_a_searched_source() -> None:
    if shutil.which("node") is None or not PLAYWRIGHT.is_file() or not Path("/usr/bin/chromium").is_file():
        pytest.fail("the browser test needs node, /usr/bin/chromium and playwright-core (scripts/browser-env.sh)")
    OUT.mkdir(parents=True, exist_ok=True)
    app_root = OUT / "chainlit-app"
    app_root.mkdir(exist_ok=True)
    port = free_port()
    log = OUT / "chainlit-local.log"
    env = {
        **os.environ,
        "CHAINLIT_APP_ROOT": str(app_root),
        "OPENAI_BASE_URL": PROXY_URL,
        "CITEFLOW_VIA_SERVE": "1",
    }
    env.pop("OPENAI_API_KEY", None)
    chainlit = shutil.which("chainlit", path=os.path.dirname(os.sys.executable)) or "chainlit"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [chainlit, "run", str(APP), "--headless", "--host", "127.0.0.1", "--port", str(port)],
            cwd=app_root, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while "Your app is available" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        shot = OUT / "chainlit-local.png"
        driver = subprocess.run(
            ["node", str(DRIVER)],
            env={**os.environ, "CL_URL": f"http://127.0.0.1:{port}/",
                 "QUESTION": "What did the White Rabbit take out of its waistcoat-pocket?",
                 "SHOT": str(shot), "PLAYWRIGHT_CORE": str(PLAYWRIGHT), "ANSWER_MS": "400000"},
            capture_output=True, text=True, timeout=480,
        )
        assert driver.returncode == 0, driver.stderr + log.read_text(errors="replace")[-3000:]
        result: dict[str, Any] = json.loads(driver.stdout.strip().splitlines()[-1])
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    final = result["final"]
    print(f"answer on the page: {final['text']!r}")
    assert shot.stat().st_size > 10_000
    # At least one number, each opening its source: a passage the search found, with its query.
    assert final["links"] and all(re.fullmatch(r"\[\d+\]", n) for n in final["links"]), final
    # The list grouped by search round (a search that found nothing lists no round).
    assert re.search(r"Round \d+: ", final["text"]), final["text"]
    opened = {o["name"]: o for o in result["opened"]}
    assert sorted(opened) == sorted(set(final["links"]))
    for name, o in opened.items():
        assert o["title"] == name
        assert "Search: " in o["content"], o["content"]
