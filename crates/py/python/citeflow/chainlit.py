"""Chainlit: a streamed ``cl.Message`` whose citations open their sources in the side panel.

``chainlit`` is imported when this module is, not by ``import citeflow``::

    import chainlit as cl
    from citeflow.chainlit import CitedMessage
    from citeflow.langchain import amessages_stream

    cited = CitedMessage(session)                        # a cl.Message underneath (cited.message)
    async for ev in amessages_stream(agent.astream(..., stream_mode="messages"), session):
        await cited.send_event(ev)                       # text streamed, sources attached

Each event from citeflow (``citeflow.langchain.messages_stream``, ``citeflow.llamaindex``, an
adapter of ``citeflow.adapters``) is shown as Chainlit shows things:

- a ``SourceEvent`` with a new number attaches a ``cl.Text`` side element named exactly as the
  rendered marker (``[3]``, ``【3】``), before the text that shows it, so Chainlit links the
  marker to it; its content is the source's title, link, quote and, for a book passage, chapter
  and CFI;
- a ``TextEvent`` is streamed into the message (``stream_token``);
- an ``AnchorEvent`` (with anchors on: ``Session(anchors=True)``, or
  ``session_from_state(..., anchors=True)``) updates that source's side element: the passage
  shows the quote that supports the claim in bold (``**…**``, several citations' quotes each),
  and a line per citation says how well it is supported (``Supported``, or ⚠️ ``Weak support``
  / ``Not supported``: nothing found in the source says it), with the score;
- the ``DoneEvent`` appends the list of cited sources grouped by search round with its query
  (``render_list(..., rounds)``, markdown) and updates the message.

Numbers and their rendering come from the engine: the element name is the engine's rendering of
the number in the session's style.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional
from urllib.parse import urlparse

import chainlit as cl

from ._citeflow import (
    AnchorEvent,
    DoneEvent,
    NumberEntry,
    Numbering,
    Session,
    Settings,
    Source,
    SourceEvent,
    TextEvent,
    render_list,
    rewrite_str,
)
from .rounds import Event

__all__ = ["CitedMessage", "anchor_line", "marker_text", "passage_markdown", "source_markdown"]

#: How many characters of the passage the side element shows around the quotes.
CONTEXT_CHARS = 400


def marker_text(number: int, settings: Optional[Settings] = None) -> str:
    """How the engine renders ``number`` with ``settings`` (``[3]``, ``【3】``, ...)."""
    numbering = Numbering([NumberEntry(number, "id:s", "s")])
    out = rewrite_str("[[s]]", [Source("s")], settings=settings, numbering=numbering)
    return out.text


def _blockquote(text: str) -> str:
    return "> " + text.strip().replace("\n", "\n> ")


def _bold(text: str) -> str:
    """``text`` in bold, its surrounding whitespace kept outside the markers."""
    core = text.strip()
    if not core:
        return text
    start = text.index(core)
    return f"{text[:start]}**{core}**{text[start + len(core):]}"


def passage_markdown(text: str, anchors: Sequence[AnchorEvent], context_chars: int = CONTEXT_CHARS) -> str:
    """The source's ``text`` as a blockquote with the anchors' quotes in bold (by their
    ``char_start``/``char_end``); about ``context_chars`` characters around the quotes are kept
    of a longer text. A provider's quote that the text does not hold follows it in bold."""
    ranges = sorted(
        (a.quote.char_start, a.quote.char_end)
        for a in anchors
        if a.quote is not None and a.quote.char_start is not None and a.quote.char_end is not None
    )
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    lo, hi = 0, len(text)
    if merged and len(text) > 2 * context_chars + (merged[-1][1] - merged[0][0]):
        lo = max(0, merged[0][0] - context_chars)
        hi = min(len(text), merged[-1][1] + context_chars)
    out, at = [], lo
    for start, end in merged:
        out.append(text[at:start])
        out.append(_bold(text[start:end]))
        at = end
    out.append(text[at:hi])
    shown = "".join(out)
    lines = [_blockquote(("…" if lo > 0 else "") + shown + ("…" if hi < len(text) else ""))]
    for a in anchors:
        q = a.quote
        if q is not None and q.char_start is None and q.text.strip():
            lines.append(_blockquote(_bold(q.text)))
    return "\n\n".join(lines)


def anchor_line(anchor: AnchorEvent) -> str:
    """One citation's support as the side element says it: ``Supported``, or marked with ⚠️,
    ``Weak support`` (the source says only part of it) or ``Not supported`` (nothing found in
    the source says it), with the score."""
    score = f"support {anchor.support:.2f}"
    if anchor.verdict == "supported":
        return f"✅ Supported: the highlighted passage says this ({score})"
    if anchor.verdict == "weak":
        return f"⚠️ Weak support: the source says only part of this ({score})"
    return f"⚠️ Not supported: nothing found in this source says this ({score})"


def source_markdown(
    source: Source, round_query: Optional[str] = None, anchors: Sequence[AnchorEvent] = ()
) -> str:
    """A source as the side element shows it: title (linked), domain, quote (with ``anchors``:
    the passage with their quotes in bold, and each citation's support), chapter and CFI for a
    book passage, and the search round's query."""
    title = source.title or source.id
    lines = [f"**[{title}]({source.url})**" if source.url else f"**{title}**"]
    if source.url:
        domain = urlparse(source.url).netloc
        if domain:
            lines.append(domain)
    quote = source.snippet or source.text
    if anchors:
        lines.append(passage_markdown(source.text or "", anchors) if source.text else _blockquote(quote or ""))
        lines.extend(anchor_line(a) for a in anchors)
    elif quote:
        lines.append(_blockquote(quote))
    loc = source.locator
    if loc is not None:
        where = []
        if loc.chapter_title or loc.chapter_index is not None:
            where.append(f"Chapter: {loc.chapter_title or loc.chapter_index}")
        if loc.cfi:
            where.append(f"CFI: `{loc.cfi}`")
        if where:
            lines.append(" · ".join(where))
    if round_query:
        lines.append(f"Search: {round_query}")
    return "\n\n".join(lines)


class CitedMessage:
    """A ``cl.Message`` fed with citeflow's events (see the module's docs).

    ``session`` is the session whose events are shown (for the round queries of the list and
    the number style); ``message`` an existing ``cl.Message`` (a new empty one when None)."""

    def __init__(
        self,
        session: Optional[Session] = None,
        *,
        message: Optional[cl.Message] = None,
        list_heading: Optional[str] = "Sources",
    ) -> None:
        self.session = session
        self.message = message if message is not None else cl.Message(content="")
        self.list_heading = list_heading
        self.elements: dict[int, cl.Text] = {}
        self.anchors: dict[int, list[AnchorEvent]] = {}
        self._shown: dict[int, tuple[Source, Optional[str]]] = {}
        self._settings = session.settings if session is not None else None
        self._started = False

    def _round_query(self, round_number: Optional[int]) -> Optional[str]:
        if self.session is None or round_number is None:
            return None
        for r in self.session.rounds():
            if r.number == round_number:
                return r.query
        return None

    async def send_event(self, event: Event) -> None:
        """Shows one event."""
        if isinstance(event, SourceEvent):
            if event.number in self.elements:
                return
            query = self._round_query(event.round)
            element = cl.Text(
                name=marker_text(event.number, self._settings),
                content=source_markdown(event.source, query),
                display="side",
            )
            self.elements[event.number] = element
            self._shown[event.number] = (event.source, query)
            self.message.elements.append(element)  # type: ignore[arg-type]
            await element.send(for_id=self.message.id)
        elif isinstance(event, AnchorEvent):
            self.anchors.setdefault(event.number, []).append(event)
            shown = self.elements.get(event.number)
            if shown is None:
                return
            source, query = self._shown[event.number]
            shown.content = source_markdown(source, query, self.anchors[event.number])
            # Sent again under the same id: the page replaces the element's content.
            shown.updatable = True
            await shown.send(for_id=self.message.id)
        elif isinstance(event, TextEvent):
            if event.text:
                self._started = True
                await self.message.stream_token(event.text)
        elif isinstance(event, DoneEvent):
            rounds = self.session.rounds() if self.session is not None else None
            listed = render_list(event.sources, "markdown", rounds).strip() if event.sources else ""
            if event.text is not None:
                self.message.content = event.text
            if listed:
                heading = f"**{self.list_heading}**\n\n" if self.list_heading else ""
                self.message.content = f"{self.message.content}\n\n{heading}{listed}"
            if self._started:
                await self.message.update()  # type: ignore[no-untyped-call]
            else:
                await self.message.send()  # type: ignore[no-untyped-call]

    async def send_events(self, events: Any) -> None:
        """Shows every event of an (async or sync) iterable of events."""
        if hasattr(events, "__aiter__"):
            async for ev in events:
                await self.send_event(ev)
        else:
            for ev in events:
                await self.send_event(ev)
