#!/usr/bin/env bash
# A curl session against `citeflow serve`: the same requests an app sends, with citeflow's
# `sources` extension. Start the proxy first, e.g.
#   citeflow serve --upstream https://api.openai.com/v1 --upstream-api-key "$OPENAI_API_KEY" \
#     --anthropic-upstream https://api.anthropic.com/v1 --api-key sk-mine
# then: CITEFLOW_URL=http://127.0.0.1:8080 CITEFLOW_KEY=sk-mine bash examples/curl.sh
# Model names come from CITEFLOW_MODEL_CHAT, CITEFLOW_MODEL_RESPONSES, CITEFLOW_MODEL_MESSAGES.
set -euo pipefail
URL="${CITEFLOW_URL:-http://127.0.0.1:8080}"
KEY="${CITEFLOW_KEY:-sk-mine}"
CHAT="${CITEFLOW_MODEL_CHAT:-gpt-4.1-mini}"
RESPONSES="${CITEFLOW_MODEL_RESPONSES:-gpt-5-mini}"
MESSAGES="${CITEFLOW_MODEL_MESSAGES:-claude-sonnet-4-5}"

echo "# 1. Chat Completions, streamed: the model's [[source_7]] becomes [1]; the chunks carry"
echo "#    delta.annotations (url_citation) and, at the end, citeflow's done event with the list."
curl -sN "$URL/v1/chat/completions" -H "authorization: Bearer $KEY" \
  -H 'content-type: application/json' -d @- <<JSON
{"model": "$CHAT", "stream": true,
 "messages": [{"role": "user", "content": "Tell me about Paris."}],
 "sources": [
   {"id": "source_3", "title": "The Seine", "url": "https://en.wikipedia.org/wiki/Seine"},
   {"id": "source_7", "title": "Paris", "url": "https://en.wikipedia.org/wiki/Paris"}]}
JSON

echo
echo "# 2. Responses, not streamed: the provider's url_citation annotations, numbered."
curl -s "$URL/v1/responses" -H "authorization: Bearer $KEY" \
  -H 'content-type: application/json' \
  -d "{\"model\": \"$RESPONSES\", \"input\": \"Tech news today?\", \"tools\": [{\"type\": \"web_search\"}]}"
echo

echo
echo "# 3. Anthropic Messages, not streamed (x-api-key and anthropic-version, as the SDK sends)."
curl -s "$URL/v1/messages" -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' \
  -H 'content-type: application/json' \
  -d "{\"model\": \"$MESSAGES\", \"max_tokens\": 1024, \"messages\": [{\"role\": \"user\", \"content\": \"Tech news today?\"}], \"tools\": [{\"type\": \"web_search_20250305\", \"name\": \"web_search\"}]}"
echo

echo
echo "# 4. Everything else under /v1 goes to the upstream as it is."
curl -s "$URL/v1/models" -H "authorization: Bearer $KEY"
echo
