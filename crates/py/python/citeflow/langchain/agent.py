"""``CiteflowMiddleware`` (an ``AgentMiddleware`` for ``create_agent``) and
``CiteflowTransformer`` (a LangGraph stream transformer); needs ``langchain`` v1 and
``langgraph``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Optional, Union

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.stream import StreamChannel, StreamTransformer
from langgraph.types import Command
from typing_extensions import NotRequired

from .._citeflow import Session
from .._event import Event
from ..rounds import (
    CITEFLOW_KEY,
    ROUND_KEY,
    agent_instruction,
    answer_record,
    round_query,
    round_record,
    sources_from_result,
    tool_block,
)
from .messages import NUMBERING_KEY, SOURCES_KEY, THREAD_KEY, MessagesFeed, session_from_state, thread_record

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ToolCallRequest
    from langgraph.runtime import Runtime

    from .._citeflow import _PromptMarkerName
else:
    _PromptMarkerName = str

__all__ = ["CiteflowMiddleware", "CiteflowState", "CiteflowTransformer"]


class CiteflowState(AgentState[Any]):
    """The agent state with the numbering (``Numbering`` JSON), kept by a checkpointer."""

    citeflow_numbering: NotRequired[str]
    citeflow_sources: NotRequired[list[dict[str, Any]]]


class CiteflowMiddleware(AgentMiddleware[CiteflowState, Any, Any]):
    """Numbers the sources an agent's search tools return, across the turns of a thread.

    - ``wrap_tool_call``: a tool result holding sources (a ``response_format=
      "content_and_artifact"`` tool's artifact of ``Document``s, dicts or search hits, or
      content that is a JSON list of results) becomes a round named by the call's arguments
      (its ``query``); the content the model reads shows each passage under its marker, and the
      round travels in the ``ToolMessage``'s ``additional_kwargs`` (so the thread's messages
      hold every round, and ``messages_stream`` reads it from the stream).
    - ``wrap_model_call``: adds the citation instruction to the system message.
    - ``after_model``: runs the model's answer through the engine so that the numbers it
      handed out are kept in the state (``citeflow_numbering``); with a checkpointer the next
      turn continues them.

    With ``anchors=True`` (or a ``session`` whose settings have anchors on) ``after_model`` also
    puts into the answer's ``AIMessage`` ``additional_kwargs["citeflow"]``: the rendered text,
    its claim anchors (each citation's quote from the tool's documents, ``support``,
    ``verdict``) and the cited sources with their anchors; the transformer it registers streams
    the ``AnchorEvent``s.

    ``session`` gives the settings (``style``: ``brackets`` → ``[1]``, ``full_width`` →
    ``【1】``); ``marker`` is what the model is asked to write (an id marker, so that one
    number holds across rounds)."""

    state_schema = CiteflowState

    def __init__(
        self,
        session: Optional[Session] = None,
        *,
        marker: _PromptMarkerName = "double_bracket",
        style: str = "brackets",
        max_chars_per_source: int = 1000,
        transformer: bool = False,
        anchors: Optional[bool] = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.marker = marker
        self.style = session.settings.style if session is not None else style
        self.anchors = anchors
        self.max_chars_per_source = max_chars_per_source
        self.instruction = agent_instruction(marker)
        if transformer:
            self.transformers = (self.transformer_factory(),)

    def transformer_factory(self) -> Callable[[tuple[str, ...]], CiteflowTransformer]:
        """A factory of ``CiteflowTransformer``s (for ``create_agent(transformers=...)``)."""
        anchors = self.anchors
        return lambda scope: CiteflowTransformer(scope, anchors=anchors)

    # -- tools -----------------------------------------------------------------------------

    def _round_message(self, request: ToolCallRequest, result: Union[ToolMessage, Command[Any]]) -> Union[ToolMessage, Command[Any]]:
        if not isinstance(result, ToolMessage) or ROUND_KEY in result.additional_kwargs:
            return result
        sources = sources_from_result(result.artifact, result.content)
        if not sources:
            return result
        query = round_query(request.tool_call.get("args"))
        return result.model_copy(
            update={
                "content": tool_block(sources, self.marker, self.max_chars_per_source),
                "additional_kwargs": {**result.additional_kwargs, ROUND_KEY: round_record(sources, query)},
            }
        )

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Union[ToolMessage, Command[Any]]],
    ) -> Union[ToolMessage, Command[Any]]:
        return self._round_message(request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[Union[ToolMessage, Command[Any]]]],
    ) -> Union[ToolMessage, Command[Any]]:
        return self._round_message(request, await handler(request))

    # -- model -----------------------------------------------------------------------------

    def _session(self, state: Any) -> Session:
        return session_from_state(state, style=self.style, session=self.session, anchors=self.anchors)

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The model's request: the citation instruction added to the system message, and the
        thread's earlier answers as the model wrote them (markers, not numbers)."""
        base = request.system_message.text if request.system_message is not None else ""
        text = f"{base}\n\n{self.instruction}" if base else self.instruction
        return request.override(
            system_message=SystemMessage(content=text), messages=[_as_written(m) for m in request.messages]
        )

    def _thread_config(self, request: ModelRequest[Any]) -> Any:
        """The run config of the model call with the thread's session in its metadata
        (``THREAD_KEY``): LangGraph hands it out with each streamed chunk, so ``messages_stream``
        continues the thread's numbers without being given a session."""
        config = var_child_runnable_config.get()
        if config is None:
            return None
        session = self._session(request.state)
        record = thread_record(
            request.state, style=session.settings.style, marker=self.marker, anchors=session.settings.anchors
        )
        metadata = {**(config.get("metadata") or {}), THREAD_KEY: record}
        return var_child_runnable_config.set({**config, "metadata": metadata})

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        token = self._thread_config(request)
        try:
            return handler(self._request(request))
        finally:
            if token is not None:
                var_child_runnable_config.reset(token)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        token = self._thread_config(request)
        try:
            return await handler(self._request(request))
        finally:
            if token is not None:
                var_child_runnable_config.reset(token)

    def after_model(self, state: CiteflowState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Numbers the model's answer: its ``AIMessage``'s content becomes the rendered text
        (``[1]``), the answer as written kept in ``additional_kwargs["citeflow"]["raw"]`` with
        the rendered text, anchors and cited sources; the numbering and the cited sources go
        into the state (``citeflow_numbering``, ``citeflow_sources``)."""
        messages = state.get("messages") or []
        if not messages or not isinstance(messages[-1], AIMessage):
            return None
        answer = messages[-1]
        if CITEFLOW_KEY in answer.additional_kwargs:
            return None
        text = answer.text
        if not text:
            return None
        session = self._session(state)
        before = session.numbering.to_json()
        rw = session.rewriter()
        events = rw.feed(text) + rw.finish()
        after = session.numbering.to_json()
        record = answer_record(events)
        update: dict[str, Any] = {SOURCES_KEY: record["sources"]}
        if after != before:
            update[NUMBERING_KEY] = after
        if answer.id is not None:
            # The same id: the state's reducer replaces the message with this copy (and
            # LangGraph's messages stream, which has shown the model's chunks, skips it).
            record["raw"] = answer.content
            kwargs = {**answer.additional_kwargs, CITEFLOW_KEY: record}
            content = _numbered_content(answer.content, record["text"])
            update["messages"] = [answer.model_copy(update={"content": content, "additional_kwargs": kwargs})]
        return update

    async def aafter_model(self, state: CiteflowState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        return self.after_model(state, runtime)


def _numbered_content(content: Union[str, list[Any]], text: str) -> Union[str, list[Any]]:
    """An answer's content with its text rendered: a str becomes ``text``; a list of blocks
    keeps its other blocks (tool calls, reasoning) and gets one text block where its first was."""
    if isinstance(content, str):
        return text
    out: list[Any] = []
    placed = False
    for block in content:
        is_text = isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        if not is_text:
            out.append(block)
        elif not placed:
            out.append({"type": "text", "text": text})
            placed = True
    return out if placed else [*out, {"type": "text", "text": text}]


def _as_written(message: AnyMessage) -> AnyMessage:
    """An answer numbered by ``after_model`` as the model wrote it (for the model's next call)."""
    if not isinstance(message, AIMessage):
        return message
    record = message.additional_kwargs.get(CITEFLOW_KEY)
    if not isinstance(record, dict) or "raw" not in record:
        return message
    kwargs = {k: v for k, v in message.additional_kwargs.items() if k != CITEFLOW_KEY}
    return message.model_copy(update={"content": record["raw"], "additional_kwargs": kwargs})


class CiteflowTransformer(StreamTransformer):
    """A LangGraph stream transformer: its projection ``citeflow`` (``run.extensions
    ["citeflow"]``) is a channel of citeflow's events for the run, as ``messages_stream`` gives
    them (tool messages become rounds, the chat model's text deltas are rewritten).

    ``session`` carries a thread's numbering in; when None, the thread's session that
    ``CiteflowMiddleware`` hands to its model calls (so a checkpointed thread's next run
    continues its numbers), else a new session-scope one; ``anchors`` turns claim anchors on
    for a new one (``AnchorEvent``s in the channel). Works under
    ``stream_events(version="v3")`` and its async form."""

    required_stream_modes = ("messages", "updates")
    supports_sync = True

    def __init__(
        self, scope: tuple[str, ...] = (), session: Optional[Session] = None, *, anchors: Optional[bool] = None
    ) -> None:
        super().__init__(scope)
        self._scope_list = list(scope)
        self._feed = MessagesFeed(session, anchors=anchors)
        self._log: StreamChannel[Event] = StreamChannel()

    def init(self) -> dict[str, Any]:
        return {"citeflow": self._log}

    def _push(self, events: list[Event]) -> None:
        for ev in events:
            self._log.push(ev)

    def process(self, event: Any) -> bool:
        method = event.get("method")
        if method not in ("messages", "updates"):
            return True
        params = event["params"]
        if params.get("namespace") != self._scope_list:
            return True
        if method == "updates":
            # Tool results arrive as the tools node's update (v3 streams no tool messages).
            data = params.get("data")
            for update in data.values() if isinstance(data, dict) else ():
                messages = update.get("messages") if isinstance(update, dict) else None
                for m in messages or ():
                    if isinstance(m, ToolMessage):
                        self._push(self._feed.message(m))
            return True
        payload, metadata = params["data"]
        # The first model call's metadata holds the thread's session (CiteflowMiddleware).
        self._feed.stream(metadata)
        if isinstance(payload, dict) and "event" in payload:
            if payload.get("event") == "content-block-delta":
                delta = payload.get("delta") or {}
                if delta.get("type") == "text-delta" and delta.get("text"):
                    self._push(self._feed.text(delta["text"], metadata))
            return True
        self._push(self._feed.message(payload, metadata))
        return True

    def finalize(self) -> None:
        self._push(self._feed.finish())
