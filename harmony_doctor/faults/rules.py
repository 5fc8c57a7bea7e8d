"""The diagnosis catalogue: one stable code per diagnosis, with its cause and fix.

Codes never change meaning once shipped. HD1xx are errors (openai-harmony's, then from HD171
those only logs show: loading, rendering, other engines' Harmony parsers), HD2xx are warnings
nothing raised. Kinds are the coarse classes of the JSON contract; a kind may have several
codes when the causes (and so the fixes) differ. Each kind has one catch-all rule, marked
`catch_all` (`default_rule`): what a failure of the kind gets when no evidence names another.
"""

from __future__ import annotations

from harmony_doctor.faults.rule import Rule as Rule  # re-exported: readers take it here
from harmony_doctor.faults.warning_rules import WARNING_RULES
from harmony_doctor.models import Kind

_RULES = (
    Rule(
        "HD101",
        "header_leftover",
        "error",
        "Prose where a message header belongs",
        "The model wrote text (reasoning or a refusal) without opening the message with "
        "<|channel|>NAME<|message|>; harmony only notices when a later <|message|> arrives. "
        "Frequent with gpt-oss-120b refusals and long multi-turn or agentic contexts.",
        "Retry the request or parse with strict=False (openai-harmony >= 0.0.5); check that "
        "earlier assistant turns are rendered with their channel so the model keeps the format.",
        ("openai/harmony#38", "openai/harmony#80", "openai/harmony#82"),
    ),
    Rule(
        "HD102",
        "header_leftover",
        "error",
        "Recipient written twice in one header",
        "The model repeated ` to=RECIPIENT` (in the role part and after the channel, or twice "
        "after it); harmony keeps the last one and rejects the rest.",
        "Upgrade to a vLLM with the duplicate-recipient fix, or retry; guided decoding with a "
        "Harmony grammar (`harmony-doctor grammar`) prevents it.",
        ("vllm-project/vllm#51977", "vllm-project/vllm#52055"),
    ),
    Rule(
        "HD103",
        "header_leftover",
        "error",
        "Channel marker written twice in one header",
        "The model emitted <|channel|> again inside the header.",
        "Retry; an openai-harmony with duplicate-channel stripping tolerates it.",
        ("openai/harmony#97",),
    ),
    Rule(
        "HD104",
        "header_leftover",
        "error",
        "Extra words after the content type",
        "Text followed the content type (for example `<|constrain|>response` when tools are "
        "used but none declared), so harmony had words left over.",
        "Declare the tools the model is expected to call, or retry with a grammar.",
        ("vllm-project/vllm#45571",),
    ),
    Rule(
        "HD105",
        "header_leftover",
        "error",
        "Prompt or non-model text fed to the parser as a header",
        "The header holds prompt token ids or other text the model did not generate: the "
        "server passed the wrong tokens to the completion parser.",
        "This is an integration bug in the server; upgrade it (lmdeploy PR #3962).",
        ("InternLM/lmdeploy#3962", "openai/harmony#33"),
    ),
    Rule(
        "HD107",
        "header_leftover",
        "error",
        "The header swallowed the end of one message and the start of the next",
        "In strict mode openai-harmony adds every token before <|message|> to the header, stop "
        "tokens and <|start|> included. The model ended a message (or never opened one) without "
        "<|message|>, so `<|end|><|start|>assistant` of the next message landed in this header. "
        "Usually prose or a refusal written where the header belongs.",
        "Parse with strict=False (openai-harmony >= 0.0.5) so a stop token before <|message|> "
        "closes the message; retry the request; guided decoding with a Harmony grammar "
        "(`harmony-doctor grammar`) prevents it.",
        ("openai/harmony#80", "openai/harmony#82"),
    ),
    Rule(
        "HD108",
        "header_leftover",
        "error",
        "Stray or garbled text next to the channel name",
        "The header holds extra text around the channel (dashes glued to `commentary`, "
        "`commentary?`, a channel name written twice): openai-harmony cut out the channel and "
        "could not place the rest as recipient or content type.",
        "Retry; guided decoding with a Harmony grammar keeps the channel to analysis, "
        "commentary or final. Lower temperatures make it rarer.",
        ("openai/harmony#38", "ggml-org/llama.cpp#27720"),
    ),
    Rule(
        "HD106",
        "header_leftover",
        "error",
        "Unexpected words left in the message header",
        "The header held words harmony could not place as role, channel, recipient or "
        "content type.",
        "Look at the annotated header: the origin marks the first word that left the format.",
        catch_all=True,
    ),
    Rule(
        "HD111",
        "unexpected_token",
        "error",
        "<|return|> after <|end|>: generation ran past the end",
        "After <|end|> the parser needs <|start|>, but the model ended with <|return|>. Seen "
        "with requests that set ignore_eos (benchmarks, lm-eval, GuideLLM) or stop tokens "
        "that miss <|end|>.",
        "Do not send ignore_eos to gpt-oss, or use a vLLM with the fix (PR #56216).",
        ("vllm-project/vllm#50690", "vllm-project/vllm#56216"),
    ),
    Rule(
        "HD112",
        "unexpected_token",
        "error",
        "Text after <|call|>: the call stop token was not a stop token",
        "The model finished a tool call with <|call|> and kept generating (`comment`+`ary` is "
        "typical). Early gpt-oss generation_config.json files lacked <|call|> as a stop token.",
        "Update the model files and use vLLM >= 0.10.2 with --tool-call-parser openai "
        "--enable-auto-tool-choice.",
        ("vllm-project/vllm#22519", "vllm-project/vllm#22386"),
    ),
    Rule(
        "HD113",
        "unexpected_token",
        "error",
        "A second stop token where <|start|> was expected",
        "Two stop tokens in a row (<|end|><|end|>, <|end|><|call|>): the server kept "
        "generating after a stop token.",
        "Check the stop-token configuration (ignore_eos, custom stop lists).",
        ("vllm-project/vllm#22519",),
    ),
    Rule(
        "HD115",
        "unexpected_token",
        "error",
        "A header word written as text where <|start|> belongs",
        "After a message ended the model wrote the next header as ordinary text (the word "
        "`assistant`, or `<` of a spelled-out `<|start|>`) instead of the special token. Seen "
        "with some quantized checkpoints under long system prompts, where other quantizations "
        "of the same weights pass.",
        "Try another quantization of the model; shorten the system prompt; retry. Parsing "
        "cannot recover it: the special token is missing from the output.",
        ("unslothai/unsloth#5162",),
    ),
    Rule(
        "HD116",
        "unexpected_token",
        "error",
        "A header token where <|start|> belongs",
        "After a message ended the next token was a header's own special token, not text: "
        "<|constrain|> (200003, the content-type marker of a tool call, `<|constrain|>json`), "
        "<|channel|> or <|message|>. The model went on with a header without opening a message "
        "with <|start|>assistant, typically a tool call written straight after <|call|> or "
        "<|end|> when the stop token did not end the generation, or a server that drops the "
        "<|start|> it prefills between messages.",
        "Check that <|call|> and <|return|> end the generation (stop tokens, ignore_eos) and "
        "that the server keeps <|start|>assistant between messages; retry. Guided decoding "
        "with a Harmony grammar (`harmony-doctor grammar`) prevents it.",
    ),
    Rule(
        "HD114",
        "unexpected_token",
        "error",
        "Text where a new message should start",
        "After a message ended the model wrote ordinary text instead of <|start|>.",
        "Retry; if it repeats, check the stop tokens and the rendered prompt.",
        catch_all=True,
    ),
    Rule(
        "HD121",
        "unknown_role",
        "error",
        "Role or <|start|> written twice",
        "The header reads like `<|start|>assistant` or `assistantassistant`: the prompt "
        "already ended in `<|start|>assistant` and the model (or the template) wrote it again.",
        "A prompt-rendering bug in multi-turn chats; upgrade the server (vLLM PRs #28729, "
        "#45048) or render the prompt with openai-harmony.",
        ("exo-explore/exo#1126", "tenstorrent/vllm#386"),
    ),
    Rule(
        "HD122",
        "unknown_role",
        "error",
        "Unknown role in a message header",
        "A message header started with a word that is no Harmony role and has no recipient.",
        "Check the rendered prompt; with --role none the stream must start with <|start|>.",
        catch_all=True,
    ),
    Rule(
        "HD131",
        "empty_channel",
        "error",
        "<|channel|> without a channel name",
        "The model wrote <|channel|> and then whitespace or another special token.",
        "Retry; guided decoding with a Harmony grammar prevents it.",
        ("tenstorrent/vllm#386",),
        catch_all=True,
    ),
    Rule(
        "HD142",
        "header_eos",
        "error",
        "A stop token inside a message header: a message closed without <|message|>",
        "The model wrote a header and text (`<|channel|>commentary Hello<|end|>`) and closed "
        "it with a stop token without ever writing <|message|>. In strict mode openai-harmony "
        "keeps the stop token as header text and waits for <|message|> until the stream ends; "
        "raising max_tokens does not help.",
        "Parse with strict=False (openai-harmony >= 0.0.5): a stop token before <|message|> "
        "then closes the message and its text is kept; retry; guided decoding with a Harmony "
        "grammar (`harmony-doctor grammar`) prevents it.",
        ("openai/harmony#80", "openai/harmony#82", "vllm-project/vllm#45736"),
    ),
    Rule(
        "HD143",
        "header_eos",
        "error",
        "A prompt fed in as a completion",
        "The stream ends in `<|start|>assistant`: that is how a rendered prompt ends, where the "
        "model's completion begins. The tokens handed to the completion parser were the prompt "
        "(or prompt and completion), not what the model generated.",
        "Parse only the generated ids (vLLM logs them as output_token_ids); to check a prompt or "
        "a partial stream, use `--open` (no end-of-stream check) or --role none.",
        ("openai/harmony#33",),
    ),
    Rule(
        "HD141",
        "header_eos",
        "error",
        "The stream ended inside a message header",
        "Generation stopped before <|message|>: max_tokens too small, or the stream was cut.",
        "Raise max_tokens; if the log cut the token list, raise --max-log-len.",
        catch_all=True,
    ),
    Rule(
        "HD151",
        "missing_role",
        "error",
        "Empty message header",
        "<|start|> was followed directly by <|message|>.",
        "Check the prompt renderer; the model rarely does this on its own.",
        catch_all=True,
    ),
    Rule(
        "HD161",
        "header_decode",
        "error",
        "Header bytes are not valid UTF-8",
        "The header tokens decode to a broken UTF-8 sequence (often a degenerate generation).",
        "Retry; check speculative decoding settings if it repeats.",
        ("vllm-project/vllm#37295",),
        catch_all=True,
    ),
    Rule(
        "HD171",
        "vocab_load",
        "error",
        "openai-harmony could not download or load its vocabulary",
        "load_harmony_encoding needs the o200k_base.tiktoken file. Unless TIKTOKEN_ENCODINGS_BASE "
        "names a folder holding it, openai-harmony downloads it at start-up, which fails on "
        "offline or firewalled machines, behind proxies, or with a corrupt cache.",
        "Put o200k_base.tiktoken in a folder and set TIKTOKEN_ENCODINGS_BASE to that folder "
        "before the server starts (TIKTOKEN_RS_CACHE_DIR moves the download cache); "
        "harmony-doctor ships a verified copy in harmony_doctor/data/.",
        ("openai/harmony#46", "openai/harmony#95", "openai/harmony#101"),
        catch_all=True,
    ),
    Rule(
        "HD175",
        "render_error",
        "error",
        "The conversation could not be rendered into a prompt",
        "openai-harmony refused the conversation the server built from the request, before "
        "anything was generated (`invalid conversation JSON`): a message, content part or tool "
        "definition has a shape it does not accept, such as content that is neither a string "
        "nor a list of text parts, an unknown role, or a tool schema that is not valid JSON.",
        "Check the request's messages and tools against the chat API (`harmony-doctor render` "
        "shows how a request renders); upgrade the server if a valid request fails.",
        catch_all=True,
    ),
    Rule(
        "HD176",
        "recovered_raw_output",
        "error",
        "The server's Harmony parser failed and it returned the raw output",
        "openai-harmony ended in a non-terminal state (typically a header that never got "
        "<|message|>, or a stop token inside a header) and the server caught the error: the "
        "client got the unparsed text of the last message as content instead of parsed "
        "messages, with no error status. Servers that catch it log a warning: current vLLM "
        "(PRs #47062, #47379), TensorRT-LLM (`Harmony parsing fell back to raw text "
        "decoding`).",
        "Count it as a failure: the reply holds raw Harmony text. Log the output token ids "
        "(vLLM: --enable-log-outputs at DEBUG; other servers: their debug log of generated "
        "ids) and run `harmony-doctor explain` on them to see which header broke; retry, or "
        "use guided decoding with a Harmony grammar.",
        ("vllm-project/vllm#45736", "vllm-project/vllm#47062", "vllm-project/vllm#47379"),
        catch_all=True,
    ),
    # --- Engines' own Harmony failures, as pasted in their bug threads (issue 20) ---
    Rule(
        "HD187",
        "server_rejected",
        "error",
        "The server expected exactly an analysis and a final message",
        "vLLM 0.10.1's chat completions (parse_chat_output, which SGLang's carries a copy of) "
        "took gpt-oss output to be one "
        "reasoning and one final message and raised when the model wrote more: several analysis "
        "or commentary messages, or a tool-like commentary message with no tools declared. The "
        "output itself may be well-formed Harmony: this is the server's check refusing it, not "
        "the model leaving the format, so the request fails with HTTP 400 or 500 at random.",
        "Upgrade the server (vLLM's later parse_chat_output joins every message before the "
        "last as reasoning); meanwhile use the Responses API, or declare the tools the model "
        "calls.",
        ("vllm-project/vllm#22403", "openai/openai-cookbook#2063"),
    ),
    Rule(
        "HD193",
        "server_rejected",
        "error",
        "vLLM found no route for a message's channel (Responses API)",
        "vLLM's Responses API maps each Harmony message to an output item by its channel and "
        "raised on a channel it has no mapping for. `None` is a message without a channel, "
        "typically one vLLM built itself from the request's input items (reasoning items or "
        "assistant messages a client such as Codex passes back on the next turn): the server's "
        "conversion, not the model leaving the format.",
        "Upgrade vLLM (later releases give reasoning items the analysis channel and assistant "
        "messages the final channel); meanwhile drop earlier reasoning items from the input, "
        "or use chat completions.",
        ("vllm-project/vllm#32156",),
    ),
    Rule(
        "HD188",
        "template_content",
        "error",
        "An assistant tool-call turn sent back with both content and thinking",
        "The client sent an earlier assistant message that carries tool calls with both "
        "`content` and `thinking` (or reasoning_content). The gpt-oss chat template has one "
        "place for the analysis text of a tool-call turn and refuses the request before "
        "anything is generated (Jinja raise_exception, HTTP 500).",
        "Send the reasoning of a tool-call turn in one field only (thinking or "
        "reasoning_content) and leave content empty; upgrade llama.cpp (PR #16934 accepts "
        "reasoning_content back).",
        ("ggml-org/llama.cpp#17040", "ggml-org/llama.cpp#16934"),
    ),
    Rule(
        "HD189",
        "input_parse",
        "error",
        "llama.cpp's parser left part of the output unread",
        "llama.cpp's chat parser reached its end with text left over. For gpt-oss with tools "
        "(builds around b6100-b6150) its Harmony parser did not consume the closing <|end|>, so "
        "a well-formed answer failed; an uncaught one aborts the server (`terminate called ... "
        "what(): Unexpected content at end of input`).",
        "Upgrade llama.cpp (the Harmony parser rewrite, PR #15181); meanwhile call without "
        "tools or with --reasoning-format none.",
        ("ggml-org/llama.cpp#15170", "ggml-org/llama.cpp#15181", "ggml-org/llama.cpp#15195"),
    ),
    Rule(
        "HD190",
        "server_rejected",
        "error",
        "SGLang cannot build a tool-call constraint for gpt-oss",
        "With tools (and strict tools or streaming) SGLang asks the gpt-oss tool-call detector "
        "for a structural tag, which its Harmony parser does not provide: the request fails "
        "with HTTP 500 before generation. The model is not at fault.",
        "Upgrade SGLang (PR #19074 turns the structural tag off for gpt-oss); meanwhile drop "
        "`strict` from the tool definitions or the tool_choice that asks for a constraint.",
        ("sgl-project/sglang#19074",),
    ),
    Rule(
        "HD191",
        "tool_call_parse",
        "error",
        "The provider could not parse the tool call's arguments as JSON",
        "A hosted provider (Groq's `tool_use_failed`) parsed gpt-oss's tool call itself and "
        "its arguments were not JSON: typically code or text written straight after the "
        "`to=functions.NAME` header. The provider answers HTTP 400 and returns what the model "
        "wrote as `failed_generation`.",
        "Read failed_generation; describe the tool's parameters so the model writes JSON (a "
        "code tool with one `code` string parameter); retry, the failure is sampled.",
        ("OpenHands/OpenHands#10187",),
    ),
    Rule(
        "HD192",
        "tool_call_parse",
        "error",
        "llama.cpp could not parse the tool call's arguments",
        "llama.cpp found a gpt-oss tool call and its arguments did not decode as JSON "
        '(nlohmann::json parse_error): JSON encoded twice (`"{"...`), cut short, or text '
        "instead of an object.",
        "Read `last read:` to see where the arguments broke; check that the client sends tool "
        "results and earlier calls back as JSON objects, not strings; upgrade llama.cpp.",
        ("continuedev/continue#7491",),
    ),
    Rule(
        "HD207",
        "tool_call_parse",
        "warning",
        "The model called a tool the request did not declare",
        "Ollama's Harmony parser found a tool call to a function name that is not among the "
        "request's tools, and passed the name through unmapped. Typical of clients that "
        "describe their own tools in the system prompt (XML conventions) instead of sending "
        "native tools: gpt-oss still calls them the Harmony way.",
        "Send the tools as native tool definitions, or tell the model not to use Harmony tool "
        "calls; the client must handle a call it did not declare.",
        ("ollama/ollama#11991",),
    ),
    # --- end of issue 20's rules ---
    # --- What an error says in the grammar's terms, whoever wrote it (issue 33) ---
    Rule(
        "HD180",
        "tool_call_parse",
        "error",
        "The server could not parse the tool call the model wrote",
        "A server's Harmony parser could not read what followed a `to=functions.NAME` header "
        "as its arguments: cut by the token limit, text instead of JSON, JSON encoded twice, "
        "or a second message glued on (said in the grammar's terms, no engine's own words).",
        "Read the raw text the error quotes; raise the token limit if it was cut; describe the "
        "tool's parameters so the model writes JSON; retry; upgrade the server.",
    ),
    Rule(
        "HD186",
        "input_parse",
        "error",
        "The server's parser could not read the model output as Harmony",
        "A server parsing the decoded text met something its Harmony grammar does not accept, "
        "or text left over: a junk channel, text between messages, a header without "
        "<|message|>, a stop token it did not consume; often HTTP 500 (said in the grammar's "
        "terms, no engine's own words).",
        "Upgrade the server; run it with the model's own chat template; retry; run "
        "`harmony-doctor explain` on the raw output's token ids.",
    ),
    Rule(
        "HD194",
        "server_rejected",
        "error",
        "The server's own check refused a message it parsed",
        "openai-harmony parsed the output, then the server's mapping of messages to its API "
        "found no route for one: no recipient (a commentary preamble), an unmapped channel, "
        "more messages than it expects, a feature not implemented for Harmony. A server "
        "check, not the model leaving the format.",
        "Upgrade the server; meanwhile retry, use the other endpoint, or drop the request "
        "option the check refuses.",
    ),
    Rule(
        "HD181",
        "tool_call_parse",
        "error",
        "Ollama could not parse the tool call the model wrote",
        "Ollama's Harmony parser took the text after a `to=functions.NAME` header as the tool's "
        "JSON arguments and it did not parse (cut by the token limit, prose, or a second "
        "message glued on). Ollama answers HTTP 500 and logs the text as raw='...'; the client "
        "is often blamed for it.",
        "Read raw= to see what the model wrote; raise num_predict if it was cut; retry; upgrade "
        "Ollama (a fix returning the text instead of a 500 is proposed).",
        ("ollama/ollama#17638", "ollama/ollama#17642"),
    ),
    Rule(
        "HD182",
        "tool_call_parse",
        "error",
        "LM Studio could not parse the tool call the model wrote",
        "LM Studio did not find a well-formed Harmony tool call in the output it prints after "
        "`Model Output:`: a missing <|call|>, a header without a recipient, or arguments cut "
        "by the context length or token limit.",
        "Read the Model Output line; raise the token limit or context length if it was cut; "
        "update LM Studio and the model's chat template; retry.",
        catch_all=True,
    ),
    Rule(
        "HD183",
        "input_parse",
        "error",
        "llama.cpp could not parse the model output as Harmony",
        "llama.cpp parses the decoded text, not tokens; at the reported character position it "
        "met something its Harmony grammar does not accept (a junk channel, text between "
        "messages, a header without <|message|>). Non-streaming requests then fail with "
        "HTTP 500.",
        "Upgrade llama.cpp (newer parsers accept more variants); run llama-server with --jinja "
        "and the model's own template; retry, or use --skip-chat-parsing to get the raw text.",
        ("ggml-org/llama.cpp#25321", "ggml-org/llama.cpp#27720"),
        catch_all=True,
    ),
    Rule(
        "HD184",
        "template_content",
        "error",
        "Harmony markup sent back inside a message's content",
        "The request passed an assistant message whose content still holds "
        "`<|channel|>...<|message|>` markup, typically a client that stored the raw model "
        "output and sent it back next turn. The gpt-oss chat template refuses it.",
        "Send earlier assistant turns with the reasoning in `thinking` (or reasoning_content) "
        "and only the final answer in `content`; strip Harmony markup before storing a reply.",
        ("ggml-org/llama.cpp#15242",),
        catch_all=True,
    ),
    Rule(
        "HD185",
        "server_rejected",
        "error",
        "vLLM refused the message's recipient (Responses API)",
        "openai-harmony parsed the message, then vLLM's Responses API found no route for its "
        "recipient: `None` is a commentary preamble the model wrote before its tool calls "
        "(no recipient), `<|constrain|>functions.NAME` a content-type marker glued to the tool "
        "name. The request fails with HTTP 400 or 500 although the model's output was close "
        "to well-formed: a server check, not the model leaving the format.",
        "Upgrade vLLM (PR #29972 routes recipient-less preambles); meanwhile retry, or call "
        "the chat completions endpoint, which does not run this check.",
        ("vllm-project/vllm#24170", "vllm-project/vllm#29972", "vllm-project/vllm#25003"),
        catch_all=True,
    ),
    *WARNING_RULES,  # HD2xx: faults/warning_rules.py
    Rule(
        "HD177",
        "rejected_ids",
        "error",
        "A logged completion holds token ids openai-harmony rejects",
        "The output_token_ids a server logged hold a value no Harmony token has (999999999, "
        "-5, 1.5): the log was corrupted, cut mid-number, or written by something else. The "
        "completion cannot be replayed, and it is not clean: counted as a failure of the log, "
        "never as silence.",
        "Look at the log line: a cut or garbled line points at the log pipeline (rotation, a "
        "shipper's line limit, mixed writers); get the completion's ids again from the server "
        "or the client and run `harmony-doctor explain` on them.",
        (),
        catch_all=True,
    ),
    Rule(
        "HD178",
        "render_error",
        "error",
        "Ollama's gpt-oss template could not render the request's tools",
        "Ollama renders gpt-oss prompts with a Go template that comes with the model. Templates "
        "pulled before the fix index each tool parameter's type (`index $prop.Type 0`), so a "
        "parameter whose schema has no single `type` (Optional/Union, anyOf, a nullable field "
        "from LangChain, an MCP server or an editor's tools) crashes the render: HTTP 500 "
        "before anything is generated, while other models on the same server work.",
        "Update Ollama and re-pull the model (`ollama pull gpt-oss:20b`: the template comes "
        "with the model, the weights are not downloaded again); until then give every tool "
        "parameter one plain `type`.",
        ("ollama/ollama#11800", "langchain-ai/langchain#35140", "zed-industries/zed#35694"),
    ),
    Rule(
        "HD179",
        "unknown_error",
        "error",
        "openai-harmony raised an error this catalogue does not know",
        "The log shows openai-harmony's HarmonyError in words no form here reads: a newer or "
        "patched openai-harmony, an error outside its parser (a tool without a name, special "
        "token text in a message), or a message the log cut short. Something failed: it is "
        "counted, never taken as clean.",
        "Read the message shown; where the server logs the completion's ids (vLLM's "
        "--enable-log-outputs), run `harmony-doctor explain` on them to see where the stream "
        "left the format; report the wording so a form can read it.",
        (),
        catch_all=True,
    ),
)

RULES: dict[str, Rule] = {r.code: r for r in _RULES}


def rules_for(kind: Kind) -> tuple[Rule, ...]:
    return tuple(r for r in _RULES if r.kind == kind)


def default_rule(kind: Kind) -> Rule:
    """The catch-all rule of a kind (the one marked so; tests check each kind has one)."""
    return _CATCH_ALL[kind]


_CATCH_ALL: dict[Kind, Rule] = {r.kind: r for r in _RULES if r.catch_all}
