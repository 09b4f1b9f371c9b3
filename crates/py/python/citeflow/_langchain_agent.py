"""``CiteflowMiddleware`` and ``CiteflowTransformer`` (imported through ``citeflow.langchain``;
needs ``langchain`` v1 and ``langgraph``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Optional, Union

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.stream import StreamChannel, StreamTransformer
from langgraph.types import Command
from typing_extensions import NotRequired

from ._citeflow import Session
from .langchain import NUMBERING_KEY, _step, session_from_state
from .rounds import (
    CITEFLOW_KEY,
    ROUND_KEY,
    Event,
    RoundStream,
    agent_instruction,
    answer_record,
    new_session,
    round_query,
    round_record,
    sources_from_result,
    tool_block,
)

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ToolCallRequest
    from langgraph.runtime import Runtime

    from ._citeflow import _PromptMarkerName
else:
    _PromptMarkerName = str

__all__ = ["CiteflowMiddleware", "CiteflowState", "CiteflowTransformer"]


class CiteflowState(AgentState[Any]):
    """The agent state with the numbering (``Numbering`` JSON), kept by a checkpointer."""

    citeflow_numbering: NotRequired[str]


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

    def _instructed(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        base = request.system_message.text if request.system_message is not None else ""
        text = f"{base}\n\n{self.instruction}" if base else self.instruction
        return request.override(system_message=SystemMessage(content=text))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(self._instructed(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        return await handler(self._instructed(request))

    def after_model(self, state: CiteflowState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        messages = state.get("messages") or []
        if not messages or not isinstance(messages[-1], AIMessage):
            return None
        text = messages[-1].text
        if not text:
            return None
        session = session_from_state(state, style=self.style, session=self.session, anchors=self.anchors)
        before = session.numbering.to_json()
        rw = session.rewriter()
        events = rw.feed(text) + rw.finish()
        after = session.numbering.to_json()
        update: dict[str, Any] = {} if after == before else {NUMBERING_KEY: after}
        answer = messages[-1]
        if session.settings.anchors and answer.id is not None:
            # The same id: the state's reducer replaces the message with this copy.
            kwargs = {**answer.additional_kwargs, CITEFLOW_KEY: answer_record(events)}
            update["messages"] = [answer.model_copy(update={"additional_kwargs": kwargs})]
        return update or None

    async def aafter_model(self, state: CiteflowState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        return self.after_model(state, runtime)


class CiteflowTransformer(StreamTransformer):
    """A LangGraph stream transformer: its projection ``citeflow`` (``run.extensions
    ["citeflow"]``) is a channel of citeflow's events for the run, as ``messages_stream`` gives
    them (tool messages become rounds, the chat model's text deltas are rewritten).

    ``session`` (a session-scope one; new when None) carries the thread's numbering in;
    ``anchors`` turns claim anchors on for a new one (``AnchorEvent``s in the channel). Works
    under ``stream_events(version="v3")`` and its async form."""

    required_stream_modes = ("messages", "updates")
    supports_sync = True

    def __init__(
        self, scope: tuple[str, ...] = (), session: Optional[Session] = None, *, anchors: Optional[bool] = None
    ) -> None:
        super().__init__(scope)
        self._scope_list = list(scope)
        self._rs = RoundStream(session if session is not None else new_session(anchors=anchors))
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
                        self._push(_step(self._rs, m))
            return True
        payload, _metadata = params["data"]
        if isinstance(payload, dict) and "event" in payload:
            if payload.get("event") == "content-block-delta":
                delta = payload.get("delta") or {}
                if delta.get("type") == "text-delta" and delta.get("text"):
                    self._push(self._rs.feed(delta["text"]))
            return True
        self._push(_step(self._rs, payload))
        return True

    def finalize(self) -> None:
        self._push(self._rs.finish())
