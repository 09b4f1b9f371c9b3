"use client";
// useChat with citeflow: the answer shows [1] [2] while it streams, each linked to its source in
// the list below (chapter and CFI for book passages). `?agent` asks the agent route (book
// search), `?model=NAME` picks the upstream's model.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useCiteflow } from "citeflow/react";
import { useEffect, useMemo, useState } from "react";

function Answer({ message }: { message: UIMessage }) {
  const { segments, sources } = useCiteflow(message);
  return (
    <div className="answer">
      <p className="answer-text">
        {segments.map((s, i) =>
          s.type === "text" ? (
            <span key={i}>{s.text}</span>
          ) : (
            <a key={i} className="cite" href={`#source-${s.number}`} data-number={s.number} data-source-id={s.source.id} title={s.source.title}>
              [{s.number}]
            </a>
          ),
        )}
      </p>
      {sources.length > 0 && (
        <ol className="sources">
          {sources.map((s) => (
            <li key={s.number} id={`source-${s.number}`} value={s.number} data-source-id={s.id}>
              {s.url && !s.url.startsWith("book:") ? <a href={s.url}>{s.title ?? s.url}</a> : <span>{s.title ?? s.id}</span>}
              {s.chapterTitle && !(s.title ?? "").endsWith(s.chapterTitle) && <span className="chapter"> — {s.chapterTitle}</span>}
              {s.cfi && <code className="cfi"> {s.cfi}</code>}
              {s.quote && <blockquote>{s.quote}</blockquote>}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

function Chat({ agent, model }: { agent: boolean; model?: string }) {
  const transport = useMemo(
    () => new DefaultChatTransport({ api: agent ? "/api/agent" : "/api/chat", body: { model } }),
    [agent, model],
  );
  const { messages, sendMessage, status } = useChat({ transport });
  const [input, setInput] = useState(agent ? "Who does Alice follow down the rabbit hole?" : "Tell me about Paris.");
  return (
    <main>
      <h1>citeflow + AI SDK {agent ? "(agent: book search)" : "(chat)"}</h1>
      {messages.map((m) =>
        m.role === "user" ? (
          <p key={m.id} className="question">
            <b>You:</b> {m.parts.map((p) => (p.type === "text" ? p.text : "")).join("")}
          </p>
        ) : (
          <Answer key={m.id} message={m} />
        ),
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          sendMessage({ text: input });
        }}
      >
        <input value={input} onChange={(e) => setInput(e.target.value)} style={{ width: "70%" }} />
        <button type="submit" disabled={status === "streaming" || status === "submitted"}>
          Ask
        </button>
        <span className="status" data-status={status}> {status}</span>
      </form>
    </main>
  );
}

export default function Page() {
  // The query string is read in the browser (the page is prerendered without it).
  const [params, setParams] = useState<URLSearchParams | null>(null);
  useEffect(() => setParams(new URLSearchParams(window.location.search)), []);
  if (!params) return null;
  return <Chat agent={params.has("agent")} model={params.get("model") ?? undefined} />;
}
