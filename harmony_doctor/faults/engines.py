"""The Harmony failures engines write in their own words (vLLM, llama.cpp, SGLang, Ollama,
TensorRT-LLM, hosted providers), as their bug threads show them: entries of the one catalogue
(faults/catalogue.py takes them into FORMS, in this order, after openai-harmony's own forms)."""

from __future__ import annotations

from typing import Final

from harmony_doctor.faults import wording
from harmony_doctor.faults.form import Form, phrase

ENGINE_FORMS: Final[tuple[Form, ...]] = (
    Form(
        # vLLM's chat completions parse_chat_output (v0.10.1) took gpt-oss output to be one
        # analysis and one final message and refused anything else; SGLang's serving_chat
        # carries a copy of it, so the words alone name no server (a guess, after the lines).
        "vllm_two_messages",
        "server_rejected",
        "server",
        "vLLM 0.10.1 chat completions (harmony_utils.parse_chat_output)",
        ("Expected 2 output messages (reasoning and final), but got 3",),
        pattern=phrase("expected 2 output messages")
        + r"(?:\s*\(\s*reasoning\s*and\s*final\s*\))?\s*,?\s*"
        + phrase("but got")
        + r"(?=\s*\d)",
        canonical="Expected 2 output messages (reasoning and final), but got",
        anchors=(b"output messages",),
        keywords=("output",),
        code="HD187",
        guess="vllm",
        wording=wording.two_messages,
    ),
    Form(
        # The Responses API's output mapping meets a commentary message with no recipient: the
        # preamble gpt-oss writes before its tool calls (same cause as `Unknown recipient: None`).
        "vllm_preamble",
        "server_rejected",
        "server",
        "vLLM's Responses API (harmony_utils.py parse_output_message), late 2025",
        ("ValueError: Commentary channel message without recipient: Message(author=...)",),
        pattern=phrase("commentary channel message without recipient"),
        canonical="Commentary channel message without recipient",
        anchors=(b"without recipient",),
        keywords=("recipient",),
        code="HD185",
        server="vllm",
        wording=wording.server_rejected,
    ),
    Form(
        # The Responses API's output mapping meets a message whose channel it has no route
        # for: `None` when vLLM's own conversion of input items (reasoning items, assistant
        # messages passed back by the client) left the channel unset.
        "vllm_unknown_channel",
        "server_rejected",
        "server",
        "vLLM's Responses API (harmony_utils.py parse_output_message), late 2025 to early 2026",
        ("ValueError: Unknown channel: None",),
        # Only the channels a Harmony message can have; other programs write "Unknown channel".
        pattern=phrase("unknown channel:") + r"(?=\s*(?:None\b|'?(?:analysis|commentary|final)\b))",
        canonical="Unknown channel:",
        anchors=(b"nknown channel",),
        keywords=("channel",),
        code="HD193",
        server="vllm",
        wording=wording.server_rejected,
    ),
    Form(
        # llama.cpp's chat parser finished with text left over (a stop token its gpt-oss parser
        # did not consume when tools were on, builds ~b6100-b6150).
        "llamacpp_end_of_input",
        "input_parse",
        "server",
        "llama.cpp's chat parser (common_chat_msg_parser), Aug-Oct 2025 builds",
        (
            "terminate called after throwing an instance of 'std::runtime_error'  what():  "
            "Unexpected content at end of input",
        ),
        pattern=phrase("unexpected content at end of input"),
        canonical="Unexpected content at end of input",
        anchors=(b"end of input",),
        keywords=("content",),
        code="HD189",
        wording=wording.LLAMACPP_INPUT,
    ),
    Form(
        # llama.cpp's PEG chat parser (2026 builds) refused the whole output, and logs it.
        "llamacpp_peg",
        "input_parse",
        "server",
        "llama.cpp's PEG chat parser (2026 builds, e.g. b10488)",
        (
            "The model produced output that does not match the expected peg-native format",
            "common_chat_peg_parse: unparsed peg-native output: <|channel|>commentary??",
        ),
        # its head may be elided by whoever quotes it (`...expected peg-native format...`)
        pattern=r"(?:(?:the\s*model\s*produced\s*output\s*that\s*)?"
        + phrase("does not match")
        + r"\s*(?:the\s*)?|\.\.\.\s*)"
        + phrase("expected peg-native format")
        + "|"
        + phrase("unparsed peg-native output"),
        canonical="The model produced output that does not match the expected peg-native format",
        anchors=(b"peg-native",),
        keywords=("peg",),
        code="HD183",
        server="llama.cpp",
        wording=wording.LLAMACPP_INPUT,
    ),
    Form(
        # llama.cpp decodes a tool call's arguments with nlohmann::json.
        "llamacpp_arguments",
        "tool_call_parse",
        "server",
        "llama.cpp's chat parser (nlohmann::json errors), 2025",
        (
            "Failed to parse arguments: [json.exception.parse_error.101] parse error at line 1, "
            "column 6: syntax error while parsing object separator - invalid literal; last "
            "read: '\"{\"fi'; expected ':'",
        ),
        pattern=phrase("failed to parse arguments:") + r"(?=\s*\[json\.exception)",
        canonical="Failed to parse arguments:",
        anchors=(b"parse arguments",),
        keywords=("arguments",),
        code="HD192",
        server="llama.cpp",
        wording=wording.tool_call,
    ),
    Form(
        # The official gpt-oss chat template refuses a tool-call turn carrying both fields.
        "template_thinking",
        "template_content",
        "server",
        "the gpt-oss chat template (raise_exception), as llama.cpp and other Jinja servers run it",
        (
            "Cannot pass both content and thinking in an assistant message with tool calls! "
            "Put the analysis message in one or the other, but not both.",
        ),
        pattern=phrase("cannot pass both content and thinking"),
        canonical="Cannot pass both content and thinking",
        anchors=(b"content and thinking",),
        keywords=("thinking",),
        code="HD188",
        wording=wording.fixed(
            "a tool-call turn with its reasoning in one field",
            "an assistant message with tool calls and both content and thinking",
        ),
    ),
    Form(
        "sglang_structure_info",
        "server_rejected",
        "server",
        "SGLang's GptOssDetector (function_call/gpt_oss_detector.py), Jan 2026",
        ("NotImplementedError: structure_info not used with HarmonyParser",),
        pattern=phrase("structure_info not used with HarmonyParser"),
        canonical="structure_info not used with HarmonyParser",
        anchors=(b"structure_info",),
        keywords=("structure_info",),
        code="HD190",
        server="sglang",
        wording=wording.fixed(
            "a request SGLang can constrain for gpt-oss",
            "tools that ask for a structural tag, which the gpt-oss detector cannot build",
        ),
    ),
    Form(
        # Hosted providers (Groq) parse the tool call themselves and return the raw text in
        # `failed_generation`; no wording names the provider, so only evidence does.
        "provider_tool_args",
        "tool_call_parse",
        "server",
        "hosted providers' tool-call parsing (Groq `tool_use_failed`), 2025",
        (
            '{"error":{"message":"Failed to parse tool call arguments as JSON","type":'
            '"invalid_request_error","code":"tool_use_failed","failed_generation":"import csv"}}',
        ),
        pattern=phrase("failed to parse tool call arguments as JSON"),
        canonical="Failed to parse tool call arguments as JSON",
        anchors=(b"arguments as JSON",),
        keywords=("tool",),
        code="HD191",
        wording=wording.provider_tool_args,
    ),
    Form(
        # Ollama's gpt-oss template (as pulled before early 2026) indexed each tool parameter's
        # type list; a parameter with none (Optional/Union, anyOf) crashed the render.
        "ollama_template_tools",
        "render_error",
        "server",
        "Ollama's gpt-oss chat template (a Go template), as pulled with the model",
        (
            'template: :108:130: executing "" at <index $prop.Type 0>: error calling index: '
            "reflect: slice index out of range",
            # in a JSON error body, as a client prints it
            'executing \\"\\" at \\u003cindex $prop.Type 0\\u003e: error calling index',
        ),
        pattern=r"\$prop\.Type\s*0\s*(?:>|\\u003e)\s*:\s*error\s*calling\s*index",
        canonical='template: executing "" at <index $prop.Type 0>: error calling index',
        anchors=(b"$prop.Type",),
        keywords=("prop",),
        code="HD178",
        server="ollama",
        wording=wording.fixed(
            "a template that renders every tool parameter's type",
            "the template indexed a tool parameter's list of types and found it empty (an "
            "Optional/Union or anyOf parameter)",
        ),
    ),
    Form(
        "ollama_unmapped_tool",
        "tool_call_parse",
        "server",
        "Ollama's Harmony parser (harmonyparser.go), 0.11.5 and later (a WARN record)",
        (
            'msg="harmony parser: no reverse mapping found for function name" '
            "harmonyFunctionName=ask_followup_question",
        ),
        pattern=phrase("no reverse mapping found for function name"),
        canonical="harmony parser: no reverse mapping found for function name",
        anchors=(b"reverse mapping",),
        keywords=("mapping",),
        code="HD207",
        server="ollama",
        wording=wording.unmapped_tool,
    ),
    Form(
        # TensorRT-LLM's harmony_adapter.py logs it when openai-harmony failed and the raw
        # decoded text (special tokens included) was returned instead.
        "trtllm_raw_fallback",
        "recovered_raw_output",
        "server",
        "TensorRT-LLM's harmony adapter (harmony_adapter.py), 1.1-1.2",
        ("[TRT-LLM] [W] Harmony parsing fell back to raw text decoding",),
        pattern=r"(?:harmony\s*)?" + phrase("parsing fell back to raw text decoding"),
        canonical="Harmony parsing fell back to raw text decoding",
        anchors=(b"fell back to raw",),
        keywords=("raw",),
        code="HD176",
        server="tensorrt-llm",
        wording=wording.RAW_RETURNED,
    ),
)
